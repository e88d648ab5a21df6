"""The state machines, table-driven: every transition each table allows or refuses."""

from __future__ import annotations

import itertools

import pytest
from fgcpay.domain import checkout, refunds, subscriptions
from fgcpay.domain.states import StateMachine, Transition, TransitionRefused, final_statuses

# Each table's rules, written out once more by hand: the table must say exactly this.
NAMED = {
    "checkout_session": {
        "pay": ({"created"}, "paid"),
        "expire": ({"created"}, "expired"),
    },
    "subscription": {
        "approve": ({"paused"}, "active"),
        "renew": ({"active"}, "active"),
        "decline": ({"active"}, "past_due"),
        "retry_declined": ({"past_due"}, "past_due"),
        "recover": ({"past_due"}, "active"),
        "cancel": ({"paused", "active", "past_due"}, "cancelled"),
        "end": ({"paused", "active", "past_due"}, "ended"),
    },
    "refund": {
        "approve": ({"pending_review"}, "approved"),
        "reject": ({"pending_review"}, "rejected"),
    },
}
ALLOWED = {
    "checkout_session": {("created", "paid"), ("created", "expired")},
    "subscription": {
        ("paused", "active"),
        ("active", "active"),  # a renewal
        ("active", "past_due"),
        ("past_due", "past_due"),  # a retry declined, another to come
        ("past_due", "active"),
        ("paused", "cancelled"),
        ("active", "cancelled"),
        ("past_due", "cancelled"),
        ("paused", "ended"),  # end_date passed before the customer approved
        ("active", "ended"),
        ("past_due", "ended"),
    },
    "refund": {("pending_review", "approved"), ("pending_review", "rejected")},
}
FINAL = {
    "checkout_session": {"paid", "expired"},
    "subscription": {"cancelled", "ended"},
    "refund": {"approved", "rejected"},
}
MACHINES = [checkout.STATES, subscriptions.STATES, refunds.STATES]
PAIRS = [
    pytest.param(
        machine, from_status, to_status, id=f"{machine.resource}:{from_status}->{to_status}"
    )
    for machine in MACHINES
    for from_status, to_status in itertools.product(machine.statuses, repeat=2)
]
NAMED_FROM = [
    pytest.param(machine, name, from_status, id=f"{machine.resource}.{name}:{from_status}")
    for machine in MACHINES
    for name in NAMED[machine.resource]
    for from_status in machine.statuses
]


@pytest.mark.parametrize(("machine", "from_status", "to_status"), PAIRS)
def test_every_pair_of_statuses_is_allowed_or_refused(
    machine: StateMachine, from_status: str, to_status: str
) -> None:
    allowed = (from_status, to_status) in ALLOWED[machine.resource]
    assert machine.allows(from_status, to_status) is allowed


@pytest.mark.parametrize(("machine", "name", "from_status"), NAMED_FROM)
def test_a_named_transition_leaves_only_from_its_sources(
    machine: StateMachine, name: str, from_status: str
) -> None:
    sources, target = NAMED[machine.resource][name]
    transition = machine.transition(name)
    assert (transition.sources, transition.target) == (frozenset(sources), target)
    if from_status in sources:
        assert machine.check(name, from_status) == transition
    else:
        with pytest.raises(TransitionRefused):
            machine.check(name, from_status)


@pytest.mark.parametrize("machine", MACHINES, ids=lambda machine: machine.resource)
def test_each_table_declares_exactly_its_transitions_and_finals(machine: StateMachine) -> None:
    assert {transition.name for transition in machine.transitions} == set(NAMED[machine.resource])
    assert machine.final == FINAL[machine.resource]


def test_checkout_session_table() -> None:
    assert checkout.STATES.transition("pay") == Transition("pay", {"created"}, "paid")
    assert checkout.STATES.transition("expire") == Transition("expire", {"created"}, "expired")
    assert checkout.STATES.final == {"paid", "expired"}
    assert checkout.STATES.sources("paid") == {"created"}
    assert checkout.STATES.sources("created") == frozenset()
    with pytest.raises(LookupError):
        checkout.STATES.transition("refund")


def test_a_table_with_several_sources_and_a_status_reached_several_ways() -> None:
    table = subscriptions.STATES
    assert table.sources("active") == {"paused", "active", "past_due"}
    assert table.sources("cancelled") == {"paused", "active", "past_due"}
    assert table.sources("paused") == frozenset()
    assert final_statuses([checkout.STATES, table]) == {"paid", "expired", "cancelled", "ended"}


@pytest.mark.parametrize(
    ("statuses", "transitions"),
    [
        (("a", "b"), (Transition("go", {"a"}, "c"),)),  # an undeclared target
        (("a", "b"), (Transition("go", {"z"}, "b"),)),  # an undeclared source
        (("a", "b"), (Transition("go", set(), "b"),)),  # no source at all
        (("a", "b"), (Transition("go", {"a"}, "b"), Transition("go", {"b"}, "a"))),  # twice
        (("a", "B'; --"), ()),  # a status name that is not a lower-case word
    ],
)
def test_a_malformed_table_is_refused_when_declared(
    statuses: tuple[str, ...], transitions: tuple[Transition, ...]
) -> None:
    with pytest.raises(ValueError):
        StateMachine("broken", statuses, transitions)
