"""Employment contract: probation, the employer's notice of dismissal, a gross-misconduct exception, pay in lieu."""

from __future__ import annotations

import random

from .common import (
    BOOLEAN, DATE, Case, Domain, QuestionSpec, Wording, company, enum, integer, other_than, person, plus,
    random_date,
)

QUESTIONS = {
    "probation_end_date": QuestionSpec(DATE, (
        "On what date does the probation period end?",
        "What is the last day of the employee's probation?",
        "When does {employee}'s probation period finish?",
        "Probation runs until which date?",
    )),
    "notice_during_probation": QuestionSpec(BOOLEAN, (
        "Was notice of dismissal given during the probation period?",
        "Did the employer give notice while the employee was still on probation?",
        "Was {employee} still on probation on the day the notice was given?",
        "Did the notice of dismissal fall within the probation period?",
    )),
    "gross_misconduct": QuestionSpec(BOOLEAN, (
        "Was the employee dismissed for gross misconduct established at a disciplinary hearing?",
        "Does the gross-misconduct exception to notice apply?",
        "Did a disciplinary hearing find {employee} guilty of gross misconduct?",
        "Did the dismissal rest on gross misconduct found at a disciplinary hearing?",
    )),
    "required_notice_days": QuestionSpec(integer(0, 365), (
        "How many days of notice did the employer have to give?",
        "What notice period, in days, applied to this dismissal?",
        "How many days' notice was {employer} required to give {employee}?",
        "What was the minimum number of days' notice the employer owed for this dismissal?",
    )),
    "notice_days_given": QuestionSpec(integer(0, 365), (
        "How many days of notice did the employer actually give?",
        "Counting from the day notice was given to the last day of employment, how many days is that?",
        "How many calendar days passed between {employer}'s notice and the end of {employee}'s employment?",
        "In days, how long was the notice actually given, from the notice date to the last day of employment?",
    )),
    "notice_sufficient": QuestionSpec(BOOLEAN, (
        "Did the employer give at least the notice required?",
        "Was the notice {employee} received long enough?",
        "Did {employer} give {employee} enough notice?",
        "Did the notice given meet or exceed the required notice period?",
    )),
    "pay_in_lieu_days": QuestionSpec(integer(0, 365), (
        "For how many days of missing notice is pay in lieu owed?",
        "How many days of pay in lieu of notice must {employer} pay?",
        "How many days' pay in lieu is {employee} entitled to?",
        "How many days of notice shortfall must be compensated with pay in lieu?",
    )),
    "non_compete": QuestionSpec(enum("yes", "no", "not mentioned"), (
        "Does the contract bind the employee to a non-compete restriction after leaving?",
        "Is there a post-employment non-compete clause?",
        "Is {employee} restricted from working for competitors after the job ends?",
        "Does the contract contain a non-compete obligation that applies once the employee has left?",
    )),
}


