"""Money: FGC amounts as decimal strings on the wire, integer minor units everywhere else.

1 FGC = 100 minor units. No floats anywhere.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

MINOR_PER_FGC = 100
MAX_MINOR = 1_000_000 * MINOR_PER_FGC  # 1000000.00 FGC
CURRENCY = "FGC"

_AMOUNT = re.compile(r"^[0-9]+(?:\.[0-9]+)?$")
_MINOR = re.compile(r"^[0-9]+$")


class AmountError(ValueError):
    """An amount that the contract rejects; the message is fit for a merchant."""


def parse_fgc(value: object) -> int:
    """`"10.5"` -> 1050 minor units.

    Accepts a decimal string with at most two significant decimal places (zeros beyond
    two places are fine: `"10.500"`), above zero and at most 1000000.00. Rejects
    non-strings, signs, exponents, spaces, NaN and anything else.
    """
    if not isinstance(value, str):
        raise AmountError("must be a decimal string such as \"10.50\", not a JSON number")
    if not _AMOUNT.match(value):
        raise AmountError("must be a decimal string of digits with an optional fraction, such as \"10.50\"")
    amount = Decimal(value)
    minor = amount * MINOR_PER_FGC
    if minor != minor.to_integral_value():
        raise AmountError("must have at most two decimal places")
    return _bounded(int(minor))


def parse_minor(value: object) -> int:
    """`"1050"` -> 1050: the deprecated integer-of-minor-units form."""
    if not isinstance(value, str):
        raise AmountError("must be an integer string such as \"1050\", not a JSON number")
    if not _MINOR.match(value):
        raise AmountError("must be a string of digits (minor units), such as \"1050\"")
    return _bounded(int(value))


def _bounded(minor: int) -> int:
    if minor <= 0:
        raise AmountError("must be greater than zero")
    if minor > MAX_MINOR:
        raise AmountError("must be at most 1000000.00")
    return minor


def format_fgc(minor: int) -> str:
    """1050 -> `"10.50"`: the normalized form, always two decimals."""
    sign = "-" if minor < 0 else ""
    whole, cents = divmod(abs(minor), MINOR_PER_FGC)
    return f"{sign}{whole}.{cents:02d}"


def eur_cents(minor: int, eur_cents_per_fgc: Decimal) -> int:
    """The amount in euro cents at the configured rate, rounded half-up."""
    fgc = Decimal(minor) / MINOR_PER_FGC
    return int((fgc * eur_cents_per_fgc).quantize(Decimal(1), rounding=ROUND_HALF_UP))
