"""The home page's chart of the last 30 days' paid volume and refunds, drawn on the server
as SVG: the geometry is computed here and the template writes it out, so the page needs
no script, font or style attribute (colours come from the stylesheet: the hosted page's
CSP has no 'unsafe-inline')."""

from __future__ import annotations

import time
from collections.abc import Sequence

import attrs
from fgcpay.domain.money import MINOR_PER_FGC, format_fgc
from fgcpay.domain.volume import DayVolume

# The drawing's own units (the viewBox); the page scales it to its width, and the
# stylesheet bounds that width so its text stays between about 10 and 16 pixels.
WIDTH, HEIGHT = 360, 190
LEFT, RIGHT, TOP, BOTTOM = 46, 6, 10, 26
STEPS = 4  # grid lines above zero


@attrs.frozen
class Bar:
    x: float
    y: float
    width: float
    height: float
    kind: str  # "paid" or "refunded": the stylesheet's class
    label: str  # its tooltip: "Nov 03: paid 12.50 FGC"


@attrs.frozen
class Tick:
    position: float  # y of a grid line, or x of a date
    label: str
    anchor: str = "end"


@attrs.frozen
class Chart:
    width: int
    height: int
    left: int
    right_edge: int
    baseline: float
    bars: list[Bar]
    grid: list[Tick]
    dates: list[Tick]
    days: list[DayVolume]
    paid_fgc: str
    refunded_fgc: str
    first: str
    last: str
    empty: bool

    def active_days(self) -> list[DayVolume]:
        """The days with a payment or a refund, newest first (the chart's table)."""
        return [d for d in reversed(self.days) if d.paid_minor or d.refunded_minor]


def day_label(day: DayVolume) -> str:
    """`Nov 03`."""
    return time.strftime("%b %d", time.gmtime(day.start_us // 1_000_000))


def nice_step(top_minor: int, steps: int = STEPS) -> int:
    """The smallest of 1, 2 or 5 times a power of ten (in minor units, at least one FGC)
    such that `steps` of it reach `top_minor`."""
    step = MINOR_PER_FGC
    while True:
        for factor in (1, 2, 5):
            if factor * step * steps >= top_minor:
                return factor * step
        step *= 10


def _amount(minor: int) -> str:
    # Axis labels in whole FGC (the step is at least one): "1,000"; tooltips keep cents.
    return f"{minor // MINOR_PER_FGC:,}"


def chart(days: Sequence[DayVolume], currency: str) -> Chart:
    """The chart of `days` (oldest first, one per day, as `volume.every_day` gives)."""
    plot_w = WIDTH - LEFT - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    baseline = float(TOP + plot_h)
    top = max([max(d.paid_minor, d.refunded_minor) for d in days] + [0])
    step = nice_step(top)
    scale = plot_h / (step * STEPS)
    slot = plot_w / max(len(days), 1)
    bar_w = round(slot * 0.4, 2)
    bars: list[Bar] = []
    for index, day in enumerate(days):
        x = LEFT + index * slot + slot * 0.1
        for offset, kind, minor, word in (
            (0.0, "paid", day.paid_minor, "paid"),
            (bar_w, "refunded", day.refunded_minor, "refunded"),
        ):
            if minor <= 0:
                continue
            height = max(round(minor * scale, 2), 1.0)  # a tiny amount stays visible
            label = f"{day_label(day)}: {word} {format_fgc(minor)} {currency}"
            bars.append(
                Bar(round(x + offset, 2), round(baseline - height, 2), bar_w, height, kind, label)
            )
    grid = [
        Tick(round(baseline - i * step * scale, 2), _amount(i * step)) for i in range(STEPS + 1)
    ]
    dates: list[Tick] = []
    if days:
        marks = sorted({0, len(days) // 3, 2 * len(days) // 3, len(days) - 1})
        for index in marks:
            anchor = "start" if index == 0 else "end" if index == len(days) - 1 else "middle"
            x = (
                LEFT
                + index * slot
                + (0 if anchor == "start" else slot if anchor == "end" else slot / 2)
            )
            dates.append(Tick(round(x, 2), day_label(days[index]), anchor))
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        right_edge=WIDTH - RIGHT,
        baseline=baseline,
        bars=bars,
        grid=grid,
        dates=dates,
        days=list(days),
        paid_fgc=format_fgc(sum(d.paid_minor for d in days)),
        refunded_fgc=format_fgc(sum(d.refunded_minor for d in days)),
        first=day_label(days[0]) if days else "",
        last=day_label(days[-1]) if days else "",
        empty=top == 0,
    )
