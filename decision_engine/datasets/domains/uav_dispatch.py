"""Drone (UAV) dispatch: wind limit with an emergency-service exception, inspection currency, pilot licence."""

from __future__ import annotations

import random

from .common import (
    BOOLEAN, DATE, Case, Domain, QuestionSpec, Wording, company, enum, integer, person, plus, random_date,
)

QUESTIONS = {
    "emergency_mission": QuestionSpec(BOOLEAN, (
        "Was the mission requested by an emergency service?",
        "Is this flight an emergency-service mission in the sense of the operations manual?",
        "Did an emergency service request mission {mission}?",
        "Was the request for this mission made by an emergency service?",
    )),
    "wind_limit_kmh": QuestionSpec(integer(0, 200), (
        "What maximum wind speed, in km/h, applies to this flight?",
        "What is the wind limit for this mission in km/h?",
        "Up to what forecast wind speed (km/h) may mission {mission} fly?",
        "Expressed in km/h, which wind speed ceiling governs this flight?",
    )),
    "wind_within_limit": QuestionSpec(BOOLEAN, (
        "Is the forecast wind within the applicable limit?",
        "Does the wind forecast allow the flight?",
        "Is the forecast wind for mission {mission} at or below its limit?",
        "Is the predicted wind speed acceptable under the wind limit that applies?",
    )),
    "inspection_age_days": QuestionSpec(integer(0, 365), (
        "How many days before the flight was the drone last inspected?",
        "How old, in days, is the drone's last inspection on the flight date?",
        "How many days separate {drone}'s last inspection from the flight?",
        "Counting in days, how long before the flight date did the drone's most recent inspection take place?",
    )),
    "inspection_due_date": QuestionSpec(DATE, (
        "By what date was the drone's next inspection due?",
        "Until what date does the last inspection remain valid?",
        "When does {drone}'s inspection run out?",
        "What date marks the end of the drone's current inspection interval?",
    )),
    "inspection_current": QuestionSpec(BOOLEAN, (
        "Is the drone's inspection current on the flight date?",
        "Was the aircraft inspected recently enough to fly?",
        "Is {drone} within its inspection interval for this flight?",
        "On the day of the flight, is the drone's inspection still in date?",
    )),
    "pilot_certificate_valid": QuestionSpec(BOOLEAN, (
        "Is the assigned pilot's certificate valid on the flight date?",
        "Does {pilot} hold an unexpired certificate for the flight?",
        "Is {pilot}'s remote pilot certificate in force on the day of the flight?",
        "Will {pilot} be flying on a certificate that is still valid on the flight date?",
    )),
    "dispatch_decision": QuestionSpec(enum("go", "no-go"), (
        "Should the flight be dispatched: go or no-go?",
        "What is the dispatch decision for mission {mission}?",
        "Is mission {mission} a go or a no-go?",
        "Go or no-go: what should dispatch decide for this flight?",
    )),
}


