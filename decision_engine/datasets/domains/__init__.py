"""Document families for the generated linked compliance groups, one module per domain."""

from __future__ import annotations

from . import data_breach, employment, insurance_claim, kyc_aml, lease, nda, procurement, uav_dispatch
from .common import Domain

ALL: tuple[Domain, ...] = (
    lease.DOMAIN,
    nda.DOMAIN,
    employment.DOMAIN,
    data_breach.DOMAIN,
    kyc_aml.DOMAIN,
    procurement.DOMAIN,
    insurance_claim.DOMAIN,
    uav_dispatch.DOMAIN,
)
