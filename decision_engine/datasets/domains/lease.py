"""Residential lease: the tenant's notice, a job-relocation exception, deposit deductions and refund timing."""

from __future__ import annotations

import random

from .common import (
    BOOLEAN, DATE, STREETS, TOWNS, Case, Domain, QuestionSpec, Wording, company, enum, integer, other_than,
    person, plus, random_date,
)

QUESTIONS = {
    "notice_received_date": QuestionSpec(DATE, (
        "On what date did the landlord receive, or is deemed to have received, the tenant's notice?",
        "Which date counts as the date the landlord received the notice to end the tenancy?",
        "When is {tenant}'s notice treated as having reached the landlord?",
        "Give the date of actual or deemed receipt of the tenant's notice by the landlord.",
    )),
    "notice_days": QuestionSpec(integer(0, 365), (
        "How many calendar days run from the date the notice counts as received to the day the tenant moved out?",
        "Counting from deemed receipt of the notice to the move-out date, how many days of notice were given?",
        "How many days' notice did {tenant} actually give, measured from receipt to vacating?",
        "How long, in calendar days, was the gap between the landlord's (deemed) receipt of the notice and "
        "the tenant's move-out?",
    )),
    "exception_applies": QuestionSpec(BOOLEAN, (
        "Does the work-relocation exception to the normal notice period apply to this tenant?",
        "Can the tenant rely on the shorter notice period for job transfers?",
        "Is {tenant} entitled to the reduced notice period for a work relocation?",
        "Are the conditions of the employer-transfer exception to the usual notice period met for this tenant?",
    )),
    "required_notice_days": QuestionSpec(integer(0, 365), (
        "How many days of notice was the tenant required to give?",
        "What notice period, in days, applied to the tenant's notice?",
        "What is the minimum number of days' notice {tenant} had to give?",
        "What length of notice, counted in days, did the agreement demand from the tenant?",
    )),
    "notice_in_time": QuestionSpec(BOOLEAN, (
        "Did the tenant give at least the notice the agreement required?",
        "Was the notice period {tenant} gave long enough?",
        "Was {tenant}'s notice sufficient under the agreement?",
        "Was the agreement's minimum notice requirement met by the tenant?",
    )),
    "deduction_total": QuestionSpec(integer(0, 100000), (
        "Under the agreement, what total amount may the landlord keep from the deposit?",
        "How much of the deposit may be withheld in total?",
        "What sum is the landlord entitled to retain out of {tenant}'s security deposit?",
        "In total, how much may the landlord deduct from the deposit according to the agreement?",
    )),
    "deposit_returned": QuestionSpec(enum("full", "partial", "none"), (
        "How much of the deposit should be returned to the tenant?",
        "Is {tenant}'s deposit due back in full, in part, or not at all?",
        "What share of the security deposit should {tenant} get back?",
        "Should the landlord refund the whole deposit, only part of it, or none of it?",
    )),
    "statement_deadline": QuestionSpec(DATE, (
        "By what date did the landlord have to send the deposit statement?",
        "What was the last day for the landlord to settle the deposit after move-out?",
        "What is the deadline for {landlord} to return the deposit balance with its statement?",
        "Name the final day on which the landlord could still send the deposit statement in time.",
    )),
    "statement_in_time": QuestionSpec(BOOLEAN, (
        "Did the landlord send the deposit statement within the period allowed?",
        "Did {landlord} settle the deposit on time?",
        "Did {landlord} meet the deadline for the deposit statement?",
        "Was the landlord's deposit statement sent no later than the last permitted day?",
    )),
    "deposit_protected": QuestionSpec(enum("yes", "no", "not mentioned"), (
        "Is the deposit protected in a deposit protection scheme?",
        "Does the file say the deposit is registered with a protection scheme?",
        "Has {landlord} placed the deposit in a protection scheme?",
        "Per the documents, is the deposit covered by a deposit protection scheme?",
    )),
}

DAMAGE = (
    ("a cracked tile", 40, 180),
    ("a broken blind", 30, 120),
    ("a burnt worktop", 90, 400),
    ("a filthy oven", 45, 110),
    ("junk left in the loft", 60, 250),
    ("a split door frame", 80, 350),
)
WEAR = ("a worn hall carpet", "light wall scuffs", "faded curtains")