def build(rng: random.Random, w: Wording) -> Case:
    operator = company(rng, "Aerial Ltd", "Drone Services", "Survey Robotics")
    pilot, other_pilot = person(rng), person(rng)
    drone = f"{rng.choice(('Kite', 'Heron', 'Swift', 'Osprey'))}-{rng.randint(2, 19)}"
    mission = f"M-{rng.randint(100, 999)}"
    normal = rng.choice((28, 30, 36, 40))
    raised = normal + rng.choice((8, 10, 12))
    interval = rng.choice((30, 60, 90))
    max_height = rng.choice((90, 120, 150))
    flight = random_date(rng)

    has_exception = rng.random() < 0.7
    requested_by_service = rng.random() < 0.45
    limit = raised if has_exception and requested_by_service else normal
    wind_ok = rng.random() < 0.65
    wind = rng.randint(max(5, limit - 20), limit) if wind_ok else limit + rng.randint(1, 15)
    current = rng.random() < 0.7
    age = rng.randint(1, interval) if current else interval + rng.randint(1, 40)
    inspected = plus(flight, -age)
    due = plus(inspected, interval)
    valid = rng.random() < 0.8
    expiry = plus(flight, rng.randint(0, 700) if valid else -rng.randint(1, 200))
    go = wind_ok and current and valid

    case = Case(
        title=w.pick("Drone mission dispatch sheet", "UAV flight authorisation record", "Remote flight go/no-go check",
                     "Unmanned aircraft dispatch log"),
        header=[("Operator", operator), ("Mission", mission), ("Aircraft", drone), ("Pilot", pilot),
                ("Flight date", w.date(flight))],
        slots={"mission": mission, "drone": drone, "pilot": pilot},
    )
    m, d = w.money, w.date
    weather = w.pick(
        f"No flight may be dispatched if the forecast wind exceeds {normal} km/h.",
        f"The wind limit is {normal} km/h; a higher forecast means no-go.",
        f"Flights are cancelled when the forecast wind is above {normal} km/h.",
        f"Dispatch is prohibited for any forecast wind exceeding {normal} km/h.",
    )
    if has_exception:
        weather += " " + w.pick(
            f"For missions requested by the fire service, police or coastguard the limit is {raised} km/h.",
            f"Exception: missions tasked by an emergency service (fire, police, coastguard) may fly in winds up "
            f"to {raised} km/h.",
            f"When an emergency service (fire service, police or coastguard) requests the mission, {raised} km/h "
            f"applies instead.",
            f"If the police, the coastguard or the fire service requested the mission, the wind limit rises to "
            f"{raised} km/h.",
        )
    case.clauses.append((w.pick("Weather", "Wind limits", "Meteorology", "Flight conditions"), weather))
    case.clauses.append((w.pick("Airworthiness", "Maintenance", "Inspections", "Aircraft checks"), w.pick(
        f"An aircraft may fly only if its last inspection was no more than {interval} days before the flight.",
        f"Inspections are valid for {interval} days; the flight date must not be later than the inspection date "
        f"plus {interval} days.",
        f"Each drone must be re-inspected every {interval} days or it is grounded.",
        f"Inspection currency: the gap between the last inspection and the flight date shall not exceed "
        f"{interval} days, failing which the aircraft may not fly.",
    )))
    case.clauses.append((w.pick("Crew", "Pilot", "Licensing", "Flight crew"), w.pick(
        "The pilot's remote pilot certificate must be valid on the flight date. A flight is a go only if the "
        "wind, inspection and certificate requirements are all met.",
        "Only pilots with a certificate unexpired on the day may fly. Any failed requirement (wind, inspection or "
        "certificate) makes the flight a no-go.",
        "Dispatch is go when the wind is within limits, the inspection is current and the pilot's certificate "
        "has not expired on the flight date; otherwise no-go.",
        "On the flight date the pilot shall hold a valid remote pilot certificate. Unless the wind, inspection "
        "and certificate conditions are each satisfied, the flight is a no-go.",
    )))
    case.extra_clauses.append((w.pick("Altitude", "Height", "Airspace", "Ceiling"), w.pick(
        f"Flights stay below {max_height} m above ground.",
        f"Maximum height: {max_height} m.",
        f"Do not climb above {max_height} m.",
        f"Keep under {max_height} m above ground level at all times.",
    )))

    requester = (rng.choice(("the county fire service", "the coastguard", "the police")) if requested_by_service
                 else rng.choice(("a roofing contractor", "a film crew", "a farm cooperative (marked urgent)")))
    request = plus(flight, -rng.randint(1, 5))
    case.events.append((request, w.pick(
        f"{d(request)}: mission {mission} requested by {requester}.",
        f"On {d(request)} {requester} asked for mission {mission}.",
        f"Request for mission {mission} received from {requester} on {d(request)}.",
        f"Mission {mission} was requested on {d(request)} by {requester}.",
    )))
    case.events.append((inspected, w.pick(
        f"{d(inspected)}: {drone} passed its scheduled inspection.",
        f"On {d(inspected)} {drone} was last inspected.",
        f"Last inspection of {drone}: {d(inspected)}.",
        f"{drone} successfully completed a scheduled inspection on {d(inspected)}.",
    )))
    case.events.append((flight, w.pick(
        f"{d(flight)}: forecast wind {wind} km/h. {pilot}'s certificate expires on {d(expiry)}.",
        f"On the flight date the forecast wind is {wind} km/h; {pilot} holds a certificate valid until {d(expiry)}.",
        f"Forecast for {d(flight)}: wind {wind} km/h. Pilot certificate expiry: {d(expiry)}.",
        f"The outlook for the flight day, {d(flight)}, puts the wind at {wind} km/h, and {pilot}'s certificate "
        f"expires on {d(expiry)}.",
    )))
    other_inspection = plus(flight, -rng.randint(1, 200))
    case.extra_events.append((other_inspection, w.pick(
        f"{d(other_inspection)}: the spare drone was inspected.",
        f"On {d(other_inspection)} the backup aircraft passed inspection.",
        f"Spare aircraft inspected {d(other_inspection)}.",
        f"The spare drone underwent inspection on {d(other_inspection)}.",
    )))
    other_expiry = plus(flight, rng.randint(-300, 300))
    case.extra_events.append((plus(flight, -6), w.pick(
        f"{d(plus(flight, -6))}: {other_pilot} (standby pilot, certificate expiring {d(other_expiry)}) rostered.",
        f"On {d(plus(flight, -6))} {other_pilot} was put on standby; that certificate expires {d(other_expiry)}.",
        f"Standby pilot {other_pilot} rostered on {d(plus(flight, -6))}, certificate valid to {d(other_expiry)}.",
        f"{other_pilot}, whose certificate expires {d(other_expiry)}, was rostered as standby pilot on "
        f"{d(plus(flight, -6))}.",
    )))
    batteries = rng.randrange(300, 2000, 10)
    case.extra_events.append((plus(flight, -rng.randint(7, 60)), w.pick(
        f"New batteries bought for {m(batteries)}.",
        f"Battery purchase of {m(batteries)} recorded.",
        f"Replacement batteries invoiced at {m(batteries)}.",
        f"Cost of new batteries: {m(batteries)}.",
    )))

    case.compare("wind_within_limit", wind, limit)
    case.compare("inspection_current", flight, due)
    case.compare("pilot_certificate_valid", flight, expiry)
    case.labels = {
        "emergency_mission": requested_by_service,
        "wind_limit_kmh": limit,
        "wind_within_limit": wind_ok,
        "inspection_age_days": age,
        "inspection_due_date": due.isoformat(),
        "inspection_current": current,
        "pilot_certificate_valid": valid,
        "dispatch_decision": "go" if go else "no-go",
    }
    case.rule({"emergency_mission": [True]}, {"wind_limit_kmh": [raised if has_exception else normal]})
    case.rule({"emergency_mission": [False]}, {"wind_limit_kmh": [normal]})
    case.rule({"wind_within_limit": [False]}, {"dispatch_decision": ["no-go"]})
    case.rule({"inspection_current": [False]}, {"dispatch_decision": ["no-go"]})
    case.rule({"pilot_certificate_valid": [False]}, {"dispatch_decision": ["no-go"]})
    case.rule({"dispatch_decision": ["go"]}, {"wind_within_limit": [True], "inspection_current": [True],
                                            "pilot_certificate_valid": [True]})
    case.ask_as_written("mission_request_date", request,
                        f"On what date was mission {mission} requested?", "When was the mission asked for?")
    case.ask_as_written("last_inspection_date", inspected,
                        f"On what date was {drone} last inspected?", "When did the aircraft pass its last inspection?")
    case.ask_as_written("certificate_expiry_date", expiry,
                        f"On what date does {pilot}'s certificate expire?",
                        "When does the pilot's certificate stop being valid?")
    case.ask_as_written("flight_date", flight,
                        "On what date is the flight planned?", "What is the date of the flight?")
    return case


DOMAIN = Domain("uav_dispatch", QUESTIONS, build)
