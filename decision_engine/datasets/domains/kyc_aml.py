"""KYC/AML onboarding: customer risk, a lowered ownership threshold for high risk, PEPs, stale identity checks."""

from __future__ import annotations

import random

from .common import (
    BOOLEAN, Case, Domain, QuestionSpec, Wording, company, enum, integer, person, plus, random_date,
    split_amount,
)

QUESTIONS = {
    "high_risk_customer": QuestionSpec(BOOLEAN, (
        "Is the customer high risk under the bank's policy?",
        "Does the customer fall into the high-risk category?",
        "Should {customer} be classed as a high-risk customer?",
        "According to the policy's risk rules, does this customer rate as high risk?",
    )),
    "ownership_threshold_pct": QuestionSpec(integer(0, 100), (
        "What ownership percentage makes a person a beneficial owner of this customer?",
        "Which shareholding threshold, in percent, applies to this customer?",
        "From what stake, in percent, does an owner of {customer} count as a beneficial owner?",
        "What percentage of the shares is the cut-off for beneficial ownership in this customer's case?",
    )),
    "beneficial_owner_count": QuestionSpec(integer(0, 10), (
        "How many beneficial owners must be identified?",
        "How many shareholders meet the beneficial-ownership threshold?",
        "How many people count as beneficial owners of {customer}?",
        "What is the number of individuals who qualify as beneficial owners and need identifying?",
    )),
    "pep_identified": QuestionSpec(enum("yes", "no", "not mentioned"), (
        "Did screening identify a politically exposed person among the owners?",
        "Is any owner a politically exposed person according to the file?",
        "Does the file show a PEP among {customer}'s owners?",
        "Was any of the owners flagged as a politically exposed person by the screening?",
    )),
    "edd_required": QuestionSpec(BOOLEAN, (
        "Is enhanced due diligence required?",
        "Must the bank apply enhanced due diligence to {customer}?",
        "Does {customer} need enhanced due diligence?",
        "Is this a case where the policy demands enhanced due diligence?",
    )),
    "id_check_age_days": QuestionSpec(integer(0, 365), (
        "How many days before the onboarding date were the identity documents verified?",
        "How old, in days, was the identity verification on the onboarding date?",
        "How many days separate the ID verification from {customer}'s onboarding date?",
        "Counting back from onboarding, how many days earlier did the identity document check take place?",
    )),
    "id_check_current": QuestionSpec(BOOLEAN, (
        "Was the identity verification recent enough on the onboarding date?",
        "Is the identity check still current under the policy?",
        "Was {customer}'s ID verification within the allowed age?",
        "At onboarding, was the identity verification fresh enough to satisfy the policy's time limit?",
    )),
    "onboarding_decision": QuestionSpec(enum("approve", "escalate", "hold"), (
        "What onboarding decision does the policy require?",
        "Should {customer} be approved, escalated, or put on hold?",
        "What should the bank decide about onboarding {customer}?",
        "Which outcome applies to this onboarding file: approve, escalate or hold?",
    )),
}

RISKY_COUNTRIES = ("Xandria", "Port Velez", "Norelia")
OTHER_COUNTRIES = ("Veldmark", "Austrand", "Kelvania", "Lisora")
CASH_BUSINESSES = ("currency exchange", "car wash chain", "gaming arcades")
OTHER_BUSINESSES = ("software consulting", "furniture wholesale", "dental clinics", "freight forwarding")
NORMAL_THRESHOLD = 25