def build(rng: random.Random, w: Wording) -> Case:
    tenant = person(rng)
    landlord = company(rng, "Lettings Ltd", "Homes Ltd", "Property LLP")
    premises = f"Flat {rng.randint(1, 9)}{rng.choice('ABCD')}, {rng.randint(2, 98)} {rng.choice(STREETS)}"
    town, new_town = rng.sample(TOWNS, 2)
    rent = rng.randrange(650, 2400, 25)
    deposit = int(round(rent * rng.choice((1.0, 1.5, 2.0)) / 50) * 50)
    normal = rng.choice((28, 30, 45, 60))
    landlord_notice = other_than(rng, (56, 60, 90), normal)
    short = rng.choice((7, 10, 14, 21))
    post_days = rng.choice((2, 3, 4))
    fee = rng.choice((100, 150, 200, 250))
    refund_days = rng.choice((10, 14, 21, 28, 30))

    has_exception = rng.random() < 0.65
    relocating = rng.random() < (0.6 if has_exception else 0.3)
    letter = relocating and rng.random() < 0.75
    applies = has_exception and relocating and letter
    required = short if applies else normal

    by_post = rng.random() < 0.4
    sent = random_date(rng)
    received = plus(sent, post_days if by_post else 0)
    in_time = rng.random() < 0.5
    if in_time:
        notice_days = required + rng.randint(0, 20)
    else:
        notice_days = required - rng.randint(1, min(12, required - 1))
    vacate = plus(received, notice_days)

    damage = rng.sample(DAMAGE, rng.choices((0, 1, 2), weights=(4, 4, 2))[0])
    costs = [rng.randrange(lo, hi, 5) for _, lo, hi in damage]
    wear = rng.choice(WEAR) if rng.random() < 0.5 else None
    unpaid = rng.random() < 0.2
    claimable = sum(costs) + (0 if in_time else fee) + (rent if unpaid else 0)
    kept = min(claimable, deposit)
    returned = "full" if kept == 0 else "none" if kept == deposit else "partial"

    deadline = plus(vacate, refund_days)
    statement_on_time = rng.random() < 0.55
    statement = plus(vacate, rng.randint(1, refund_days) if statement_on_time else refund_days + rng.randint(1, 15))
    protected = rng.choice(("yes", "no", "not mentioned"))

    case = Case(
        title=w.pick("Tenancy agreement and move-out file", "Lease extract with check-out record",
                     "Residential letting terms and end-of-tenancy notes", "Rental contract and departure records"),
        header=[("Premises", f"{premises}, {town}"), ("Landlord", landlord), ("Tenant", tenant)],
        slots={"tenant": tenant, "landlord": landlord},
    )
    m, d = w.money, w.date
    case.clauses.append((w.pick("Rent and deposit", "Payments", "Money", "Financial terms"), w.pick(
        f"The rent is {m(rent)} per month. The Tenant has paid a security deposit of {m(deposit)}.",
        f"Rent of {m(rent)} is due monthly in advance; a deposit of {m(deposit)} was paid at the start.",
        f"The Tenant pays {m(rent)} each month and lodged {m(deposit)} as security.",
        f"Monthly rent: {m(rent)}. Deposit paid by the Tenant: {m(deposit)}.",
    )))
    notice = w.pick(
        f"The Tenant may end the tenancy by at least {normal} days' written notice, counted from the day the "
        f"Landlord receives it to the day the Tenant vacates. Email is received the day it is sent; a letter is "
        f"deemed received {post_days} days after its postmark, whatever the delivery date.",
        f"To leave, the Tenant gives {normal} days' written notice or more, from deemed receipt to move-out. "
        f"Email counts as received on sending, post {post_days} days after the postmark, even if it arrives "
        f"earlier or later.",
        f"A tenant's notice must allow at least {normal} days between its receipt and the day the tenant "
        f"leaves. Emails are received when sent, letters {post_days} days after the postmark, whenever they arrive.",
        f"The Tenant's written notice to quit shall give no fewer than {normal} days, reckoned from its receipt by "
        f"the Landlord until the date the Tenant moves out. Email notice is treated as received on sending; postal "
        f"notice {post_days} days after the postmark, irrespective of delivery.",
    )
    if has_exception:
        notice += " " + w.pick(
            f"However, if the Tenant's employer transfers the Tenant to another town and the employer's letter "
            f"is enclosed with the notice, {short} days' notice is enough.",
            f"Exception: a Tenant relocated by the employer to another town gives only {short} days' notice, "
            f"if the employer's transfer letter comes with the notice.",
            f"A job transfer to another town ordered by the employer allows {short} days' notice, but only with "
            f"the employer's letter attached.",
            f"Where the Tenant is moved to another town by the employer, {short} days' notice suffices, provided "
            f"the notice is accompanied by the employer's letter.",
        )
    case.clauses.append((w.pick("Notice by the Tenant", "Ending the tenancy", "Tenant's notice",
                                "Leaving the premises"), notice))
    case.clauses.append((w.pick("Deposit", "Return of deposit", "Security", "Deposit refund"), w.pick(
        f"Within {refund_days} days after the Tenant vacates, the Landlord sends a statement and returns the "
        f"deposit less unpaid rent and repair costs for damage (never for fair wear and tear), and less {m(fee)} "
        f"if the notice was too short. Deductions cannot exceed the deposit.",
        f"The deposit is settled, with a statement, within {refund_days} days of move-out. Only unpaid rent, "
        f"damage repairs (not fair wear and tear) and {m(fee)} for too little notice may be kept, and never more "
        f"than the deposit.",
        f"The deposit, minus unpaid rent, damage beyond fair wear and tear and {m(fee)} when notice fell short "
        f"(but never more than the deposit), is repaid with a statement within {refund_days} days of leaving.",
        f"Permitted deductions: unpaid rent; repair costs for damage (fair wear and tear excluded); {m(fee)} if "
        f"notice was too short; in total no more than the deposit. The Landlord shall send a statement and the "
        f"balance within {refund_days} days of the Tenant moving out.",
    )))
    if protected != "not mentioned":
        scheme = rng.choice(("SafeLet", "TenancyGuard", "DepositShield"))
        case.clauses.append((w.pick("Protection", "Deposit scheme", "Safeguarding", "Deposit protection"), w.pick(
            f"The deposit is registered with the {scheme} protection scheme.",
            f"The Landlord has protected the deposit with {scheme}.",
            f"{scheme}, an approved scheme, holds a record of the deposit.",
            f"Under the {scheme} scheme, the Tenant's deposit is protected.",
        ) if protected == "yes" else w.pick(
            "The Landlord holds the deposit itself; it is not registered with any protection scheme.",
            "The deposit has not been placed in a protection scheme.",
            "No deposit protection scheme is used; the Landlord keeps the money in its own account.",
            "The deposit remains in the Landlord's hands and has not been registered with a protection scheme.",
        )))
    case.extra_clauses.append((w.pick("Notice by the Landlord", "Landlord's notice", "Possession",
                                      "Termination by the Landlord"), w.pick(
        f"The Landlord may end the tenancy by giving at least {landlord_notice} days' written notice.",
        f"The Landlord must give {landlord_notice} days' notice or more to end the tenancy.",
        f"For the Landlord, the minimum notice is {landlord_notice} days.",
        f"Should the Landlord wish to end the tenancy, it shall serve written notice of no less than "
        f"{landlord_notice} days.",
    )))
    late_days, late_fee = rng.choice((3, 5, 7)), rng.choice((25, 30, 40))
    case.extra_clauses.append((w.pick("Late rent", "Late payment", "Arrears", "Overdue rent"), w.pick(
        f"Rent paid more than {late_days} days late incurs a charge of {m(late_fee)}.",
        f"A late charge of {m(late_fee)} applies to rent over {late_days} days overdue.",
        f"Each rent payment made over {late_days} days late costs an extra {m(late_fee)}.",
        f"Where rent is paid more than {late_days} days after its due date, a {m(late_fee)} fee is payable.",
    )))

    if by_post:
        arrived = plus(sent, other_than(rng, (1, 2, 3, 4, 5, 6), post_days))
        sending = w.pick(
            f"{d(sent)}: {tenant} posted a notice (postmark {d(sent)}) to vacate on {d(vacate)}; the letter "
            f"actually arrived on {d(arrived)}.",
            f"On {d(sent)} {tenant} sent notice by post, postmarked that day, to leave on {d(vacate)}. It was "
            f"delivered on {d(arrived)}.",
            f"Letter from {tenant}, postmarked {d(sent)} and delivered {d(arrived)}, giving notice to leave on "
            f"{d(vacate)}.",
            f"{tenant}'s notice to move out on {d(vacate)} went by post with a postmark of {d(sent)}; it reached "
            f"the Landlord on {d(arrived)}.",
        )
    else:
        sending = w.pick(
            f"{d(sent)}: {tenant} emailed notice to vacate on {d(vacate)}.",
            f"On {d(sent)} {tenant} gave notice by email to leave on {d(vacate)}.",
            f"Email from {tenant} dated {d(sent)} giving notice to leave on {d(vacate)}.",
            f"Notice to move out on {d(vacate)} sent by {tenant} via email on {d(sent)}.",
        )
    if relocating and letter:
        reason = f"It says the employer is transferring the Tenant to {new_town}; the employer's letter is enclosed."
    elif relocating:
        reason = f"It mentions a job transfer to {new_town}, but no letter from the employer was enclosed."
    else:
        reason = rng.choice((
            "It gives no reason for leaving.",
            "It says the Tenant wants to live closer to family.",
            f"It says the Tenant has bought a house in {new_town}.",
        ))
    case.events.append((sent, f"{sending} {reason}"))

    findings = [f"{what} (repair {m(cost)})" for (what, _, _), cost in zip(damage, costs)]
    if wear:
        findings.append(f"{wear}, fair wear and tear (quote {m(rng.randrange(60, 300, 10))})")
    rng.shuffle(findings)
    found = "; ".join(findings) if findings else "no damage"
    moved = w.pick(
        f"{d(vacate)}: the Tenant moved out and returned the keys. Check-out inspection: {found}.",
        f"On {d(vacate)} the Tenant left and handed back all keys; the inspection found {found}.",
        f"Keys returned and premises vacated on {d(vacate)}. Inspection findings: {found}.",
        f"Tenant out on {d(vacate)}, keys surrendered. Noted at check-out: {found}.",
    )
    if unpaid:
        moved += f" Rent of {m(rent)} for the final month was never paid."
    case.events.append((vacate, moved))
    case.events.append((statement, w.pick(
        f"{d(statement)}: the Landlord sent the deposit statement.",
        f"On {d(statement)} the Landlord issued its deposit statement.",
        f"Deposit statement sent by the Landlord on {d(statement)}.",
        f"The Landlord got its deposit statement out on {d(statement)}.",
    )))
    offer = plus(sent, -rng.randint(5, 60))
    new_rent = rent + rng.randrange(25, 150, 25)
    case.extra_events.append((offer, w.pick(
        f"{d(offer)}: the Landlord proposed a rent of {m(new_rent)}; it was later withdrawn.",
        f"On {d(offer)} the Landlord suggested a higher rent of {m(new_rent)}, then dropped it.",
        f"Rent rise to {m(new_rent)} proposed on {d(offer)} and withdrawn.",
        f"The Landlord floated a new rent of {m(new_rent)} on {d(offer)} but later took the proposal back.",
    )))
    invoice = plus(vacate, -rng.randint(3, 40))
    boiler = rng.randrange(80, 400, 5)
    case.extra_events.append((invoice, w.pick(
        f"{d(invoice)}: invoice of {m(boiler)} paid by the Landlord for a boiler service.",
        f"On {d(invoice)} the Landlord paid a plumber {m(boiler)} for the annual boiler check.",
        f"Boiler service invoice ({m(boiler)}) dated {d(invoice)}, paid by the Landlord.",
        f"The Landlord settled a {m(boiler)} boiler-servicing bill on {d(invoice)}.",
    )))

    case.compare("notice_in_time", required, notice_days)
    case.compare("statement_in_time", statement, deadline)
    case.labels = {
        "notice_received_date": received.isoformat(),
        "notice_days": notice_days,
        "exception_applies": applies,
        "required_notice_days": required,
        "notice_in_time": in_time,
        "deduction_total": kept,
        "deposit_returned": returned,
        "statement_deadline": deadline.isoformat(),
        "statement_in_time": statement_on_time,
        "deposit_protected": protected,
    }
    if has_exception:
        case.rule({"exception_applies": [True]}, {"required_notice_days": [short]})
    case.rule({"exception_applies": [False]}, {"required_notice_days": [normal]})
    case.rule({"notice_in_time": [False]}, {"deposit_returned": ["partial", "none"]})
    case.rule({"deduction_total": [0]}, {"deposit_returned": ["full"]})
    case.rule({"deposit_returned": ["full"]}, {"deduction_total": [0], "notice_in_time": [True]})
    case.rule({"deposit_returned": ["none"]}, {"deduction_total": [deposit]})
    case.ask_as_written("notice_sent_date", sent,
                        f"On what date did {tenant} send the notice to end the tenancy?",
                        "When was the tenant's notice sent?", "What date does the tenant's notice to quit bear?")
    case.ask_as_written("move_out_date", vacate,
                        f"On what date did {tenant} move out?", "When did the tenant vacate and hand back the keys?",
                        "What was the actual move-out date?", "On which day did the tenant leave the premises?")
    case.ask_as_written("statement_sent_date", statement,
                        f"On what date did {landlord} send the deposit statement?",
                        "When was the deposit statement actually sent?", "What date was the deposit statement issued?")
    case.ask_as_written("deposit_paid", deposit,
                        "How much did the tenant pay as a security deposit?", "What was the amount of the deposit?",
                        f"What deposit did {tenant} lodge?")
    case.ask_as_written("monthly_rent", rent, "What is the monthly rent?", "How much rent is due each month?")
    return case


DOMAIN = Domain("lease", QUESTIONS, build)
