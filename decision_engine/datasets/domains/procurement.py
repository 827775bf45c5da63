"""Public procurement: value thresholds, an emergency exception, quotes obtained, invoice payment terms."""

from __future__ import annotations

import random

from .common import (
    BOOLEAN, DATE, Case, Domain, QuestionSpec, Wording, enum, integer, plus, random_date, split_amount,
    two_companies,
)

QUESTIONS = {
    "contract_value": QuestionSpec(integer(0, 100000), (
        "What is the total value of the contract?",
        "Adding up all the order lines, what is the contract worth?",
        "What is the combined value of {buyer}'s order with {supplier}?",
        "In total, how much is the contract worth?",
    )),
    "emergency_exception": QuestionSpec(BOOLEAN, (
        "Does the emergency exception to the quotation rules apply to this purchase?",
        "Can the buyer rely on the emergency procurement exception?",
        "Is {buyer}'s purchase covered by the emergency exception?",
        "Does the emergency exception let this purchase bypass the usual quotation requirements?",
    )),
    "procedure_required": QuestionSpec(enum("single quote", "three quotes", "open tender"), (
        "Which procurement procedure did the rules require for this purchase?",
        "What procedure applied: a single quote, three quotes, or an open tender?",
        "Which procedure was {buyer} obliged to follow?",
        "Under the rules, what procurement route was mandatory for this purchase?",
    )),
    "quotes_obtained": QuestionSpec(integer(0, 20), (
        "How many written quotes or bids did the buyer obtain?",
        "How many offers were received before the contract was awarded?",
        "How many quotes or bids did {buyer} collect?",
        "In total, what number of written quotes or tender bids came in for this purchase?",
    )),
    "procedure_followed": QuestionSpec(BOOLEAN, (
        "Did the buyer follow the required procurement procedure?",
        "Was the award to {supplier} made in line with the required procedure?",
        "Did {buyer} comply with the procedure that applied?",
        "Was the purchase carried out using the procedure that the rules required?",
    )),
    "payment_due_date": QuestionSpec(DATE, (
        "By what date was the supplier's invoice due for payment?",
        "On what date did payment of the invoice fall due?",
        "What was the payment deadline for {supplier}'s invoice?",
        "Under the payment terms, what was the due date of the supplier's invoice?",
    )),
    "paid_on_time": QuestionSpec(BOOLEAN, (
        "Was the invoice paid by its due date?",
        "Did payment of {supplier}'s invoice meet the payment terms?",
        "Did {buyer} pay {supplier} on time?",
        "Was the supplier paid no later than the invoice's due date?",
    )),
    "audit_finding": QuestionSpec(enum("satisfactory", "unsatisfactory"), (
        "What is the audit finding for this purchase?",
        "Is the purchase file satisfactory or unsatisfactory?",
        "How should the audit of {buyer}'s purchase be graded?",
        "Does the purchase file pass audit as satisfactory, or is it unsatisfactory?",
    )),
}

GOODS = ("road salt", "laptops", "water pumps", "office chairs", "signage", "cleaning services", "tyres")


