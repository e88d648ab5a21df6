"""Money: FGC amounts as decimal strings on the wire, integer minor units everywhere else.

1 FGC = 100 minor units. No floats anywhere.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal

MINOR_PER_FGC = 100
MAX_MINOR = 1_000_000 * MINOR_PER_FGC  # 1000000.00 FGC
CURRENCY = "FGC"

# The shapes parsing accepts, as published in the OpenAPI document (ECMA-262 and Python
# agree on these). `amount_fgc`: digits with an optional fraction, any leading zeros and
# trailing zeros, at most two significant decimals, above zero and at most 1000000.00.
AMOUNT_FGC_PATTERN = (
    r"^(?:0*[1-9][0-9]{0,5}(?:\.[0-9]{1,2}0*)?"
    r"|0*1000000(?:\.0+)?"
    r"|0+\.(?:0[1-9]|[1-9][0-9]?)0*)$"
)
# `amount_minor`: digits (leading zeros allowed), 1 to 100000000.
AMOUNT_MINOR_PATTERN = r"^0*(?:[1-9][0-9]{0,7}|100000000)$"

# The syntax only; the value rules are checked on the digits, so each gets its message.
# fullmatch, not `$`: in Python `$` also matches before a trailing newline.
_AMOUNT = re.compile(r"([0-9]+)(?:\.([0-9]+))?")
_MINOR = re.compile(r"[0-9]+")
_MAX_WHOLE_DIGITS = len(str(MAX_MINOR // MINOR_PER_FGC))


class AmountError(ValueError):
    """An amount that the contract rejects; the message is fit for a merchant."""


def parse_fgc(value: object) -> int:
    """`"10.5"` -> 1050 minor units.

    Accepts a decimal string with at most two significant decimal places (zeros beyond
    two places are fine: `"10.500"`), above zero and at most 1000000.00. Rejects
    non-strings, signs, exponents, spaces, NaN and anything else.

    Parsed exactly on the digits, never through a decimal context (which rounds past 28
    significant digits: `"12.34999999999999999999999999999"` would become 12.35), and in
    time linear in the length (the body limit bounds it), converting at most 9 digits.
    """
    if not isinstance(value, str):
        raise AmountError('must be a decimal string such as "10.50", not a JSON number')
    match = _AMOUNT.fullmatch(value)
    if not match:
        raise AmountError(
            'must be a decimal string of digits with an optional fraction, such as "10.50"'
        )
    whole = match.group(1).lstrip("0")
    fraction = (match.group(2) or "").rstrip("0")
    if len(fraction) > 2:
        raise AmountError("must have at most two decimal places")
    if len(whole) > _MAX_WHOLE_DIGITS:
        raise AmountError("must be at most 1000000.00")
    return _bounded(int(whole or "0") * MINOR_PER_FGC + int(fraction.ljust(2, "0")))


def parse_minor(value: object) -> int:
    """`"1050"` -> 1050: the deprecated integer-of-minor-units form (exact, like `parse_fgc`)."""
    if not isinstance(value, str):
        raise AmountError('must be an integer string such as "1050", not a JSON number')
    if not _MINOR.fullmatch(value):
        raise AmountError('must be a string of digits (minor units), such as "1050"')
    digits = value.lstrip("0")
    if len(digits) > len(str(MAX_MINOR)):
        raise AmountError("must be at most 100000000 (1000000.00 FGC)")
    return _bounded(int(digits or "0"))


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
