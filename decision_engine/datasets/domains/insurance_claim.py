"""Property insurance claim: policy period, reporting window, covered perils with a flood extension, payout."""

from __future__ import annotations

import random

from .common import (
    BOOLEAN, DATE, Case, Domain, QuestionSpec, Wording, company, enum, integer, person, plus, random_date,
)

QUESTIONS = {
    "incident_in_period": QuestionSpec(BOOLEAN, (
        "Did the loss happen within the period of insurance?",
        "Was the policy in force on the date of the incident?",
        "Did {insured}'s loss occur while the policy was running?",
        "Was the date of the loss inside the dates the policy covers?",
    )),
    "days_to_report": QuestionSpec(integer(0, 365), (
        "How many days after the incident was the claim reported to the insurer?",
        "How many calendar days passed between the loss and its notification to the insurer?",
        "After how many days did {insured} notify the claim?",
        "What was the gap, in days, between the incident and the date the claim was reported to the insurer?",
    )),
    "reported_in_time": QuestionSpec(BOOLEAN, (
        "Was the claim reported within the policy's reporting period?",
        "Did {insured}'s notification of the claim meet the time limit?",
        "Did {insured} report the loss in time?",
        "Did the claim notification fall inside the reporting window the policy allows?",
    )),
    "peril_covered": QuestionSpec(BOOLEAN, (
        "Is the cause of the loss a covered peril under this policy?",
        "Does the policy cover the kind of damage that occurred?",
        "Is {insured}'s loss caused by an insured peril?",
        "Is whatever caused this damage among the risks the policy protects against?",
    )),
    "claim_outcome": QuestionSpec(enum("accept", "decline"), (
        "Should the insurer accept or decline the claim?",
        "What is the correct decision on {insured}'s claim?",
        "Should {insurer} pay or turn down the claim?",
        "Is the right outcome for this claim to accept it or to decline it?",
    )),
    "excess_amount": QuestionSpec(integer(0, 10000), (
        "What excess applies to each claim under the policy?",
        "How much is the policy excess?",
        "What amount does {insured} bear as the excess on a claim?",
        "Per the policy terms, what excess amount is deducted from a claim?",
    )),
    "payable_amount": QuestionSpec(integer(0, 100000), (
        "What amount should the insurer pay on the claim?",
        "How much is payable under the policy for this loss?",
        "What payment is {insured} entitled to receive?",
        "Applying the policy terms, what sum does the insurer owe on this claim?",
    )),
    "decision_deadline": QuestionSpec(DATE, (
        "By what date must the insurer decide the claim?",
        "What is the latest date for the insurer's decision?",
        "By when does {insurer} have to give its decision?",
        "What is the deadline date for the insurer to reach a ruling on this claim?",
    )),
}

COVERED = ("fire", "theft", "a storm", "water escaping from a burst pipe")
EXCLUDED = ("gradual wear and tear", "insects", "subsidence")


