"""Fault injection per webhook endpoint (contract, "Testing tools"): the endpoint's
`faults` (probabilities, a delay and a seed), their rules, and which faults a delivery
gets, decided from the seed and the delivery's ordinal at its endpoint alone.

The decision is made once, where the delivery is created (the outbox transaction), and
stored with it as a `FaultPlan`: so every process, on either backend, sends the same
delivery with the same faults, and a change of `faults` later applies to deliveries
created from then on (as a change of `enabled_events` does)."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Annotated, Any

import attrs
from pydantic import Field
from typing_extensions import TypedDict

PROBABILITIES = ("duplicate", "reorder", "bad_signature", "stale_timestamp")
FIELDS = (*PROBABILITIES, "delay_ms", "seed")
MAX_DELAY_MS = 30_000
SEED_BOUND = 2**63  # a seed is a signed 64-bit integer
STALE_SECONDS = 600
REORDER_HOLD_SECONDS = 2.0
# What an attempt carried, as the delivery log shows it (`injected`). The first attempt
# carries at most one: the first of this order that applied (see `FaultPlan.injected`).
INJECTED = ("duplicate", "reordered", "delayed", "bad_signature", "stale_timestamp")


@attrs.frozen
class Faults:
    """An endpoint's `faults`: each probability 0..1, `delay_ms` for every first attempt."""

    duplicate: float = 0.0
    reorder: float = 0.0
    bad_signature: float = 0.0
    stale_timestamp: float = 0.0
    delay_ms: int = 0
    seed: int = 0


class FaultsWire(TypedDict):
    duplicate: Annotated[float, Field(ge=0, le=1)]
    reorder: Annotated[float, Field(ge=0, le=1)]
    bad_signature: Annotated[float, Field(ge=0, le=1)]
    stale_timestamp: Annotated[float, Field(ge=0, le=1)]
    delay_ms: Annotated[int, Field(ge=0, le=MAX_DELAY_MS)]
    seed: Annotated[int, Field(ge=-SEED_BOUND, lt=SEED_BOUND)]


FAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        **{
            name: {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": f"The probability that a delivery's first attempt gets `{name}`.",
            }
            for name in PROBABILITIES
        },
        "delay_ms": {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_DELAY_MS,
            "description": "Every first attempt waits this long before it is sent.",
        },
        "seed": {
            "type": "integer",
            "minimum": -SEED_BOUND,
            "maximum": SEED_BOUND - 1,
            "description": "With the delivery's ordinal at the endpoint, decides which "
            "deliveries get which faults.",
        },
    },  # fmt: skip
    "description": (
        "Faults injected into the first attempt of each delivery to this endpoint (test "
        "mode); null for none. Omitted keys are 0. Retries are sent clean. See "
        'docs/webhooks.md, "Fault injection".'
    ),
}


class FaultsError(ValueError):
    """A `faults` value the rules refuse; `field` names where (`faults.duplicate`)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _number(value: Any) -> bool:
    # JSON's true and false are no numbers, though Python's bool is an int.
    return isinstance(value, int | float) and not isinstance(value, bool)


def parse_faults(value: Any) -> Faults | None:
    """`faults` as a request gives it: None (null) or the object; `FaultsError` naming the
    first field at fault (unknown keys first) otherwise."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise FaultsError("faults", "Must be an object (or null for no faults).")
    unknown = sorted(key for key in value if key not in FIELDS)
    if unknown:
        raise FaultsError(
            f"faults.{unknown[0]}"[:80], "Unknown field; allowed: " + ", ".join(FIELDS) + "."
        )
    parsed: dict[str, Any] = {}
    for name in PROBABILITIES:
        if name in value:
            number = value[name]
            if not _number(number) or not math.isfinite(number) or not 0 <= number <= 1:
                raise FaultsError(f"faults.{name}", "Must be a probability: a number from 0 to 1.")
            parsed[name] = float(number)
    if "delay_ms" in value:
        delay = value["delay_ms"]
        if isinstance(delay, float) and delay.is_integer():
            delay = int(delay)
        if not _number(delay) or not isinstance(delay, int) or not 0 <= delay <= MAX_DELAY_MS:
            raise FaultsError(
                "faults.delay_ms",
                f"Must be a whole number of milliseconds from 0 to {MAX_DELAY_MS}.",
            )
        parsed["delay_ms"] = delay
    if "seed" in value:
        seed = value["seed"]
        if not _number(seed) or not isinstance(seed, int) or not -SEED_BOUND <= seed < SEED_BOUND:
            raise FaultsError("faults.seed", "Must be an integer (a signed 64-bit one).")
        parsed["seed"] = seed
    return Faults(**parsed)