def build(rng: random.Random, w: Wording) -> Case:
    customer = company(rng, "Holdings Ltd", "Trading SA", "Group Ltd")
    risky_country = rng.random() < 0.25
    cash_business = rng.random() < 0.25
    country = rng.choice(RISKY_COUNTRIES if risky_country else OTHER_COUNTRIES)
    business = rng.choice(CASH_BUSINESSES if cash_business else OTHER_BUSINESSES)
    high_risk = risky_country or cash_business
    low_threshold = rng.choice((10, 15, 20))
    threshold = low_threshold if high_risk else NORMAL_THRESHOLD
    max_age = rng.choice((30, 60, 90))

    owners_n = rng.randint(2, 4)
    stakes = split_amount(rng, 100, owners_n + 1, step=1)
    rest = stakes.pop()
    names = [person(rng) for _ in range(owners_n)]
    count = sum(stake >= threshold for stake in stakes)
    pep = rng.choice(("yes", "no", "not mentioned"))
    edd = high_risk or pep == "yes"

    onboarding = random_date(rng)
    current = rng.random() < 0.7
    age = rng.randint(0, max_age) if current else max_age + rng.randint(1, 60)
    verified = plus(onboarding, -age)
    decision = "hold" if not current else "escalate" if edd else "approve"

    case = Case(
        title=w.pick("Corporate customer onboarding file", "KYC review - new business account",
                     "Customer due diligence checklist", "Onboarding review: corporate account applicant"),
        header=[("Customer", customer), ("Incorporated in", country), ("Business", business)],
        slots={"customer": customer},
    )
    m, d = w.money, w.date
    risky = ", ".join(RISKY_COUNTRIES[:-1]) + " or " + RISKY_COUNTRIES[-1]
    review_months = rng.choice((12, 18))
    case.clauses.append((w.pick("Customer risk", "Risk rating", "High-risk customers", "Risk classification"), w.pick(
        f"A customer is high risk if it is incorporated in {risky} or runs a cash-intensive business "
        f"(currency exchange, car washes, gaming arcades). Enhanced due diligence applies to high-risk customers "
        f"and to any customer with a politically exposed person (PEP) among its owners.",
        f"High-risk customers are those incorporated in {risky}, and those in cash-intensive trades such as "
        f"currency exchange, car washes or gaming arcades. Enhanced due diligence is needed for them and "
        f"whenever an owner is a PEP.",
        f"Incorporation in {risky}, or a cash-heavy business (currency exchange, car washes, gaming arcades), "
        f"makes a customer high risk. Either high risk or a PEP owner triggers enhanced due diligence.",
        f"High risk = incorporated in {risky}, or cash-intensive business (currency exchange, car washes, gaming "
        f"arcades). Enhanced due diligence: required for every high-risk customer, and for any customer whose "
        f"owners include a politically exposed person (PEP).",
    )))
    case.clauses.append((w.pick("Beneficial owners", "Ownership", "Owners to identify",
                                "Beneficial ownership threshold"), w.pick(
        f"Every person holding {NORMAL_THRESHOLD}% or more of the shares is a beneficial owner. For high-risk "
        f"customers the threshold is lowered to {low_threshold}%.",
        f"Beneficial owners are shareholders with at least {NORMAL_THRESHOLD}%; if the customer is high risk, "
        f"anyone with {low_threshold}% or more counts.",
        f"Owners of {NORMAL_THRESHOLD}% or above must be identified, or of {low_threshold}% or above where the "
        f"customer is high risk.",
        f"Where the customer is high risk, any person holding {low_threshold}% or more of the shares shall be a "
        f"beneficial owner; in all other cases a holding of {NORMAL_THRESHOLD}% or more is required.",
    )))
    case.clauses.append((w.pick("Identity checks", "Verification", "ID documents", "Age of ID verification"), w.pick(
        f"Identity documents must have been verified no more than {max_age} days before onboarding. If not, the "
        f"file is put on hold. Otherwise the file is escalated when enhanced due diligence applies, and approved "
        f"if it does not.",
        f"The ID verification may be at most {max_age} days old on the onboarding date; an older check puts the "
        f"file on hold. With a current check, files needing enhanced due diligence are escalated and others "
        f"approved.",
        f"A verification older than {max_age} days at onboarding means hold. A current one leads to escalation "
        f"where enhanced due diligence is required, and to approval where it is not.",
        f"Put the file on hold if the identity documents were verified more than {max_age} days before onboarding. "
        f"If the verification is within that limit, escalate the file when enhanced due diligence applies; if it "
        f"does not apply, approve it.",
    )))
    case.extra_clauses.append((w.pick("Reviews", "Periodic review", "Refresh", "Review cycle"), w.pick(
        f"High-risk files are reviewed every {review_months} months, others every 36 months.",
        "Files are refreshed periodically according to their risk.",
        "Every file is re-checked at least once every three years.",
        f"Review frequency: {review_months} months for high-risk files; 36 months for all other files.",
    )))

    holdings = "; ".join(f"{name} {stake}%" for name, stake in zip(names, stakes))
    register = plus(onboarding, -rng.randint(age + 1, age + 200))
    case.events.append((register, w.pick(
        f"{d(register)}: share register received: {holdings}; the remaining {rest}% is spread among small "
        f"holders with under 2% each.",
        f"On {d(register)} the bank received the share register ({holdings}; {rest}% held by many small "
        f"shareholders, none above 2%).",
        f"Share register dated {d(register)}: {holdings}. Remaining {rest}% widely held, each below 2%.",
        f"The bank got the share register on {d(register)}. It lists {holdings}. The other {rest}% belongs to "
        f"small holders who each have less than 2%.",
    )))
    case.events.append((verified, w.pick(
        f"{d(verified)}: identity documents of the owners verified.",
        f"On {d(verified)} the owners' identity documents were checked.",
        f"ID verification of owners completed {d(verified)}.",
        f"The bank verified the owners' identity papers on {d(verified)}.",
    )))
    if pep != "not mentioned":
        screened = plus(verified, rng.randint(0, max(0, age)))
        who = rng.choice(names)
        case.events.append((screened, w.pick(
            f"{d(screened)}: PEP screening: {who} is a serving member of parliament." if pep == "yes"
            else f"{d(screened)}: PEP screening of all owners: no matches.",
            f"On {d(screened)} screening showed that {who} is a sitting deputy minister (a PEP)." if pep == "yes"
            else f"On {d(screened)} screening found no politically exposed persons.",
            f"Screening result of {d(screened)}: {who} identified as a politically exposed person." if pep == "yes"
            else f"Screening result of {d(screened)}: nobody politically exposed.",
            f"PEP check run on {d(screened)} flags {who}, a current member of parliament." if pep == "yes"
            else f"PEP check run on {d(screened)} across every owner returned zero hits.",
        )))
    case.events.append((onboarding, w.pick(
        f"{d(onboarding)}: onboarding date of the account.",
        f"On {d(onboarding)} the account was to be opened (onboarding date).",
        f"Onboarding scheduled for {d(onboarding)}.",
        f"The account's onboarding date is {d(onboarding)}.",
    )))
    founded = random_date(rng, 2001, onboarding.year - 1)
    capital = rng.randrange(1000, 90000, 1000)
    case.extra_events.append((founded, w.pick(
        f"{d(founded)}: the customer was incorporated with capital of {m(capital)}.",
        f"On {d(founded)} the company was founded.",
        f"Date of incorporation: {d(founded)}.",
        f"The customer was formed on {d(founded)} with a capital of {m(capital)}.",
    )))

    case.compare("id_check_current", age, max_age)
    case.labels = {
        "high_risk_customer": high_risk,
        "ownership_threshold_pct": threshold,
        "beneficial_owner_count": count,
        "pep_identified": pep,
        "edd_required": edd,
        "id_check_age_days": age,
        "id_check_current": current,
        "onboarding_decision": decision,
    }
    case.rule({"high_risk_customer": [True]}, {"ownership_threshold_pct": [low_threshold], "edd_required": [True]})
    case.rule({"high_risk_customer": [False]}, {"ownership_threshold_pct": [NORMAL_THRESHOLD]})
    case.rule({"pep_identified": ["yes"]}, {"edd_required": [True]})
    case.rule({"id_check_current": [False]}, {"onboarding_decision": ["hold"]})
    case.rule({"edd_required": [True]}, {"onboarding_decision": ["escalate", "hold"]})
    case.rule({"onboarding_decision": ["approve"]}, {"edd_required": [False], "id_check_current": [True]})
    case.ask_as_written("register_date", register,
                        "On what date was the share register received?", "What date does the share register bear?")
    case.ask_as_written("identity_verified_date", verified,
                        "On what date were the owners' identity documents verified?",
                        "When did the bank check the owners' identity papers?")
    case.ask_as_written("onboarding_date", onboarding,
                        f"What is the onboarding date of {customer}'s account?",
                        "On what date is the account to be opened?")
    case.ask_as_written("widely_held_share", rest,
                        "What percentage of the shares is held by small holders?",
                        "How much of the company, in percent, is spread among small shareholders?")
    return case


DOMAIN = Domain("kyc_aml", QUESTIONS, build)
