"""The soak's own arithmetic (bench/scenarios/soak.py): its windows, what it counts as
unexpected, its ratios and its stream check. Pure functions, no service."""

from __future__ import annotations

import math

from bench.scenarios.soak import (
    Sample,
    ratios,
    stream_problems,
    table,
    unexpected,
    window_width,
    windows,
)


def ok(at: float, ms: float = 1.0, kind: str = "create") -> Sample:
    return Sample(at, kind, 201, ms, True)


def test_windows_count_rate_latency_rss_and_marks() -> None:
    # Warm-up until 10 s (left out), then two windows of 10 s.
    samples = [ok(5.0, 100.0)]  # in the warm-up: in no window
    samples += [ok(10.0 + i * 0.1, ms=float(i + 1)) for i in range(100)]  # 1..100 ms
    samples += [Sample(21.0, "create", 503, 2.0, False), Sample(22.0, "read", 0, 0.1, False),
                Sample(23.0, "refund", 400, 3.0, False), ok(24.0, 4.0)]  # fmt: skip
    rss = [(12.0, {1: 80.0, 2: 81.0}), (19.0, {1: 82.0, 2: 83.0}), (25.0, {1: 90.0, 3: 40.0})]
    ready = [(11.0, 200), (21.0, 503), (22.0, 0), (23.0, 200)]
    # CPU seconds so far: (at, the machine busy, the service, PostgreSQL, the driver).
    cpu = [(9.0, 100.0, 10.0, 5.0, 1.0), (15.0, 106.0, 12.0, 6.0, 2.0),
           (20.0, 112.0, 13.0, 6.5, 2.5)]  # fmt: skip
    rows = windows(samples, rss, [(21.5, "PostgreSQL restarted")], 10.0, 10.0, 2, ready, cpu, 2)

    first, second = rows
    assert (first.requests, first.rate) == (100, 10.0)
    assert (first.p50, first.p99) == (50.0, 99.0)
    assert first.rss == [82.0, 83.0]  # the window's last sample
    assert (first.unavailable, first.other, first.errors, first.notes, first.unready) == (
        0, {}, 0, [], 0)  # fmt: skip
    assert second.requests == 3  # answered
    assert (second.unavailable, second.other, second.errors, second.unready) == (1, {400: 1}, 1, 2)
    assert second.p99 == 4.0  # the answered: 503 (2 ms), 400 (3 ms), 201 (4 ms)
    assert second.rss == [40.0, 90.0]
    assert second.notes == ["PostgreSQL restarted at 12 s"]
    # 3 CPU seconds over 100 requests; 2 of 12 CPU seconds someone else's.
    assert math.isclose(first.cpu_ms, 30.0) and math.isclose(first.others, 100 / 6)
    assert math.isclose(second.cpu_ms, 500.0) and math.isclose(second.others, 40.0)
    assert "| 0:10 | 0.3 | 3.00 | 4.00 |" in table(rows)


def test_unexpected_allows_503_only_around_restarts_and_no_answer_only_around_the_kill() -> None:
    samples = [
        Sample(99.5, "create", 503, 1.0, False),  # just before the restart: allowed
        Sample(110.0, "create", 503, 1.0, False),  # restart ended at 101, grace 15: allowed
        Sample(117.0, "create", 503, 1.0, False),  # past the grace
        Sample(150.0, "create", 0, 0.2, False, "OSError"),  # during the kill: allowed
        Sample(100.5, "read", 0, 0.2, False, "ConnectionError"),  # during a restart: not
        Sample(130.0, "refund", 500, 1.0, False),  # never allowed
        Sample(131.0, "create", 201, 1.0, True),
    ]
    got = unexpected(samples, [(100.0, 101.0)], (149.0, 152.0), 15.0)
    assert got == {
        "503 outside the restarts": 1,
        "no answer outside the kill (read: ConnectionError)": 1,
        "500 (refund)": 1,
    }
    assert unexpected(samples[-1:], [], None, 15.0) == {}


def test_ratios_compare_the_last_window_with_the_first() -> None:
    rows = windows([ok(0.5, 10.0), ok(1.5, 16.0)], [(0.9, {1: 100.0, 2: 80.0}),
                   (1.9, {1: 95.0, 3: 109.0})], [], 0.0, 1.0, 2)  # fmt: skip
    rss, p99 = ratios(rows)
    assert math.isclose(rss, 1.09) and math.isclose(p99, 1.6)
    empty = windows([], [], [], 0.0, 1.0, 1)
    assert all(math.isnan(x) for x in ratios(empty))


def test_stream_problems_name_missed_repeated_out_of_order_and_unknown() -> None:
    seen = [("e1", "cs_a", 1), ("e2", "cs_b", 1), ("e3", "cs_a", 2), ("e2", "cs_b", 1),
            ("e5", "sub_c", 3), ("e4", "sub_c", 2), ("e9", "cs_d", 1)]  # fmt: skip
    got = stream_problems(seen, {"e1", "e2", "e3", "e4", "e5", "e6"})
    assert got == {"missed": 1, "repeated": 1, "out of order": 1, "unknown": 1}
    assert set(stream_problems(seen[:3], {"e1", "e2", "e3"}).values()) == {0}


def test_window_width_is_a_twelfth_of_the_run_in_steps_of_30_s() -> None:
    assert window_width(60, 0) == 300.0
    assert window_width(10, 0) == 60.0
    assert window_width(3.5, 0) == 30.0
    assert window_width(600, 0) == 300.0
    assert window_width(60, 45.0) == 45.0