def to_json(faults: Faults | None) -> FaultsWire | None:
    if faults is None:
        return None
    return {
        "duplicate": faults.duplicate,
        "reorder": faults.reorder,
        "bad_signature": faults.bad_signature,
        "stale_timestamp": faults.stale_timestamp,
        "delay_ms": faults.delay_ms,
        "seed": faults.seed,
    }


def encode(faults: Faults | None) -> str | None:
    """As stored (JSON text), None for none."""
    wire = to_json(faults)
    return None if wire is None else json.dumps(wire, separators=(",", ":"), sort_keys=True)


def decode(stored: str | None) -> Faults | None:
    if stored is None:
        return None
    return Faults(**json.loads(stored))


# -- which faults a delivery gets -----------------------------------------------------------


@attrs.frozen
class FaultPlan:
    """The faults of one delivery's first attempt, decided when it was created."""

    duplicate: bool = False
    reorder: bool = False
    bad_signature: bool = False
    stale_timestamp: bool = False
    delay_ms: int = 0

    def injected(self, reordered: bool) -> str | None:
        """What the first attempt shows as `injected`: of the faults it carried, the one
        that decides how a receiver should answer (a bad signature, then a stale
        timestamp), else the one of its timing (held back, then delayed). `reordered`:
        whether it was in fact held back (one that came while another was held was not)."""
        if self.bad_signature:
            return "bad_signature"
        if self.stale_timestamp:
            return "stale_timestamp"
        if reordered:
            return "reordered"
        if self.delay_ms:
            return "delayed"
        return None


def draw(seed: int, ordinal: int, fault: str) -> float:
    """A number in [0, 1) that depends only on the seed, the delivery's ordinal at its
    endpoint and the fault: the same on every process, backend and run."""
    digest = hashlib.sha256(f"fgcpay-faults:{seed}:{ordinal}:{fault}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def plan(faults: Faults, ordinal: int) -> FaultPlan | None:
    """The faults of the endpoint's `ordinal`-th delivery (1-based), None when it has none.
    A probability of 1 always applies (a draw is below 1), 0 never. A delivery drawn for
    both a bad signature and a stale timestamp gets the bad signature only, so a receiver's
    refusal has one cause."""

    def hit(name: str) -> bool:
        probability: float = getattr(faults, name)
        return probability > 0 and draw(faults.seed, ordinal, name) < probability

    bad_signature = hit("bad_signature")
    chosen = FaultPlan(
        duplicate=hit("duplicate"),
        reorder=hit("reorder"),
        bad_signature=bad_signature,
        stale_timestamp=hit("stale_timestamp") and not bad_signature,
        delay_ms=faults.delay_ms,
    )
    return None if chosen == FaultPlan() else chosen


def encode_plan(chosen: FaultPlan) -> str:
    """As a delivery stores it: the faults' names, and `delay_ms=N`, space-separated."""
    parts = [name for name in PROBABILITIES if getattr(chosen, name)]
    if chosen.delay_ms:
        parts.append(f"delay_ms={chosen.delay_ms}")
    return " ".join(parts)


def decode_plan(stored: str | None) -> FaultPlan | None:
    if not stored:
        return None
    flags: dict[str, Any] = {}
    for part in stored.split():
        name, _, number = part.partition("=")
        flags[name] = int(number) if number else True
    return FaultPlan(**flags)