def build(rng: random.Random, w: Wording) -> Case:
    employee = person(rng)
    employer = company(rng, "Ltd", "Logistics Ltd", "Engineering plc", "Foods Ltd")
    start = random_date(rng, 2015, 2031)
    probation = rng.choice((60, 90, 120, 180))
    probation_end = plus(start, probation)
    short = rng.choice((7, 14))
    normal = rng.choice((30, 45, 60, 90))
    resign = other_than(rng, (14, 21, 28, 30, 45), short, normal)
    annual_leave = rng.choice((20, 22, 25, 28))

    during = rng.random() < 0.45
    notice_date = plus(start, rng.randint(10, probation)) if during else plus(probation_end, rng.randint(1, 500))
    misconduct = rng.random() < 0.25
    required = 0 if misconduct else short if during else normal
    sufficient = misconduct or rng.random() < 0.5
    if misconduct:
        given = rng.randint(0, 3)
    elif sufficient:
        given = required + rng.randint(0, 15)
    else:
        given = required - rng.randint(1, min(20, required - 1))
    last_day = plus(notice_date, given)
    in_lieu = max(0, required - given)
    non_compete = rng.choice(("yes", "no", "not mentioned"))

    case = Case(
        title=w.pick("Employment contract and termination file", "Contract of employment with HR notes",
                     "Staff contract terms and dismissal record", "HR file: employment terms and termination"),
        header=[("Employer", employer), ("Employee", employee), ("Start date", w.date(start))],
        slots={"employee": employee, "employer": employer},
    )
    m, d = w.money, w.date
    case.clauses.append((w.pick("Probation", "Trial period", "Probationary period", "Initial probation"), w.pick(
        f"The probation period ends {probation} days after the start date. Notice given on or before that day "
        f"is notice during probation.",
        f"Employment is probationary until the day falling {probation} days after the start date, inclusive.",
        f"The first stage of employment is probation, which lasts until {probation} days after the start date "
        f"(that day included).",
        f"Probation: from the start date until the day {probation} days later. Notice given on or before that last "
        f"day is treated as notice during probation.",
    )))
    case.clauses.append((w.pick("Notice by the Employer", "Dismissal", "Ending employment", "Termination"), w.pick(
        f"The Employer may end employment by written notice of at least {short} days during probation and "
        f"{normal} days after it. Notice runs from the day it is given to the last day of employment. Missing "
        f"notice days are paid in lieu. No notice is required where a disciplinary hearing finds gross misconduct.",
        f"During probation the Employer must give {short} days' written notice; afterwards, {normal} days. "
        f"Days of notice count from the notice date to the final working day, and any shortfall is paid as pay "
        f"in lieu. Dismissal for gross misconduct established at a disciplinary hearing needs no notice.",
        f"Unless a disciplinary hearing has found gross misconduct (when no notice is due), the Employer owes "
        f"{short} days' notice in probation and {normal} days' notice later, measured from the notice date to "
        f"the last day of work; each day short is compensated by a day's pay in lieu.",
        f"Written notice by the Employer shall be at least {short} days if given in probation and at least "
        f"{normal} days if given thereafter, counted from the notice date to the final day of employment; notice "
        f"days not given are paid in lieu. Gross misconduct found at a disciplinary hearing permits dismissal "
        f"without notice.",
    )))
    if non_compete != "not mentioned":
        months = rng.choice((3, 6, 12))
        case.clauses.append((w.pick("Restrictions", "After employment", "Competition", "Post-employment"), w.pick(
            f"For {months} months after leaving, the Employee shall not work for a direct competitor.",
            f"The Employee agrees not to join a competing business for {months} months after employment ends.",
            f"A {months}-month ban on working for competitors applies once employment ends.",
            f"Once employment ends, the Employee may not work for any direct competitor until {months} months have "
            f"passed.",
        ) if non_compete == "yes" else w.pick(
            "The Employee is free to work for any business after leaving; no non-compete restriction applies.",
            "Nothing in this contract restricts the Employee from joining a competitor after leaving.",
            "There is no restriction on later work for competitors.",
            "No non-compete applies: after leaving, the Employee may take up work with any business, competitors "
            "included.",
        )))
    case.extra_clauses.append((w.pick("Resignation", "Notice by the Employee", "Leaving", "Resigning"), w.pick(
        f"The Employee may resign by giving {resign} days' written notice.",
        f"To resign, the Employee gives at least {resign} days' notice.",
        f"An Employee who resigns owes {resign} days' notice.",
        f"Resignation by the Employee requires {resign} days' notice in writing.",
    )))
    case.extra_clauses.append((w.pick("Holidays", "Leave", "Annual leave", "Paid holiday"), w.pick(
        f"The Employee is entitled to {annual_leave} days of paid holiday a year.",
        f"Paid annual leave is {annual_leave} days.",
        f"Holiday entitlement: {annual_leave} paid days each year.",
        f"Each year, {annual_leave} days of paid holiday are granted to the Employee.",
    )))

    hearing = plus(notice_date, -rng.randint(1, 10))
    if misconduct:
        case.events.append((hearing, w.pick(
            f"{d(hearing)}: a disciplinary hearing found gross misconduct (falsified expense claims).",
            f"On {d(hearing)} the disciplinary panel found that {employee} had committed gross misconduct.",
            f"Disciplinary hearing of {d(hearing)}: gross misconduct established (theft of stock).",
            f"Gross misconduct (falsified expense claims) was found by a disciplinary hearing held on {d(hearing)}.",
        )))
    elif rng.random() < 0.4:
        case.events.append((hearing, w.pick(
            f"{d(hearing)}: a disciplinary hearing about lateness ended with a written warning only.",
            f"On {d(hearing)} a hearing found no gross misconduct and issued a first warning.",
            f"Disciplinary hearing of {d(hearing)}: allegation of misconduct not upheld.",
            f"A disciplinary hearing on lateness took place on {d(hearing)}; its only outcome was a written warning.",
        )))
    case.events.append((notice_date, w.pick(
        f"{d(notice_date)}: the Employer gave {employee} written notice of dismissal; the last day of employment "
        f"is {d(last_day)}.",
        f"On {d(notice_date)} {employer} handed {employee} a dismissal letter naming {d(last_day)} as the final day.",
        f"Dismissal notice issued {d(notice_date)}, employment ending {d(last_day)}.",
        f"{employee} received written notice of dismissal from the Employer on {d(notice_date)}, with "
        f"{d(last_day)} set as the last day of employment.",
    )))
    review = plus(start, rng.randint(20, 400))
    if review != notice_date:
        raise_amount = rng.randrange(500, 3000, 100)
        case.extra_events.append((review, w.pick(
            f"{d(review)}: salary review; pay raised by {m(raise_amount)} a year.",
            f"On {d(review)} the annual salary went up by {m(raise_amount)}.",
            f"Pay rise of {m(raise_amount)} agreed at the review on {d(review)}.",
            f"A salary review on {d(review)} increased annual pay by {m(raise_amount)}.",
        )))

    case.compare("notice_during_probation", notice_date, probation_end)
    case.compare("notice_sufficient", plus(notice_date, required), last_day)  # no notice owed: the notice date
    case.labels = {
        "probation_end_date": probation_end.isoformat(),
        "notice_during_probation": during,
        "gross_misconduct": misconduct,
        "required_notice_days": required,
        "notice_days_given": given,
        "notice_sufficient": sufficient,
        "pay_in_lieu_days": in_lieu,
        "non_compete": non_compete,
    }
    case.rule({"gross_misconduct": [True]}, {"required_notice_days": [0], "notice_sufficient": [True]})
    case.rule({"gross_misconduct": [False], "notice_during_probation": [True]}, {"required_notice_days": [short]})
    case.rule({"gross_misconduct": [False], "notice_during_probation": [False]}, {"required_notice_days": [normal]})
    case.rule({"notice_sufficient": [True]}, {"pay_in_lieu_days": [0]})
    case.rule({"pay_in_lieu_days": [0]}, {"notice_sufficient": [True]})
    case.ask_as_written("employment_start", start,
                        f"On what date did {employee}'s employment begin?", "When did the employee start work?",
                        "What is the employee's start date?")
    case.ask_as_written("dismissal_notice_date", notice_date,
                        f"On what date was {employee} given notice of dismissal?",
                        "When did the employer hand over the written notice of dismissal?",
                        "What date was the dismissal letter given?")
    case.ask_as_written("last_working_day", last_day,
                        f"What date was set as {employee}'s last day of employment?",
                        "On what date does the employment end, according to the dismissal notice?")
    return case


DOMAIN = Domain("employment", QUESTIONS, build)
