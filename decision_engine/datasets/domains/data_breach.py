"""Personal-data breach: awareness date, authority deadline, high risk, an encryption exception, a file rating."""

from __future__ import annotations

import random

from .common import (
    BOOLEAN, DATE, Case, Domain, QuestionSpec, Wording, enum, integer, plus, random_date, two_companies,
)

QUESTIONS = {
    "awareness_date": QuestionSpec(DATE, (
        "On what date did the organisation become aware of the breach, as the policy defines awareness?",
        "From which date do the policy's notification time limits run?",
        "When did {controller} become aware of the breach for the purposes of the policy?",
        "What date counts as the awareness date for this breach under the policy?",
    )),
    "records_affected": QuestionSpec(integer(0, 100000), (
        "How many records in total were exposed in the breach?",
        "What is the total number of affected records across all exposed data sets?",
        "How many people's records did {controller} lose control of in all?",
        "Altogether, how many records did the breach expose?",
    )),
    "authority_deadline": QuestionSpec(DATE, (
        "By what date did the supervisory authority have to be notified?",
        "What was the last day for notifying the authority?",
        "What was {controller}'s deadline for telling the supervisory authority?",
        "What was the latest date on which the breach could be reported to the supervisory authority in time?",
    )),
    "authority_notified_in_time": QuestionSpec(BOOLEAN, (
        "Was the supervisory authority notified within the time limit?",
        "Did {controller}'s notification to the authority meet the policy deadline?",
        "Did {controller} notify the regulator on time?",
        "Was the breach reported to the supervisory authority by the deadline?",
    )),
    "high_risk": QuestionSpec(BOOLEAN, (
        "Is the breach a high-risk breach under the policy's definition?",
        "Do the exposed data make this a high-risk breach?",
        "Does the policy treat {controller}'s breach as high risk?",
        "Should this breach be classified as high risk according to the policy?",
    )),
    "encryption_exception": QuestionSpec(BOOLEAN, (
        "Does the encryption exception to notifying individuals apply to the exposed data?",
        "Are the conditions of the encryption exception (strong encryption, key not compromised) met?",
        "Does the policy's encryption exception cover {controller}'s exposed file?",
        "Is the exposed data exempt from notice to individuals because of the encryption exception?",
    )),
    "individuals_notified_in_time": QuestionSpec(enum("yes", "no", "not required"), (
        "Were the affected individuals notified within the required time, or was notice not required?",
        "Did notification of individuals happen in time (or was none needed)?",
        "Did {controller} tell the affected people on time, if it had to?",
        "Did notice to the affected individuals go out within the deadline, or was no such notice required?",
    )),
    "rating": QuestionSpec(enum("compliant", "non-compliant"), (
        "How should the audit rate this breach file?",
        "Is {controller}'s handling of the breach compliant or non-compliant under the rating rule?",
        "What rating does {controller}'s breach response earn?",
        "What audit outcome should be recorded for this file: compliant or non-compliant?",
    )),
}

HIGH_RISK_DATA = ("passwords", "passport numbers", "payment card numbers", "health records")
LOW_RISK_DATA = ("names", "email addresses", "postcodes", "newsletter preferences", "order histories")


