"""The actor runtime: activation, serialization, passivation, supervision, shutdown."""

from __future__ import annotations

from functools import partial
from typing import Any

import attrs
import pytest
import trio
import trio.testing
from fgcpay.actors import ActorHost, Message
from fgcpay.domain import errors
from fgcpay.storage import DatabaseUnavailable

IDLE = 10.0
FINAL = 100  # a counter at or above it is done with, as a paid session is


# Every message is answered with the counter after it (Boom raises, Hang never answers).
@attrs.frozen
class Add(Message[int]):
    n: int


@attrs.frozen
class Boom(Message[int]):
    pass


@attrs.frozen
class Hang(Message[int]):
    pass


@attrs.frozen
class Outage(Message[int]):
    """Handled while the database is down: its write fails as storage fails then."""


@attrs.frozen
class Held(Message[int]):
    """Handled once `Counter.gate` is set; changes nothing."""


class Counter:
    """A test actor whose state is "persisted" in a dict, like storage would keep it."""

    kind = "counter"

    def __init__(self) -> None:
        self.saved: dict[str, int] = {}
        self.activations = 0  # states loaded: a start, a reactivation or a restart
        self.handled: list[tuple[str, Any]] = []
        self.in_receive = 0
        self.max_in_receive = 0
        self.gate = trio.Event()

    async def activate(self, actor_id: str) -> int:
        self.activations += 1
        return self.saved.get(actor_id, 0)

    def resting(self, state: int) -> bool:
        return state >= FINAL  # as a session once paid

    async def receive(self, actor_id: str, state: int, message: Any) -> tuple[int, Any]:
        self.in_receive += 1
        self.max_in_receive = max(self.max_in_receive, self.in_receive)
        try:
            await trio.lowlevel.checkpoint()  # give other tasks every chance to interleave
            if isinstance(message, Boom):
                raise RuntimeError("boom")
            if isinstance(message, Outage):
                raise DatabaseUnavailable("PostgreSQL is unavailable: OperationalError")
            if isinstance(message, Hang):
                await trio.sleep_forever()
            if isinstance(message, Held):
                await self.gate.wait()
            if isinstance(message, Add):
                if message.n < 0:
                    raise errors.ValidationFailed([errors.FieldError("n", "negative")])
                self.handled.append((actor_id, message))
                state += message.n
                self.saved[actor_id] = state
            return state, state
        finally:
            self.in_receive -= 1


@pytest.fixture
async def host(nursery: trio.Nursery) -> ActorHost:
    actor_host = ActorHost(
        idle_seconds=IDLE, ask_timeout=5.0, mailbox_size=4, restart_limit=3, restart_period=10.0
    )
    await nursery.start(actor_host.run)
    return actor_host


@pytest.fixture
def counter(host: ActorHost) -> Counter:
    behaviour = Counter()
    host.register(behaviour)
    return behaviour


