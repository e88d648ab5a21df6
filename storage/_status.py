"""The status condition of a conditional write, built from a state machine's table."""

from __future__ import annotations

from fgcpay.domain.states import Transition


def status_in(transition: Transition) -> str:
    """`status IN (...)` over the statuses `transition` leaves from.

    The names are written as literals, not parameters: they are the table's own
    lower-case words (checked when it is declared), and a literal lets a partial index
    on that status (`WHERE status = 'created'`) serve the query.
    """
    sources = sorted(transition.sources)
    if len(sources) == 1:
        return f"status = '{sources[0]}'"
    return "status IN (" + ", ".join(f"'{source}'" for source in sources) + ")"
