"""Non-disclosure agreement: effective and expiry dates, a disclosure incident, and return of information."""

from __future__ import annotations

import random

from .common import (
    BOOLEAN, DATE, Case, Domain, QuestionSpec, Wording, enum, integer, other_than, person, plus, random_date,
    two_companies,
)

QUESTIONS = {
    "nda_type": QuestionSpec(enum("mutual", "one-way"), (
        "Is this a mutual or a one-way non-disclosure agreement?",
        "Do both parties disclose under the agreement, or only one?",
        "Is the confidentiality agreement between {discloser} and {recipient} mutual or one-way?",
        "Is the NDA one-way (a single disclosing party) or mutual (both parties disclose)?",
    )),
    "effective_date": QuestionSpec(DATE, (
        "What is the Effective Date of the agreement?",
        "On what date did the agreement take effect?",
        "From which date is the NDA in force?",
        "When did the agreement become effective?",
    )),
    "expiry_date": QuestionSpec(DATE, (
        "On what date does the agreement's term end?",
        "When does the agreement expire?",
        "What is the last date of the NDA's term?",
        "The term of the agreement runs until which date?",
    )),
    "survival_years": QuestionSpec(integer(0, 100), (
        "For how many years after the term ends do the confidentiality duties survive?",
        "How many years do the obligations of confidence continue after expiry?",
        "After the NDA ends, for how many years must the information still be kept secret?",
        "How long, in years, do the confidentiality duties outlive the term of the agreement?",
    )),
    "consent_obtained": QuestionSpec(enum("yes", "no", "not mentioned"), (
        "Did the receiving party get the discloser's written consent before the disclosure in the incident?",
        "Was prior written consent obtained for the disclosure described in the file?",
        "Did {recipient} have {discloser}'s written consent before passing the information on?",
        "In advance of the incident disclosure, was the disclosing party's written consent obtained by the "
        "receiving party?",
    )),
    "disclosure_permitted": QuestionSpec(BOOLEAN, (
        "Was the disclosure described in the incident permitted by the agreement?",
        "Did the agreement allow {recipient}'s disclosure recorded in the file?",
        "Was {recipient} allowed to share the information in the way the file describes?",
        "Was the incident disclosure within what the agreement permits?",
    )),
    "return_deadline": QuestionSpec(DATE, (
        "By what date did the materials have to be returned or destroyed after the request?",
        "What was the deadline for returning the confidential materials?",
        "By which date did {recipient} have to hand back or destroy the information?",
        "What was the last day for returning or destroying the materials following the written request?",
    )),
    "returned_in_time": QuestionSpec(BOOLEAN, (
        "Were the materials returned or destroyed by the deadline?",
        "Did the receiving party meet the return deadline?",
        "Did {recipient} comply with the request to return the information on time?",
        "Was the return or destruction of the materials completed on or before the deadline?",
    )),
    "breach_occurred": QuestionSpec(enum("yes", "no"), (
        "On the facts in the file, was the agreement breached?",
        "Did {recipient} breach the NDA?",
        "Has {recipient} committed a breach of the agreement?",
        "Do the recorded facts show that the agreement was broken?",
    )),
}

# (who received the information, sentence fragment, allowed without consent)
RECIPIENTS = (
    ("employees", "two of its engineers who needed the data for the evaluation", True),
    ("advisers", "its outside lawyers, to review the evaluation terms", True),
    ("contractors", "a contract design firm working on the evaluation", False),
    ("investor", "a prospective investor", False),
    ("freelancer", "a freelance analyst", False),
)


