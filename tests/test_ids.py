"""Identifiers: a prefix, then characters drawn uniformly from base62 (the contract's table)."""

from __future__ import annotations

import collections
import math
import os

from fgcpay.domain import ids


def test_identifiers_have_their_prefix_and_length_in_base62() -> None:
    for make, prefix, length in (
        (ids.checkout_session_id, "cs_test_", 24),
        (ids.event_id, "evt_", 24),
        (ids.merchant_id, "mer_", 16),
        (ids.request_id, "req_", 16),
        (ids.api_key_secret, "fp_test_", 32),
    ):
        value = make()
        assert value.startswith(prefix) and len(value) == len(prefix) + length
        assert set(value[len(prefix) :]) <= set(ids.BASE62)
        assert ids.looks_like_id(value, prefix, length)


def test_every_base62_character_is_drawn_as_often_and_nothing_else() -> None:
    # 62 * 3,300 draws: each character about 3,300 times, with a standard deviation of
    # ~57. Mapping all 256 byte values with `% 62` would draw the first eight 25 % more
    # often, some 14 deviations off. Each count must lie within 6 of them, which a
    # uniform draw misses about once in ten million runs. (The bound this replaced, the
    # largest count under 1.1 times the smallest, failed one uniform run in eight.)
    per_character = 3300
    drawn = collections.Counter("".join(ids.random_base62(62) for _ in range(per_character)))
    assert set(drawn) == set(ids.BASE62)
    deviation = math.sqrt(per_character * (1 - 1 / 62))
    assert all(abs(count - per_character) < 6 * deviation for count in drawn.values()), drawn


def test_looks_like_id_refuses_anything_but_base62_of_the_length() -> None:
    body = "a" * 23
    assert ids.looks_like_id("cs_test_" + body + "Z", "cs_test_", 24)
    for odd in ("_", "-", "é", "²", "٣", " "):  # '²' and '٣' are digits to str.isdigit
        assert not ids.looks_like_id("cs_test_" + body + odd, "cs_test_", 24)
    assert not ids.looks_like_id("cs_test_" + body, "cs_test_", 24)
    assert not ids.looks_like_id("sub_test_" + body + "Z", "cs_test_", 24)


def test_a_forked_child_draws_characters_of_its_own() -> None:
    ids.random_base62(1)  # characters are drawn a page at a time: the parent holds some
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child sends its next 64 characters and ends
        os.write(write, ids.random_base62(64).encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert len(child) == 64 and child != ids.random_base62(64)
