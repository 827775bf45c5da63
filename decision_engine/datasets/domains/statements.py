"""Each domain's yes-or-no questions said as statements, both ways.

A hypothesis about a case ("The tenant gave at least the notice the agreement required.") is a yes-or-
no question said as a statement: a clause applied to the facts of a file, as hand-written hypotheses
are. Per question, two phrasings true where its answer is yes and two true where it is no, with the
question's slot names ("{tenant}"); paraphrase drills ask them.
"""

from __future__ import annotations

from typing import NamedTuple


class Said(NamedTuple):
    """A yes-or-no question as statements: true where its answer is yes, and true where it is no."""

    yes: tuple[str, str]
    no: tuple[str, str]


STATEMENTS: dict[str, dict[str, Said]] = {
    "data_breach": {
        "authority_notified_in_time": Said((
            "The supervisory authority was notified within the time limit.",
            "{controller} told the regulator about the breach before the policy's deadline ran out.",
        ), (
            "The supervisory authority was not notified within the time limit.",
            "{controller} told the regulator about the breach only after the policy's deadline had passed.",
        )),
        "high_risk": Said((
            "The breach is a high-risk breach under the policy's definition.",
            "Under the policy, the exposure at {controller} counts as a high-risk breach.",
        ), (
            "The breach is not a high-risk breach under the policy's definition.",
            "Under the policy, the exposure at {controller} falls short of a high-risk breach.",
        )),
        "encryption_exception": Said((
            "The encryption exception to notifying individuals applies to the exposed data.",
            "Because of the encryption exception, {controller} need not notify the individuals affected.",
        ), (
            "The encryption exception to notifying individuals does not apply to the exposed data.",
            "The encryption exception does not relieve {controller} of notifying the individuals affected.",
        )),
    },
    "employment": {
        "notice_during_probation": Said((
            "Notice of dismissal was given during the probation period.",
            "{employee} was still on probation on the day the notice was given.",
        ), (
            "Notice of dismissal was given after the probation period had ended.",
            "By the day the notice was given, {employee}'s probation was already over.",
        )),
        "gross_misconduct": Said((
            "A disciplinary hearing found that {employee} had committed gross misconduct.",
            "The dismissal rests on gross misconduct established at a disciplinary hearing.",
        ), (
            "No disciplinary hearing found that {employee} had committed gross misconduct.",
            "The dismissal does not rest on gross misconduct established at a disciplinary hearing.",
        )),
        "notice_sufficient": Said((
            "The employer gave at least the notice required.",
            "{employer} gave {employee} all the notice the contract calls for.",
        ), (
            "The employer gave less notice than required.",
            "{employer} gave {employee} shorter notice than the contract calls for.",
        )),
    },
    "insurance_claim": {
        "incident_in_period": Said((
            "The loss happened within the period of insurance.",
            "The policy was in force on the day {insured} suffered the loss.",
        ), (
            "The loss happened outside the period of insurance.",
            "The policy was not in force on the day {insured} suffered the loss.",
        )),
        "reported_in_time": Said((
            "The claim was reported within the policy's reporting period.",
            "{insured} told the insurer about the loss in time.",
        ), (
            "The claim was reported after the policy's reporting period had ended.",
            "{insured} told the insurer about the loss too late.",
        )),
        "peril_covered": Said((
            "The cause of the loss is a peril the policy covers.",
            "What damaged {insured}'s property is among the risks insured.",
        ), (
            "The cause of the loss is not a peril the policy covers.",
            "What damaged {insured}'s property is excluded or not among the risks insured.",
        )),
    },
    "kyc_aml": {
        "high_risk_customer": Said((
            "The customer is high risk under the bank's policy.",
            "Under the policy's risk rules, {customer} rates as high risk.",
        ), (
            "The customer is not high risk under the bank's policy.",
            "Under the policy's risk rules, {customer} does not rate as high risk.",
        )),
        "edd_required": Said((
            "Enhanced due diligence is required for this customer.",
            "The bank has to apply enhanced due diligence to {customer}.",
        ), (
            "Enhanced due diligence is not required for this customer.",
            "The bank does not have to apply enhanced due diligence to {customer}.",
        )),
        "id_check_current": Said((
            "The identity verification was recent enough on the onboarding date.",
            "When {customer} was onboarded, the identity check was still within its allowed age.",
        ), (
            "The identity verification was too old on the onboarding date.",
            "When {customer} was onboarded, the identity check was older than the policy allows.",
        )),
    },
    "lease": {
        "exception_applies": Said((
            "The work-relocation exception to the normal notice period applies to the tenant.",
            "{tenant} may rely on the shorter notice period for job transfers.",
        ), (
            "The work-relocation exception to the normal notice period does not apply to the tenant.",
            "{tenant} may not rely on the shorter notice period for job transfers.",
        )),
        "notice_in_time": Said((
            "The tenant gave at least the notice the agreement required.",
            "The notice {tenant} gave was long enough under the lease.",
        ), (
            "The tenant gave less notice than the agreement required.",
            "The notice {tenant} gave was too short under the lease.",
        )),
        "statement_in_time": Said((
            "The landlord sent the deposit statement within the period allowed.",
            "{landlord} settled the deposit before the deadline had passed.",
        ), (
            "The landlord sent the deposit statement after the period allowed.",
            "{landlord} settled the deposit only after the deadline had passed.",
        )),
    },
    "nda": {
        "disclosure_permitted": Said((
            "The disclosure described in the incident was permitted by the agreement.",
            "The agreement allowed {recipient} to share the information as the file describes.",
        ), (
            "The disclosure described in the incident was not permitted by the agreement.",
            "The agreement did not allow {recipient} to share the information as the file describes.",
        )),
        "returned_in_time": Said((
            "The materials were returned or destroyed by the deadline.",
            "{recipient} gave back or destroyed the confidential materials in time.",
        ), (
            "The materials were not returned or destroyed by the deadline.",
            "{recipient} gave back or destroyed the confidential materials too late.",
        )),
    },
    "procurement": {
        "emergency_exception": Said((
            "The emergency exception to the quotation rules applies to this purchase.",
            "{buyer} could rely on the emergency exception instead of obtaining the usual quotations.",
        ), (
            "The emergency exception to the quotation rules does not apply to this purchase.",
            "{buyer} could not rely on the emergency exception to skip the usual quotations.",
        )),
        "procedure_followed": Said((
            "The buyer followed the required procurement procedure.",
            "The award to {supplier} was made in line with the procedure the rules required.",
        ), (
            "The buyer did not follow the required procurement procedure.",
            "The award to {supplier} was made without the procedure the rules required.",
        )),
        "paid_on_time": Said((
            "The invoice was paid by its due date.",
            "{buyer} paid {supplier} within the payment terms.",
        ), (
            "The invoice was paid after its due date.",
            "{buyer} paid {supplier} late, outside the payment terms.",
        )),
    },
    "uav_dispatch": {
        "emergency_mission": Said((
            "The mission was requested by an emergency service.",
            "Mission {mission} is an emergency-service mission in the sense of the operations manual.",
        ), (
            "The mission was not requested by an emergency service.",
            "Mission {mission} is not an emergency-service mission in the sense of the operations manual.",
        )),
        "wind_within_limit": Said((
            "The forecast wind is within the applicable limit.",
            "The wind forecast for mission {mission} is at or below the limit that applies.",
        ), (
            "The forecast wind is above the applicable limit.",
            "The wind forecast for mission {mission} exceeds the limit that applies.",
        )),
        "inspection_current": Said((
            "The drone's inspection is current on the flight date.",
            "On the day of the flight, {drone} is still within its inspection interval.",
        ), (
            "The drone's inspection is overdue on the flight date.",
            "On the day of the flight, {drone} is past its inspection interval.",
        )),
        "pilot_certificate_valid": Said((
            "The assigned pilot's certificate is valid on the flight date.",
            "{pilot} holds a remote pilot certificate that is in force on the day of the flight.",
        ), (
            "The assigned pilot's certificate is not valid on the flight date.",
            "{pilot}'s remote pilot certificate has lapsed by the day of the flight.",
        )),
    },
}