def build(rng: random.Random, w: Wording) -> Case:
    insured = person(rng)
    insurer = company(rng, "Insurance plc", "Mutual", "Assurance Ltd")
    start = random_date(rng, 2015, 2032)
    end = plus(start.replace(year=start.year + 1), -1)
    window = rng.choice((14, 30, 60))
    decide_days = rng.choice((15, 20, 30))
    excess = rng.choice((250, 500, 750, 1000))

    in_period = rng.random() < 0.8
    incident = plus(start, rng.randint(0, (end - start).days)) if in_period else (
        plus(start, -rng.randint(1, 90)) if rng.random() < 0.5 else plus(end, rng.randint(1, 90)))
    on_time = rng.random() < 0.65
    delay = rng.randint(0, window) if on_time else window + rng.randint(1, 40)
    reported = plus(incident, delay)

    has_extension = rng.random() < 0.5
    roll = rng.random()
    if roll < 0.5:
        cause, covered = rng.choice(COVERED), True
    elif roll < 0.8:
        cause, covered = "a flood from the nearby river", has_extension
    else:
        cause, covered = rng.choice(EXCLUDED), False
    claimed = rng.randrange(excess + 200, 60000, 10)
    accept = in_period and on_time and covered
    payable = claimed - excess if accept else 0

    case = Case(
        title=w.pick("Home insurance claim file", "Property claim assessment", "Household policy and claim record",
                     "Insurance claim review: residential property"),
        header=[("Policyholder", insured), ("Insurer", insurer), ("Policy number", f"HP-{rng.randint(10000, 99999)}")],
        slots={"insured": insured, "insurer": insurer},
    )
    m, d = w.money, w.date
    case.clauses.append((w.pick("Period of insurance", "Cover period", "Duration", "Policy term"), w.pick(
        f"The policy covers losses occurring from {d(start)} to {d(end)}, both days included.",
        f"Cover runs from {d(start)} up to and including {d(end)}.",
        f"Only losses happening between {d(start)} and {d(end)} inclusive are insured.",
        f"The insurer shall cover any loss that occurs on or after {d(start)} and on or before {d(end)}.",
    )))
    perils = w.pick(
        "Insured perils are fire, theft, storm and escape of water. Flood, wear and tear, insects and subsidence "
        "are excluded.",
        "The policy insures against fire, theft, storm and escape of water only; it excludes flood, gradual wear "
        "and tear, insect damage and subsidence.",
        "Covered: fire, theft, storm, escape of water. Not covered: flood, wear and tear, insects, subsidence.",
        "This policy pays out for damage from fire, theft, storm or escape of water. It does not pay for flood, "
        "wear and tear, insects or subsidence.",
    )
    if has_extension:
        perils += " " + w.pick(
            "The policyholder bought the Flood Extension, so flood is covered after all.",
            "However, this policy carries the Flood Extension endorsement, which adds flood cover.",
            "The Flood Extension on this policy reinstates cover for flood.",
            "Because a Flood Extension was purchased for this policy, flood damage is insured as well.",
        )
    case.clauses.append((w.pick("Perils", "What is covered", "Cover", "Scope of cover"), perils))
    case.clauses.append((w.pick("Claims", "Making a claim", "Claims conditions",
                                "Notification and settlement"), w.pick(
        f"Claims must be reported within {window} days of the loss, or they are declined. Each accepted claim "
        f"is paid less an excess of {m(excess)}. The insurer decides within {decide_days} days of the report.",
        f"A loss reported more than {window} days after it happened is not paid. Payments are reduced by the "
        f"{m(excess)} excess. A decision is due {decide_days} days after the claim is reported.",
        f"Report any loss no later than {window} days after it occurs; late claims fail. The first {m(excess)} "
        f"of every accepted claim is borne by the policyholder. Decisions follow within {decide_days} days of "
        f"the report.",
        f"Any loss shall be notified within {window} days of its occurrence, failing which the claim is declined. "
        f"Each accepted claim shall be paid less a {m(excess)} excess. The insurer shall decide within "
        f"{decide_days} days of notification.",
    )))
    premium = rng.randrange(200, 1500, 10)
    case.extra_clauses.append((w.pick("Premium", "Price", "Payment of premium", "Annual cost"), w.pick(
        f"The annual premium is {m(premium)}.",
        f"Premium: {m(premium)} a year, payable monthly.",
        f"The policyholder pays {m(premium)} per year.",
        f"Cost of cover: {m(premium)} per annum.",
    )))

    case.events.append((incident, w.pick(
        f"{d(incident)}: the house was damaged by {cause}.",
        f"On {d(incident)} the property suffered a loss from {cause}.",
        f"Loss caused by {cause} on {d(incident)}.",
        f"The insured home was damaged on {d(incident)}; cause: {cause}.",
    )))
    case.events.append((reported, w.pick(
        f"{d(reported)}: {insured} reported the loss and claimed {m(claimed)}.",
        f"On {d(reported)} the claim for {m(claimed)} was notified to the insurer.",
        f"Claim of {m(claimed)} notified by {insured} on {d(reported)}.",
        f"The insurer was told of the loss by {insured} on {d(reported)}, with {m(claimed)} claimed.",
    )))
    quote = plus(reported, rng.randint(1, 15))
    builder = claimed + rng.randrange(100, 2000, 10)
    case.extra_events.append((quote, w.pick(
        f"{d(quote)}: a builder quoted {m(builder)} for full repairs.",
        f"On {d(quote)} the loss adjuster visited the house.",
        f"Site visit by the loss adjuster on {d(quote)}.",
        f"Estimate for complete repair work, given by a builder on {d(quote)}: {m(builder)}.",
    )))
    renewal = plus(end, -rng.randint(20, 40))
    case.extra_events.append((renewal, w.pick(
        f"{d(renewal)}: renewal invitation sent for the next year.",
        f"On {d(renewal)} the insurer sent a renewal quote.",
        f"Renewal offer issued {d(renewal)}.",
        f"Invitation to renew for a further year went out on {d(renewal)}.",
    )))

    if incident < start:  # before the period, the start date is what it fails
        case.compare("incident_in_period", start, incident)
    else:
        case.compare("incident_in_period", incident, end)
    case.compare("reported_in_time", reported, plus(incident, window))
    case.labels = {
        "incident_in_period": in_period,
        "days_to_report": delay,
        "reported_in_time": on_time,
        "peril_covered": covered,
        "claim_outcome": "accept" if accept else "decline",
        "excess_amount": excess,
        "payable_amount": payable,
        "decision_deadline": plus(reported, decide_days).isoformat(),
    }
    case.rule({"incident_in_period": [False]}, {"claim_outcome": ["decline"]})
    case.rule({"reported_in_time": [False]}, {"claim_outcome": ["decline"]})
    case.rule({"peril_covered": [False]}, {"claim_outcome": ["decline"]})
    case.rule({"claim_outcome": ["decline"]}, {"payable_amount": [0]})
    case.rule({"payable_amount": [0]}, {"claim_outcome": ["decline"]})
    case.rule({"claim_outcome": ["accept"]}, {"incident_in_period": [True], "reported_in_time": [True],
                                              "peril_covered": [True]})
    case.ask_as_written("loss_date", incident,
                        "On what date did the loss happen?", "When was the property damaged?",
                        f"On what date did {insured}'s home suffer the damage?")
    case.ask_as_written("loss_reported_date", reported,
                        f"On what date did {insured} report the loss?", "When was the claim notified to the insurer?")
    case.ask_as_written("cover_start_date", start,
                        "On what date does the period of insurance begin?", "When does cover start?")
    case.ask_as_written("cover_end_date", end,
                        "What is the last day of the period of insurance?", "On what date does cover end?")
    case.ask_as_written("amount_claimed", claimed,
                        f"How much did {insured} claim?", "What amount was claimed from the insurer?")
    case.ask_as_written("policy_excess", excess,
                        "What excess applies to each accepted claim?", "How much is the policy excess?")
    return case


DOMAIN = Domain("insurance_claim", QUESTIONS, build)
