"""The benchmark's inputs: eight-question groups over documents of ContractNLI size.

ContractNLI is not shipped with the package, so the groups come from the linked-group generator
(validation split, held-out wording), keeping those with eight questions, and each document is
extended with generated boilerplate clauses (notices, assignment, insurance, ...) to about
10,000 characters, the size `decision_engine.latency` picks from ContractNLI. The questions stay
answerable from the original clauses; the added clauses make context choice and prefix length
what they are on a real contract.
"""

from __future__ import annotations

import random
from typing import Any

from ..datasets.linked_groups import generate_groups

TARGET_CHARS = 10_000  # ContractNLI-size documents
QUESTIONS = 8  # questions per group

_CLAUSES: tuple[tuple[str, str], ...] = (
    ("Notices", "Any notice under this agreement shall be in writing and delivered by hand, by courier or by "
     "email to the address last notified by the receiving party. A notice is deemed received {n} business "
     "days after dispatch, unless the sender receives a notice of non-delivery."),
    ("Assignment", "Neither party may assign, transfer or charge any of its rights under this agreement without "
     "the prior written consent of the other party, which shall not be unreasonably withheld or delayed for "
     "more than {n} days."),
    ("Severability", "If any provision of this agreement is held invalid or unenforceable, it shall be deemed "
     "modified to the minimum extent necessary to make it valid, and the remaining provisions shall continue "
     "in full force and effect."),
    ("Entire agreement", "This agreement constitutes the entire agreement between the parties on its subject "
     "matter and supersedes all prior drafts, understandings and arrangements, whether written or oral."),
    ("Counterparts", "This agreement may be executed in any number of counterparts, each of which is an "
     "original and all of which together constitute one instrument; electronic signatures are binding."),
    ("Force majeure", "Neither party is liable for a delay caused by events beyond its reasonable control. If "
     "such an event continues for more than {n} days, either party may end the affected obligations by notice."),
    ("Insurance", "Each party shall maintain, with reputable insurers, public liability cover of not less than "
     "{amount} for any one occurrence and shall produce evidence of that cover on request."),
    ("Records and audit", "Each party shall keep complete and accurate records relating to this agreement for "
     "{n} years after its end and shall allow the other party reasonable access to them on {m} days' notice."),
    ("Waiver", "A failure or delay by a party to exercise any right or remedy does not waive that right or "
     "remedy, and a single or partial exercise does not prevent any further exercise of it."),
    ("Third party rights", "A person who is not a party to this agreement has no right to enforce any of its "
     "terms, except a permitted successor of a party."),
    ("Variation", "No variation of this agreement is effective unless it is in writing, refers to this "
     "agreement and is signed by an authorised representative of each party."),
    ("Dispute resolution", "A dispute shall first be referred to the parties' senior representatives, who "
     "shall meet within {n} days. If it is not resolved within {m} days of that referral, either party may "
     "start proceedings."),
    ("Costs", "Each party shall bear its own costs in connection with the negotiation, preparation and "
     "performance of this agreement, save as expressly provided otherwise."),
    ("Announcements", "No party shall make any public announcement about this agreement without the prior "
     "written approval of the other, except as required by law or by a regulatory body."),
    ("Anti-bribery", "Each party shall comply with all applicable laws relating to anti-bribery and "
     "anti-corruption and shall report any request for an undue financial advantage within {n} days."),
    ("Data protection", "Each party shall process personal data received under this agreement only as "
     "permitted by applicable data protection law and shall notify the other of any breach within {h} hours."),
    ("Subcontracting", "A party may subcontract its obligations only with the written consent of the other "
     "party and remains responsible for the acts and omissions of its subcontractors."),
    ("Further assurance", "Each party shall, at its own cost, execute such documents and do such things as the "
     "other may reasonably require to give full effect to this agreement."),
)  # fmt: skip


def general_terms(rng: random.Random, chars: int) -> str:
    """At least `chars` characters of numbered boilerplate clauses, whole clauses only."""
    parts = ["SCHEDULE - GENERAL TERMS"]
    length, number = len(parts[0]), 0
    while length < chars:
        heading, text = rng.choice(_CLAUSES)
        number += 1
        amount = f"{rng.choice(('EUR ', 'GBP ', 'USD ', ''))}{rng.randrange(1, 20) * 500_000:,}"
        clause = f"G{number}. {heading}. " + text.format(
            n=rng.randrange(2, 90), m=rng.randrange(10, 120), h=rng.randrange(12, 96), amount=amount
        )
        parts.append(clause)
        length += len(clause) + 2
    return "\n\n".join(parts)


def extend_document(text: str, rng: random.Random, target_chars: int = TARGET_CHARS) -> str:
    """The document followed by generated general terms, to about `target_chars` characters."""
    if len(text) >= target_chars:
        return text
    return text + "\n\n" + general_terms(rng, target_chars - len(text) - 2)


def build_workload(groups: int, seed: int = 0, target_chars: int = TARGET_CHARS) -> list[dict[str, Any]]:
    """`groups` request lines (samples format), each with eight questions over a ~`target_chars` document;
    the same arguments give the same lines."""
    if groups < 1:
        raise ValueError(f"groups must be at least 1, got {groups}")
    chosen: list[dict[str, Any]] = []
    count = 4 * groups
    while len(chosen) < groups:
        chosen = [g for g in generate_groups("validation", count, seed) if len(g["questions"]) == QUESTIONS][:groups]
        count *= 2
    for line in chosen:
        rng = random.Random(f"bench:{seed}:{line['id']}")
        line["document"]["text"] = extend_document(line["document"]["text"], rng, target_chars)
    return chosen
