"""How deep a JSON text nests, read without parsing it: the bound that every body is held to
before anything that recurses (the parser, the idempotency fingerprint, the validators)
sees it. A 64 KiB body can nest 32,000 levels, which is past Python's recursion limit."""

from __future__ import annotations

import re

# Contract, "Errors": JSON nested deeper than this is 400 `invalid_json`. The top level
# object is level 1, so `{"metadata": {"a": 1}}` is 2 levels deep.
MAX_JSON_DEPTH = 64

_OPENERS = frozenset(b"[{")
# A JSON string, escapes included: brackets inside one do not nest anything.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(rb"[\[\]{}]")


def depth(text: bytes) -> int:
    """The deepest nesting of arrays and objects in `text` (0 for a scalar), counting only
    brackets outside strings; linear in the text's length and never recursive. Text that
    is not JSON gets a number too (the parser then says what is wrong with it)."""
    deepest = level = 0
    for bracket in _BRACKETS.findall(_STRING.sub(b"", text)):
        if bracket[0] in _OPENERS:
            level += 1
            deepest = max(deepest, level)
        else:
            level -= 1
    return deepest


def too_deep(text: bytes) -> bool:
    """Whether `text` nests deeper than `MAX_JSON_DEPTH`. Most bodies hold fewer brackets
    than that in all, counted in C without the scan."""
    if text.count(b"[") + text.count(b"{") <= MAX_JSON_DEPTH:
        return False
    return depth(text) > MAX_JSON_DEPTH