def build(rng: random.Random, w: Wording) -> Case:
    controller, processor = two_companies(rng, ("Retail plc", "Energy Ltd", "Clinics Ltd"), ("Hosting Ltd", "Cloud AG"))
    authority_days = rng.choice((3, 4, 5))
    people_days = rng.choice((7, 10, 14))
    register_days = rng.choice((5, 10))

    incident = random_date(rng)
    detected = plus(incident, rng.randint(1, 10))
    aware = plus(detected, rng.randint(1, 4))
    authority_deadline = plus(aware, authority_days)
    authority_on_time = rng.random() < 0.6
    reported = plus(aware, rng.randint(0, authority_days) if authority_on_time else authority_days + rng.randint(1, 6))

    high_risk = rng.random() < 0.6
    exposed = rng.sample(LOW_RISK_DATA, 2)
    if high_risk:
        exposed.insert(rng.randint(0, 2), rng.choice(HIGH_RISK_DATA))
    has_exception = rng.random() < 0.7
    encrypted = rng.random() < 0.5
    key_leaked = encrypted and rng.random() < 0.3
    exception = has_exception and encrypted and not key_leaked
    required = high_risk and not exception
    customers, staff = rng.randrange(200, 60000, 10), rng.randrange(20, 4000, 5)
    if required:
        people_on_time = rng.random() < 0.6
        status = "yes" if people_on_time else "no"
        told = plus(aware, rng.randint(1, people_days) if people_on_time else people_days + rng.randint(1, 12))
    else:
        status = "not required"
        told = None
    rating = "compliant" if authority_on_time and status != "no" else "non-compliant"

    case = Case(
        title=w.pick("Data breach notification review", "Breach response audit file",
                     "Personal data incident - compliance check", "Breach file: notification audit"),
        header=[("Controller", controller), ("Processor", processor)],
        slots={"controller": controller},
    )
    m, d = w.money, w.date
    case.clauses.append((w.pick("Awareness", "When time starts", "Start of time limits", "Clock start"), w.pick(
        "The organisation becomes aware of a breach on the day its Privacy Office confirms that personal data "
        "were compromised. All time limits run from awareness.",
        "Time limits start on the day the Privacy Office confirms the compromise of personal data (awareness), "
        "not on the day of the incident or its discovery by a processor.",
        "Awareness means confirmation by the Privacy Office that personal data were affected; every deadline "
        "below counts from that day.",
        "Time limits in this policy shall run from awareness, being the day the Privacy Office confirms a "
        "compromise of personal data.",
    )))
    case.clauses.append((w.pick("Authority", "Regulator", "Supervisory authority", "Notifying the authority"), w.pick(
        f"The supervisory authority must be notified within {authority_days} days of awareness.",
        f"Notify the authority no later than {authority_days} days after awareness.",
        f"The regulator is told within {authority_days} calendar days from awareness.",
        f"Within {authority_days} days of awareness, the breach shall be reported to the supervisory authority.",
    )))
    individuals = w.pick(
        f"If the data include passwords, passport numbers, payment card numbers or health records, the breach is "
        f"high risk and the affected individuals must be told within {people_days} days of awareness.",
        f"A breach exposing passwords, passport numbers, payment card numbers or health records is high risk; "
        f"individuals are then notified no later than {people_days} days after awareness.",
        f"High risk means the exposed data contain passwords, passport numbers, card numbers or health records. "
        f"For a high-risk breach, affected people are informed within {people_days} days from awareness.",
        f"Exposed passwords, passport numbers, payment card numbers or health records make a breach high risk; "
        f"each affected individual must then get notice within {people_days} days of awareness.",
    )
    if has_exception:
        individuals += " " + w.pick(
            "Individuals need not be told if the data were strongly encrypted and the key was not compromised.",
            "Exception: no notice to individuals is needed for strongly encrypted data whose key stayed secure.",
            "Strong encryption with an uncompromised key removes the duty to notify individuals.",
            "Where the data were strongly encrypted and the key was not compromised, notice to individuals may be "
            "omitted.",
        )
    case.clauses.append((w.pick("Individuals", "Data subjects", "Affected people", "Telling individuals"), individuals))
    case.clauses.append((w.pick("Rating", "Audit rating", "Outcome", "Compliance grade"), w.pick(
        "A file is compliant only if every required notification was made in time; otherwise non-compliant.",
        "Audit rates the file compliant when all required notices met their deadlines, non-compliant if not.",
        "Any required notification that was late or missing makes the file non-compliant; else compliant.",
        "Compliant: every required notification went out on time. Otherwise: non-compliant.",
    )))
    case.extra_clauses.append((w.pick("Register", "Breach log", "Recording", "Breach records"), w.pick(
        f"Every breach is entered in the breach register within {register_days} business days.",
        f"The breach register is updated within {register_days} business days of awareness.",
        f"All breaches go into the register within {register_days} business days.",
        f"Within {register_days} business days, each breach shall be recorded in the breach register.",
    )))

    case.events.append((incident, w.pick(
        f"{d(incident)}: a misconfigured export made a database backup publicly readable.",
        f"On {d(incident)} a configuration error exposed a backup file to the internet.",
        f"Backup bucket left publicly readable from {d(incident)}.",
        f"A database backup was made publicly readable by a misconfigured export on {d(incident)}.",
    )))
    contents = ", ".join(exposed[:-1]) + " and " + exposed[-1]
    protection = ""
    if encrypted:
        protection = " The file was encrypted with AES-256" + (
            "; its key was stored in the same bucket and was also exposed." if key_leaked
            else "; its key stayed in a separate vault with no sign of access."
        )
    else:
        protection = " The file was not encrypted."
    case.events.append((detected, w.pick(
        f"{d(detected)}: {processor} noticed the exposure. The backup held {contents} of {customers:,} customers "
        f"and {staff:,} staff.{protection}",
        f"On {d(detected)} {processor} spotted the problem. Exposed: {contents}, for {customers:,} customer "
        f"records and {staff:,} staff records.{protection}",
        f"Exposure found by {processor} on {d(detected)}; data: {contents} ({customers:,} customer and "
        f"{staff:,} employee records).{protection}",
        f"{processor} detected the exposure on {d(detected)}; the backup contained {contents} of "
        f"{customers:,} customers and {staff:,} staff.{protection}",
    )))
    case.events.append((aware, w.pick(
        f"{d(aware)}: the Privacy Office confirmed that personal data were compromised.",
        f"On {d(aware)} the Privacy Office confirmed the personal data breach.",
        f"Privacy Office confirmation of the compromise: {d(aware)}.",
        f"The Privacy Office confirmed on {d(aware)} that personal data had been compromised.",
    )))
    case.events.append((reported, w.pick(
        f"{d(reported)}: the supervisory authority was notified.",
        f"On {d(reported)} the breach was reported to the authority.",
        f"Notification sent to the regulator on {d(reported)}.",
        f"Supervisory authority: notification made {d(reported)}.",
    )))
    if told is not None:
        case.events.append((told, w.pick(
            f"{d(told)}: affected individuals were emailed.",
            f"On {d(told)} letters went to the affected individuals.",
            f"Individuals informed of the breach on {d(told)}.",
            f"An email about the breach was sent to the affected individuals on {d(told)}.",
        )))
    invoice = plus(aware, rng.randint(2, 20))
    fee = rng.randrange(2000, 20000, 100)
    case.extra_events.append((invoice, w.pick(
        f"{d(invoice)}: forensic firm invoiced {m(fee)} for its investigation.",
        f"On {d(invoice)} the forensic investigators sent an invoice of {m(fee)}.",
        f"Forensics invoice dated {d(invoice)}: {m(fee)}.",
        f"For its investigation, the forensic firm billed {m(fee)} on {d(invoice)}.",
    )))

    case.compare("authority_notified_in_time", reported, authority_deadline)
    case.labels = {
        "awareness_date": aware.isoformat(),
        "records_affected": customers + staff,
        "authority_deadline": authority_deadline.isoformat(),
        "authority_notified_in_time": authority_on_time,
        "high_risk": high_risk,
        "encryption_exception": exception,
        "individuals_notified_in_time": status,
        "rating": rating,
    }
    case.rule({"high_risk": [False]}, {"individuals_notified_in_time": ["not required"]})
    case.rule({"encryption_exception": [True]}, {"individuals_notified_in_time": ["not required"]})
    case.rule({"authority_notified_in_time": [False]}, {"rating": ["non-compliant"]})
    case.rule({"individuals_notified_in_time": ["no"]}, {"rating": ["non-compliant"]})
    case.rule({"rating": ["compliant"]}, {"authority_notified_in_time": [True]})
    case.rule({"individuals_notified_in_time": ["yes", "no"]}, {"high_risk": [True], "encryption_exception": [False]})
    case.ask_as_written("incident_date", incident,
                        "On what date did the exposure of the backup begin?", "When did the incident happen?",
                        "On what date was the backup made publicly readable?")
    case.ask_as_written("detection_date", detected,
                        f"On what date did {processor} notice the exposure?", "When was the exposure detected?")
    case.ask_as_written("authority_notified_date", reported,
                        "On what date was the supervisory authority notified?",
                        "When was the breach reported to the regulator?")
    if told is not None:
        case.ask_as_written("individuals_told_date", told,
                            "On what date were the affected individuals informed?",
                            "When did the affected people hear about the breach?")
    return case


DOMAIN = Domain("data_breach", QUESTIONS, build)