async def test_activation_on_demand_and_serialized_handling(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    assert host.live == 0
    async with trio.open_nursery() as nursery:
        for _ in range(50):
            nursery.start_soon(host.ask, "counter", "a", Add(1))
    assert await host.ask("counter", "a", Add(0)) == 50
    assert counter.max_in_receive == 1  # one message at a time per actor
    assert counter.activations == 1 and host.live == 1


async def test_a_refusal_answers_the_asker_and_keeps_the_actor(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    await host.ask("counter", "a", Add(2))
    with pytest.raises(errors.ValidationFailed):
        await host.ask("counter", "a", Add(-1))
    assert await host.ask("counter", "a", Add(1)) == 3
    assert counter.activations == 1  # not restarted


async def test_idle_actor_passivates_and_reactivates_from_storage(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    await host.ask("counter", "a", Add(5))
    assert host.live == 1
    await trio.sleep(IDLE + 1)
    assert host.live == 0
    assert await host.ask("counter", "a", Add(1)) == 6  # state came back from storage
    assert counter.activations == 2


async def test_messages_racing_passivation_are_delivered_exactly_once(
    host: ActorHost, counter: Counter, mock_clock: trio.testing.MockClock
) -> None:
    sent = 0
    for round_ in range(200):
        # Bring the actor to the very edge of its idle timeout, then send as it passivates.
        await host.tell("counter", "r", Add(1))
        sent += 1
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(IDLE - 0.001 * (round_ % 2))
        # Let the actor's timeout run for 0, 1 or 2 scheduling steps before sending, so
        # the send lands before, during and after its passivation.
        for _ in range(round_ % 3):
            await trio.lowlevel.cancel_shielded_checkpoint()
        await host.tell("counter", "r", Add(1))
        sent += 1
        await trio.testing.wait_all_tasks_blocked()
    assert len(counter.handled) == sent
    assert counter.saved["r"] == sent
    assert counter.activations > 1, "the actor never passivated during the test"


async def test_an_ask_that_passivates_ends_the_actor_it_started_right_after(
    host: ActorHost, counter: Counter, mock_clock: trio.testing.MockClock
) -> None:
    assert await host.ask("counter", "a", Add(2), passivate=True) == 2
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 0  # at once: no time has passed on the mock clock
    assert await host.ask("counter", "a", Add(1)) == 3  # state came back from storage
    assert counter.activations == 2 and host.live == 1
    # Without the option, the actor stays for its idle time as before.
    await trio.testing.wait_all_tasks_blocked()
    mock_clock.jump(IDLE - 0.001)
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 1


async def test_an_actor_in_a_final_state_ends_once_its_mailbox_is_empty(
    host: ActorHost, counter: Counter, mock_clock: trio.testing.MockClock
) -> None:
    assert await host.ask("counter", "a", Add(1)) == 1
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 1  # not final: it stays for its idle time
    assert await host.ask("counter", "a", Add(FINAL)) == FINAL + 1
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 0  # at once: no time has passed on the mock clock
    assert await host.ask("counter", "a", Add(1)) == FINAL + 2  # state came back from storage
    assert counter.activations == 2


async def test_an_actor_in_a_final_state_stays_while_messages_wait(
    host: ActorHost, counter: Counter, mock_clock: trio.testing.MockClock
) -> None:
    counter.saved["a"] = FINAL
    async with trio.open_nursery() as nursery:
        nursery.start_soon(host.ask, "counter", "a", Held())
        await trio.testing.wait_all_tasks_blocked()  # the actor is in Held
        for _ in range(3):
            nursery.start_soon(host.ask, "counter", "a", Add(1))  # waiting behind it
        await trio.testing.wait_all_tasks_blocked()
        counter.gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert counter.saved["a"] == FINAL + 3 and counter.activations == 1  # one activation
    assert host.live == 0


async def test_an_ask_that_passivates_leaves_an_actor_it_did_not_start(
    host: ActorHost, counter: Counter, mock_clock: trio.testing.MockClock
) -> None:
    await host.ask("counter", "a", Add(1))  # a customer's request started it
    assert await host.ask("counter", "a", Add(1), passivate=True) == 2
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 1
    mock_clock.jump(IDLE)
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 0 and counter.activations == 1


async def test_an_ask_that_passivates_keeps_the_actor_while_messages_wait(
    host: ActorHost, counter: Counter, mock_clock: trio.testing.MockClock
) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(host.ask, "counter", "a", Held(), passivate=True))
        await trio.testing.wait_all_tasks_blocked()  # the actor started for Held, is in it
        nursery.start_soon(host.ask, "counter", "a", Add(1))  # and this one waits behind
        await trio.testing.wait_all_tasks_blocked()
        counter.gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert counter.saved["a"] == 1 and host.live == 1  # Add(1) arrived: kept, as usual
    mock_clock.jump(IDLE)
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 0 and counter.activations == 1


async def test_messages_racing_a_passivation_after_a_message_are_delivered_exactly_once(
    host: ActorHost, counter: Counter, mock_clock: trio.testing.MockClock
) -> None:
    activations_per_round = set()
    for round_ in range(100):
        before = counter.activations
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(host.ask, "counter", "r", Add(1), passivate=True))
            # 0-4 scheduling steps later: while it is handled, as it passivates, or after.
            for _ in range(round_ % 5):
                await trio.lowlevel.cancel_shielded_checkpoint()
            nursery.start_soon(host.ask, "counter", "r", Add(1))
        activations_per_round.add(counter.activations - before)
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(IDLE)  # whatever is left ends: the next round starts it afresh
        await trio.testing.wait_all_tasks_blocked()
    assert len(counter.handled) == 200 and counter.saved["r"] == 200
    # Both races happened: the second message found the actor still there, or gone.
    assert activations_per_round == {1, 2}


async def test_a_sweep_of_many_ids_leaves_no_actor_behind(
    host: ActorHost, counter: Counter, mock_clock: trio.testing.MockClock
) -> None:
    ids = [f"id{n}" for n in range(2000)]
    assert not await host.ask_all("counter", ids, Add(1), 32, passivate=True)
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 0  # not 2,000 idle actors for IDLE seconds
    assert len(counter.saved) == 2000 and counter.activations == 2000


async def test_a_handed_over_state_replaces_the_activation_read(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    counter.saved["a"] = 5  # what "storage" holds
    assert await host.ask("counter", "a", Add(1), loaded=40) == 41
    assert counter.activations == 0
    # Only the ask that starts the actor hands its state over: a live actor keeps its own.
    assert await host.ask("counter", "a", Add(1), loaded=100) == 42
    assert not await host.ask_all("counter", ["b", "c"], Add(1), 2, loaded={"b": 10})
    assert (counter.saved["b"], counter.saved["c"], counter.activations) == (11, 1, 1)


async def test_a_crash_restarts_from_storage_not_from_the_handed_over_state(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    counter.saved["a"] = 5
    with pytest.raises(errors.Unavailable):
        await host.ask("counter", "a", Boom(), loaded=40)
    assert await host.ask("counter", "a", Add(1)) == 6
    assert counter.activations == 1


async def test_a_crash_restarts_from_storage_and_answers_503(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    await host.ask("counter", "a", Add(3))
    with pytest.raises(errors.Unavailable):
        await host.ask("counter", "a", Boom())
    assert await host.ask("counter", "a", Add(1)) == 4  # restarted from the saved state
    assert counter.activations == 2


async def test_an_id_crashing_twice_in_the_period_is_quarantined_then_served_again(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    """By design no longer "3 in a row": the second crash of one id within the period
    quarantines it (OTP's budget per id), answered at once with when to retry."""
    counter.saved["a"] = 5
    for _ in range(2):
        with pytest.raises(errors.Unavailable):
            await host.ask("counter", "a", Boom())
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 0 and counter.activations == 2
    asked = trio.current_time()
    with pytest.raises(errors.Unavailable) as refused:
        await host.ask("counter", "a", Add(1))
    assert trio.current_time() == asked  # at once: neither restarted nor left to time out
    assert refused.value.retry_after_seconds == 1  # the first cool-off, 0.5 s, rounded up
    assert counter.activations == 2
    await trio.sleep(1)
    assert await host.ask("counter", "a", Add(1)) == 6  # from storage, after the cool-off


async def _quarantine(host: ActorHost, actor_id: str) -> int:
    """Crash `actor_id` until it is quarantined; the Retry-After its next ask hears."""
    while not host.quarantined("counter", actor_id):
        with pytest.raises(errors.Unavailable):
            await host.ask("counter", actor_id, Boom())
    with pytest.raises(errors.Unavailable) as refused:
        await host.ask("counter", actor_id, Add(1))
    assert refused.value.retry_after_seconds is not None
    return refused.value.retry_after_seconds


async def test_a_poison_id_cools_off_longer_each_time_capped_and_is_forgotten_when_quiet(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    host = ActorHost(
        backoff_seconds=2.0, max_backoff_seconds=8.0, forget_seconds=100.0, restart_limit=100
    )
    await nursery.start(host.run)
    host.register(Counter())
    cool_offs = []
    for _ in range(5):
        cool_offs.append(await _quarantine(host, "poison"))
        await trio.sleep(cool_offs[-1])
    assert cool_offs == [2, 4, 8, 8, 8]  # doubling, capped
    await trio.sleep(100)  # a quiet spell: its record is forgotten
    assert await _quarantine(host, "poison") == 2


async def test_a_kind_within_its_budget_restarts_and_one_beyond_escalates(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    supervisor = host.supervisor
    for n in range(3):  # restart_limit=3 crashes within 10 s: each restarted
        with pytest.raises(errors.Unavailable):
            await host.ask("counter", f"id{n}", Boom())
        assert await host.ask("counter", f"id{n}", Add(1)) == 1
    assert supervisor.escalated() == []
    with pytest.raises(errors.Unavailable):
        await host.ask("counter", "id3", Boom())
    assert supervisor.escalated() == ["actor kind counter"]
    # Escalated, the kind still serves on demand (see the module docstring).
    assert await host.ask("counter", "other", Add(2)) == 2


async def test_a_database_outage_answers_503_to_retry_and_never_escalates_the_kind(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    """A database restart fails every live actor's write at once (bench soak restarted
    PostgreSQL during a clock's renewals: the kind escalated, and readiness answered 503
    for a minute after a 0.3 s restart). An outage is not the actor's fault: each asker
    hears it as the outage it is (a 503 to retry) and the actor reloads, but the kind's
    budget, which is for bugs, is not spent."""
    for n in range(10):  # more than restart_limit=3 within the period
        with pytest.raises(DatabaseUnavailable):
            await host.ask("counter", f"id{n}", Outage())
    assert host.supervisor.escalated() == []
    assert await host.ask("counter", "id0", Add(1)) == 1  # reloaded, served


async def test_crashes_spread_wider_than_the_period_never_escalate(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    for n in range(20):
        with pytest.raises(errors.Unavailable):
            await host.ask("counter", f"id{n}", Boom())
        await trio.sleep(10.0 / 3 + 0.01)  # 3 crashes in any 10 s at most
    assert host.supervisor.escalated() == []


async def test_an_ask_past_its_deadline_cancels_its_handler_and_the_actor_reloads(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    counter.saved["a"] = 5
    assert await host.ask("counter", "a", Add(0)) == 5
    with pytest.raises(errors.Unavailable) as refused:
        await host.ask("counter", "a", Held())  # its gate is never opened
    assert refused.value.retry_after_seconds is not None
    await trio.testing.wait_all_tasks_blocked()
    assert counter.in_receive == 0  # cancelled, not left running
    assert await host.ask("counter", "a", Add(1)) == 6
    assert counter.activations == 2  # its state reloaded after the cancelled handler
    assert host.supervisor.escalated() == []  # a deadline is not a crash


async def test_a_message_whose_asker_gave_up_before_it_began_is_skipped(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    await host.tell("counter", "a", Held())  # a tell has no deadline: it holds the actor
    with pytest.raises(errors.Unavailable):
        await host.ask("counter", "a", Add(7))  # waits behind it past its deadline
    counter.gate.set()
    await trio.testing.wait_all_tasks_blocked()
    assert await host.ask("counter", "a", Add(1)) == 1  # the abandoned Add(7) never ran


async def test_ask_times_out_with_503(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    with pytest.raises(errors.Unavailable):
        await host.ask("counter", "slow", Hang())


async def test_memory_stays_bounded_after_touching_many_ids(
    host: ActorHost, counter: Counter, autojump_clock: trio.testing.MockClock
) -> None:
    for n in range(5000):
        await host.tell("counter", f"id{n}", Add(1))
    await trio.testing.wait_all_tasks_blocked()
    assert host.live == 5000
    await trio.sleep(IDLE + 1)
    assert host.live == 0
    assert len(counter.saved) == 5000


async def test_shutdown_cancels_every_actor(autojump_clock: trio.testing.MockClock) -> None:
    host = ActorHost(idle_seconds=IDLE, ask_timeout=60.0)
    counter = Counter()
    host.register(counter)
    outcomes: list[str] = []
    with trio.CancelScope() as root:
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            for n in range(10):
                await host.tell("counter", f"h{n}", Hang())

            async def asker() -> None:
                try:
                    await host.ask("counter", "h0", Add(1))
                except trio.Cancelled:
                    outcomes.append("cancelled")
                    raise

            nursery.start_soon(asker)
            await trio.testing.wait_all_tasks_blocked()
            assert host.live == 10
            root.cancel()
    assert host.live == 0
    assert outcomes == ["cancelled"]
    with pytest.raises(errors.Unavailable):
        await host.ask("counter", "late", Add(1))


async def test_unknown_kind_is_a_programming_error(
    host: ActorHost, autojump_clock: trio.testing.MockClock
) -> None:
    with pytest.raises(LookupError):
        await host.ask("nope", "x", Add(1))


class Broken:
    """An actor whose state cannot be loaded (its database is down) until `fixed`."""

    kind = "broken"

    def __init__(self) -> None:
        self.activations = 0
        self.fixed = False

    async def activate(self, actor_id: str) -> int:
        self.activations += 1
        if not self.fixed:
            raise RuntimeError("database down")
        return 7

    def resting(self, state: int) -> bool:
        return False

    async def receive(self, actor_id: str, state: int, message: Any) -> tuple[int, Any]:
        return state, state


async def test_a_failing_activation_backs_off_and_answers_503_with_retry_after(
    host: ActorHost, autojump_clock: trio.testing.MockClock
) -> None:
    broken = Broken()
    host.register(broken)
    retry_afters: list[int | None] = []
    started = trio.current_time()
    while trio.current_time() - started < 60:  # a client retrying ten times a second
        with pytest.raises(errors.Unavailable) as refused:
            await host.ask("broken", "a", Add(1))
        retry_afters.append(refused.value.retry_after_seconds)
        await trio.sleep(0.1)
    # Without quarantine every ask restarted it (twice a crash): some 1200 activations.
    assert 3 <= broken.activations <= 10
    assert all(seconds is not None and 1 <= seconds <= 60 for seconds in retry_afters)
    # The database is back: within the longest backoff the actor serves again.
    broken.fixed = True
    await trio.sleep(host.max_backoff_seconds + 1)
    assert await host.ask("broken", "a", Add(1)) == 7


async def test_an_actor_backing_off_answers_at_once(
    host: ActorHost, autojump_clock: trio.testing.MockClock
) -> None:
    broken = Broken()
    host.register(broken)
    with pytest.raises(errors.Unavailable):
        await host.ask("broken", "b", Add(1))
    asked = trio.current_time()
    with pytest.raises(errors.Unavailable) as refused:
        await host.ask("broken", "b", Add(1))
    assert trio.current_time() - asked < host.ask_timeout  # not left to time out
    assert refused.value.retry_after_seconds is not None


async def test_an_unavailable_answer_carries_retry_after() -> None:
    from fgcpay.web.errors import api_error_response
    from quart_trio import QuartTrio

    app = QuartTrio(__name__)
    async with app.app_context():
        response = api_error_response(errors.Unavailable("Busy.", retry_after_seconds=3))
    assert response.status_code == 503
    assert response.headers["Retry-After"] == "3"
    assert (await response.get_json())["code"] == "service_unavailable"