def build(rng: random.Random, w: Wording) -> Case:
    buyer, supplier = two_companies(
        rng, ("District Council", "Water Board", "Health Trust"), ("Supplies Ltd", "Trading Ltd")
    )
    low = rng.choice((5000, 10000, 15000))
    high = rng.choice((40000, 50000, 60000))
    band = rng.choice(("single quote", "three quotes", "open tender"))
    lo, hi = {"single quote": (600, low - 10), "three quotes": (low, high - 10), "open tender": (high, 99000)}[band]
    value = rng.randrange(lo, hi + 1, 10)
    lines = split_amount(rng, value, rng.randint(2, 3))
    goods = rng.sample(GOODS, len(lines))

    has_exception = rng.random() < 0.6
    emergency = rng.random() < 0.45
    written = emergency and rng.random() < 0.75
    exception = has_exception and written
    required = "single quote" if exception else band
    followed = rng.random() < 0.6 or required == "single quote"
    if required == "open tender":
        quotes = rng.randint(2, 7) if followed else rng.randint(1, 4)
    elif required == "three quotes":
        quotes = rng.randint(3, 6) if followed else rng.randint(1, 2)
    else:
        quotes = rng.randint(1, 3)
    advertised = required == "open tender" and followed

    terms = rng.choice((14, 30, 45))
    awarded = random_date(rng)
    issued = plus(awarded, rng.randint(10, 60))
    received = plus(issued, rng.randint(1, 6))
    due = plus(received, terms)
    on_time = rng.random() < 0.6
    paid = plus(received, rng.randint(1, terms) if on_time else terms + rng.randint(1, 20))
    finding = "satisfactory" if followed and on_time else "unsatisfactory"

    case = Case(
        title=w.pick("Procurement audit file", "Purchase review and payment record", "Contract award check",
                     "Purchasing compliance dossier"),
        header=[("Buyer", buyer), ("Supplier", supplier)],
        slots={"buyer": buyer, "supplier": supplier},
    )
    m, d = w.money, w.date
    case.clauses.append((w.pick("Thresholds", "Procedure by value", "Quotation rules", "Value bands"), w.pick(
        f"Contracts under {m(low)} need a single written quote. From {m(low)} up to but not including {m(high)}, "
        f"three written quotes are required. Contracts of {m(high)} or more require an advertised open tender.",
        f"One quote suffices below {m(low)}; three quotes are needed at {m(low)} or more; an open tender, "
        f"publicly advertised, is mandatory at {m(high)} or more.",
        f"The procedure depends on total value: below {m(low)}, one quote; {m(low)} and above, three quotes; "
        f"{m(high)} and above, open advertised tender.",
        f"A contract valued at {m(high)} or more shall be let by advertised open tender; one of {m(low)} or more "
        f"but less than {m(high)} shall require three written quotes; any smaller one, a single written quote.",
    )))
    if has_exception:
        case.clauses.append((w.pick("Emergencies", "Urgent needs", "Exception", "Emergency purchases"), w.pick(
            "Where the chief executive has declared an emergency in writing, a single quote is enough whatever "
            "the value.",
            "A written emergency declaration by the chief executive allows the purchase on one quote, at any value.",
            "Whatever the value, one quote suffices for purchases made under a written emergency declaration of "
            "the chief executive.",
            "Once the chief executive has declared an emergency in writing, only one quote is needed, however "
            "large the contract.",
        )))
    case.clauses.append((w.pick("Payment", "Invoices", "Payment terms", "Settlement of invoices"), w.pick(
        f"Invoices are paid within {terms} days of receipt; the invoice date does not matter. A file is "
        f"satisfactory only if the required procedure was followed and the invoice was paid on time.",
        f"Payment falls due {terms} days after the invoice is received. Audit grades a file satisfactory when "
        f"both the procedure and the payment terms were respected, otherwise unsatisfactory.",
        f"The buyer pays no later than {terms} days from receiving an invoice. Unless the right procedure was "
        f"used and payment was on time, the file is unsatisfactory.",
        f"Payment deadline: {terms} days counted from the day the invoice arrives, not from its date. Audit "
        f"result: satisfactory if the required procedure was followed and payment was on time; else unsatisfactory.",
    )))
    sign_off = rng.choice((20000, 25000, 30000))
    case.extra_clauses.append((w.pick("Approval", "Sign-off", "Authority", "Order approval"), w.pick(
        f"Orders above {m(sign_off)} are signed off by a director.",
        "Every order is countersigned by the finance team.",
        "Orders need finance approval before they are placed.",
        f"Any order exceeding {m(sign_off)} requires a director's signature.",
    )))

    order = "; ".join(f"{g} {m(v)}" for g, v in zip(goods, lines))
    before = plus(awarded, -rng.randint(5, 30))
    if emergency:
        declared = plus(before, -rng.randint(1, 4))
        case.events.append((declared, w.pick(
            f"{d(declared)}: the chief executive declared an emergency in writing after flooding." if written
            else f"{d(declared)}: the operations manager asked for the order to be rushed as urgent.",
            f"On {d(declared)} a written emergency declaration was signed by the chief executive." if written
            else f"On {d(declared)} staff described the need as urgent; no emergency was declared.",
            f"Emergency declared in writing by the chief executive, {d(declared)}." if written
            else f"Urgency noted by the department on {d(declared)} (no formal declaration).",
            f"Following flooding, the chief executive issued a written declaration of emergency on {d(declared)}."
            if written else f"Operations manager's request of {d(declared)}: expedite the order as urgent.",
        )))
    if advertised:
        sourcing = f"an open tender was advertised and {quotes} bids were received"
    else:
        sourcing = f"{quotes} written quotes were" if quotes > 1 else "1 written quote was"
        sourcing += " obtained without advertising"
    case.events.append((before, w.pick(
        f"{d(before)}: {sourcing}.",
        f"By {d(before)} {sourcing}.",
        f"Sourcing closed {d(before)}: {sourcing}.",
        f"As of {d(before)}, {sourcing}.",
    )))
    case.events.append((awarded, w.pick(
        f"{d(awarded)}: contract awarded to {supplier}. Order lines: {order}.",
        f"On {d(awarded)} the order went to {supplier} ({order}).",
        f"Award to {supplier} on {d(awarded)}, covering {order}.",
        f"{supplier} won the contract on {d(awarded)}; lines ordered: {order}.",
    )))
    case.events.append((received, w.pick(
        f"{d(received)}: invoice dated {d(issued)} received from {supplier}.",
        f"On {d(received)} the buyer received {supplier}'s invoice, which is dated {d(issued)}.",
        f"Invoice (dated {d(issued)}) reached the buyer on {d(received)}.",
        f"Received {d(received)}: invoice from {supplier}, issue date {d(issued)}.",
    )))
    case.events.append((paid, w.pick(
        f"{d(paid)}: invoice paid in full.",
        f"On {d(paid)} the invoice was paid.",
        f"Payment made {d(paid)}.",
        f"The invoice was settled in full on {d(paid)}.",
    )))
    budget = plus(awarded, -rng.randint(40, 120))
    budget_amount = rng.randrange(50000, 99000, 1000)
    case.extra_events.append((budget, w.pick(
        f"{d(budget)}: annual budget of {m(budget_amount)} approved for the department.",
        f"On {d(budget)} the department's budget was set at {m(budget_amount)}.",
        f"Departmental budget of {m(budget_amount)} approved {d(budget)}.",
        f"The department was granted an annual budget of {m(budget_amount)} on {d(budget)}.",
    )))

    case.compare("paid_on_time", paid, due)
    case.labels = {
        "contract_value": value,
        "emergency_exception": exception,
        "procedure_required": required,
        "quotes_obtained": quotes,
        "procedure_followed": followed,
        "payment_due_date": due.isoformat(),
        "paid_on_time": on_time,
        "audit_finding": finding,
    }
    case.rule({"emergency_exception": [True]}, {"procedure_required": ["single quote"]})
    case.rule({"procedure_required": ["open tender", "three quotes"]}, {"emergency_exception": [False]})
    case.rule({"procedure_followed": [False]}, {"audit_finding": ["unsatisfactory"]})
    case.rule({"paid_on_time": [False]}, {"audit_finding": ["unsatisfactory"]})
    case.rule({"audit_finding": ["satisfactory"]}, {"procedure_followed": [True], "paid_on_time": [True]})
    case.ask_as_written("award_date", awarded,
                        f"On what date was the contract awarded to {supplier}?", "When was the contract awarded?")
    case.ask_as_written("invoice_issue_date", issued,
                        f"What date does {supplier}'s invoice bear?", "On what date was the invoice issued?")
    case.ask_as_written("invoice_received_date", received,
                        "On what date did the buyer receive the invoice?", "When did the invoice reach the buyer?")
    case.ask_as_written("payment_date", paid,
                        "On what date was the invoice paid?", "When did the buyer pay the invoice?")
    case.ask_as_written("quotes_received", quotes,
                        "How many bids or quotes were received?", "How many quotes or tenders did the buyer obtain?")
    return case


DOMAIN = Domain("procurement", QUESTIONS, build)