def build(rng: random.Random, w: Wording) -> Case:
    discloser, recipient = two_companies(rng, ("Ltd", "plc", "BV"), ("Ltd", "GmbH", "AG"))
    mutual = rng.random() < 0.5
    first_sign = random_date(rng, 2015, 2030)
    second_sign = plus(first_sign, rng.randint(0, 25))
    while (second_sign.month, second_sign.day) == (2, 29):
        second_sign = plus(second_sign, 1)
    effective = second_sign
    term = rng.choice((1, 2, 3))
    expiry = effective.replace(year=effective.year + term)
    survival = rng.choice((2, 3, 5, 7))
    early_end = rng.choice((30, 60, 90))
    return_days = other_than(rng, (10, 14, 21, 30), early_end)
    has_exception = rng.random() < 0.5

    kind, shared_with, free = rng.choices(RECIPIENTS, weights=(2, 2, 3, 2, 2))[0]
    undertaking = kind == "contractors" and rng.random() < 0.6
    if free:
        consent = rng.choice(("no", "not mentioned"))
    else:
        consent = "yes" if rng.random() < 0.4 else "no"
    permitted = free or consent == "yes" or (kind == "contractors" and has_exception and undertaking)

    shared = plus(effective, rng.randint(20, 200))
    request = plus(shared, rng.randint(20, 300))
    deadline = plus(request, return_days)
    on_time = rng.random() < 0.6
    returned = plus(request, rng.randint(1, return_days) if on_time else return_days + rng.randint(1, 20))
    breach = "no" if permitted and on_time else "yes"

    signatory = person(rng)
    case = Case(
        title=w.pick("Non-disclosure agreement with incident file", "Confidentiality agreement and compliance notes",
                     "NDA terms and record of disclosures", "Non-disclosure contract and event log"),
        header=[("Disclosing party" if not mutual else "Party A", discloser),
                ("Receiving party" if not mutual else "Party B", recipient)],
        slots={"discloser": discloser, "recipient": recipient},
    )
    m, d = w.money, w.date
    if mutual:
        scope = w.pick(
            "Each party may disclose Confidential Information to the other and each may receive it.",
            "Both parties will share Confidential Information and both are bound as receivers.",
            "Disclosures run in both directions; whichever party receives information must protect it.",
            "Neither party is solely a discloser; both give and receive Confidential Information.",
        )
    else:
        scope = w.pick(
            f"Only {discloser} will disclose Confidential Information; {recipient} receives it.",
            f"{discloser} is the sole disclosing party and {recipient} the sole receiving party.",
            f"Information flows one way, from {discloser} to {recipient}.",
            f"Confidential Information is disclosed solely by {discloser} and received by {recipient}.",
        )
    case.clauses.append((w.pick("Parties", "Scope", "Direction", "Who discloses"), scope))
    case.clauses.append((w.pick("Term", "Duration", "Effect", "Period"), w.pick(
        f"This Agreement takes effect on the date the second party signs it and ends on the {term}-year "
        f"anniversary of that date. Confidentiality duties survive for {survival} years after it ends.",
        f"The Effective Date is the later of the two signature dates. The term runs {term} year(s) from the "
        f"Effective Date, to the same calendar day; the duty of confidence lasts {survival} years beyond that.",
        f"The NDA starts once both parties have signed (on the later signature date) and lasts {term} year(s), "
        f"ending on the same day and month; secrecy obligations continue {survival} years after the end.",
        f"Commencement: the date of the second signature. Expiry: the {term}-year anniversary of commencement. "
        f"Confidence obligations last {survival} years post-expiry.",
    )))
    use = w.pick(
        "The receiving party may share information without consent only with its employees and professional "
        "advisers who need it; anyone else needs the discloser's prior written consent.",
        "Employees and professional advisers with a need to know may receive the information freely. Every "
        "other recipient requires prior written consent from the disclosing party.",
        "Without written consent given in advance, information may go to nobody except the receiver's own "
        "staff and professional advisers who need it.",
        "The discloser's prior written consent is required before the receiving party discloses information to "
        "anyone other than its employees and professional advisers who need it.",
    )
    if has_exception:
        use += " " + w.pick(
            "Contractors who have signed a written confidentiality undertaking may also receive it without consent.",
            "However, no consent is needed for a contractor that has signed a confidentiality undertaking.",
            "As an exception, a contractor bound by a signed confidentiality undertaking counts as permitted.",
            "A contractor needs no consent either, if it has signed a written confidentiality undertaking.",
        )
    case.clauses.append((w.pick("Use and disclosure", "Permitted recipients", "Sharing", "Onward disclosure"), use))
    case.clauses.append((w.pick("Return", "Return of materials", "Destruction", "Materials"), w.pick(
        f"Within {return_days} days of a written request, the receiving party shall return or destroy all "
        f"Confidential Information.",
        f"On written request, all materials must be returned or destroyed no later than {return_days} days "
        f"after the request.",
        f"A receiver asked in writing to give materials back has {return_days} days to return or destroy them.",
        f"Once requested in writing, the receiving party is to return or destroy all Confidential Information "
        f"inside {return_days} days.",
    )))
    case.extra_clauses.append((w.pick("Early termination", "Ending early", "Termination", "Break right"), w.pick(
        f"Either party may end this Agreement early by {early_end} days' written notice.",
        f"A party may terminate before expiry on {early_end} days' notice in writing.",
        f"Early termination requires {early_end} days' written notice from either side.",
        f"Each party can cut the term short with {early_end} days' written notice.",
    )))

    case.events.append((first_sign, w.pick(
        f"{d(first_sign)}: signed by {discloser}.",
        f"On {d(first_sign)} {discloser} signed the Agreement.",
        f"Signature of {discloser} dated {d(first_sign)}.",
        f"{discloser} executed the Agreement on {d(first_sign)}.",
    )))
    case.events.append((second_sign, w.pick(
        f"{d(second_sign)}: signed by {recipient}.",
        f"On {d(second_sign)} {recipient} signed.",
        f"Signature of {recipient} dated {d(second_sign)}.",
        f"{recipient} added its signature on {d(second_sign)}.",
    )))
    shared_text = w.pick(
        f"{d(shared)}: {recipient} sent the evaluation data to {shared_with}.",
        f"On {d(shared)} {recipient} passed the information to {shared_with}.",
        f"Disclosure by {recipient} to {shared_with} on {d(shared)}.",
        f"{recipient} disclosed the evaluation data on {d(shared)} to {shared_with}.",
    )
    if kind == "contractors":
        shared_text += " " + ("The firm had signed a confidentiality undertaking." if undertaking
                              else "The firm had not signed any confidentiality undertaking.")
    if consent == "yes":
        shared_text += f" {discloser}'s director had approved this in writing beforehand."
    elif consent == "no":
        shared_text += f" {discloser} was not asked for consent."
    case.events.append((shared, shared_text))
    case.events.append((request, w.pick(
        f"{d(request)}: {discloser} asked in writing for all materials to be returned.",
        f"On {d(request)} {discloser} sent a written request for return of its information.",
        f"Written return request from {discloser} dated {d(request)}.",
        f"{discloser} demanded in writing, on {d(request)}, the return of all materials.",
    )))
    case.events.append((returned, w.pick(
        f"{d(returned)}: {recipient} confirmed all materials were destroyed.",
        f"On {d(returned)} {recipient} returned the materials.",
        f"Return of materials completed by {recipient} on {d(returned)}.",
        f"{recipient} certified on {d(returned)} the destruction of all materials.",
    )))
    meeting = plus(first_sign, -rng.randint(5, 40))
    case.extra_events.append((meeting, w.pick(
        f"{d(meeting)}: first meeting of {signatory} with both teams.",
        f"On {d(meeting)} {signatory} hosted a kick-off meeting.",
        f"Kick-off meeting led by {signatory} on {d(meeting)}.",
        f"{signatory} met both teams for the first time on {d(meeting)}.",
    )))
    invoice = plus(shared, rng.randint(3, 30))
    amount = rng.randrange(500, 9000, 50)
    case.extra_events.append((invoice, w.pick(
        f"{d(invoice)}: {recipient} paid an invoice of {m(amount)} for test equipment.",
        f"On {d(invoice)} an equipment invoice of {m(amount)} was settled by {recipient}.",
        f"Invoice for test equipment ({m(amount)}) paid on {d(invoice)}.",
        f"{recipient} settled a {m(amount)} bill for test equipment on {d(invoice)}.",
    )))

    case.compare("returned_in_time", returned, deadline)
    case.labels = {
        "nda_type": "mutual" if mutual else "one-way",
        "effective_date": effective.isoformat(),
        "expiry_date": expiry.isoformat(),
        "survival_years": survival,
        "consent_obtained": consent,
        "disclosure_permitted": permitted,
        "return_deadline": deadline.isoformat(),
        "returned_in_time": on_time,
        "breach_occurred": breach,
    }
    case.rule({"disclosure_permitted": [False]}, {"breach_occurred": ["yes"]})
    case.rule({"returned_in_time": [False]}, {"breach_occurred": ["yes"]})
    case.rule({"breach_occurred": ["no"]}, {"disclosure_permitted": [True], "returned_in_time": [True]})
    case.rule({"consent_obtained": ["yes"]}, {"disclosure_permitted": [True]})
    case.ask_as_written("discloser_signed_date", first_sign,
                        f"On what date did {discloser} sign the agreement?", f"When did {discloser} sign?")
    case.ask_as_written("recipient_signed_date", second_sign,
                        f"On what date did {recipient} sign the agreement?", f"When did {recipient} add its signature?")
    case.ask_as_written("shared_date", shared,
                        f"On what date did {recipient} pass the information on?",
                        "When was the confidential information disclosed to others?")
    case.ask_as_written("return_request_date", request,
                        f"On what date did {discloser} ask in writing for its materials back?",
                        "When was the written request for return of the materials made?",
                        "What is the date of the request to return the information?")
    case.ask_as_written("materials_returned_date", returned,
                        f"On what date did {recipient} return or destroy the materials?",
                        "When were the materials actually returned or destroyed?")
    return case


DOMAIN = Domain("nda", QUESTIONS, build)
