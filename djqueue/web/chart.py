"""The dashboard's history chart, drawn on the server as SVG.

Server-drawn because it is 30 points and two lines: a chart library would be the largest file
either UI ships, one more thing to keep up to date, and a script the page needs before it shows
anything. SVG renders without JavaScript, scales with the page, and the live view refreshes it
by swapping the markup. Every text in it is escaped here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from .i18n import gettext, gettext_lazy

WIDTH, HEIGHT = 800, 236
LEFT, RIGHT, TOP, BOTTOM = 56, 28, 32, 28
#: Each line: its class name, colour and legend (shown in the request's language).
SERIES = (
    ("processed", "#2e7d32", gettext_lazy("processed")),
    ("failed", "#c62828", gettext_lazy("failed")),
)


def history_svg(days: Sequence[str], processed: Sequence[int], failed: Sequence[int]) -> str:
    """Two lines over ``days`` (oldest first), with a scale, date labels, a legend and a hover
    title per day."""
    label = gettext("Processed and failed jobs per day")
    return lines_svg(days, processed, failed, label, short=lambda day: day[5:])


def lines_svg(
    days: Sequence[str],
    processed: Sequence[int],
    failed: Sequence[int],
    label: str,
    short: Callable[[str], str] = lambda point: point,
) -> str:
    """Processed and failed over the points ``days`` (oldest first, each labelled ``short``
    on the axis and in full in its hover title); ``label`` is the chart's accessible name."""
    count = len(days)
    top = nice_ceiling(max([*processed, *failed, 1]))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(n: int) -> float:
        return LEFT + (plot_w * n / (count - 1) if count > 1 else plot_w / 2)

    def y(value: int) -> float:
        return TOP + plot_h - plot_h * value / top

    parts = [_open(label)]
    parts.extend(_scale(top, y))
    label_every = max(1, count // 6)
    for n, day in enumerate(days):
        if (count - 1 - n) % label_every == 0:
            parts.append(
                f'<text x="{x(n):.1f}" y="{HEIGHT - 8}" text-anchor="middle" font-size="11" '
                f'fill="currentColor">{escape(short(day))}</text>'
            )
    for (name, colour, _legend), values in zip(SERIES, (processed, failed), strict=True):
        points = " ".join(f"{x(n):.1f},{y(v):.1f}" for n, v in enumerate(values))
        parts.append(
            f'<polyline class="djqueue-chart-{name}" fill="none" stroke="{colour}" '
            f'stroke-width="2" points="{points}"/>'
        )
    for n, day in enumerate(days):
        title = gettext("%(point)s: %(processed)s processed, %(failed)s failed") % {
            "point": day,
            "processed": f"{processed[n]:,}",
            "failed": f"{failed[n]:,}",
        }
        width = plot_w / max(1, count)
        parts.append(
            f'<rect x="{x(n) - width / 2:.1f}" y="{TOP}" width="{width:.1f}" height="{plot_h}" '
            f'fill="transparent"><title>{escape(title)}</title></rect>'
        )
    for n, (_name, colour, legend) in enumerate(SERIES):
        left = LEFT + n * 100
        parts.append(
            f'<rect x="{left}" y="6" width="10" height="10" fill="{colour}"/>'
            f'<text x="{left + 14}" y="15" font-size="11" fill="currentColor">'
            f"{escape(str(legend))}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def bars_svg(labels: Sequence[str], counts: Sequence[int], what: str) -> str:
    """One bar per label (a histogram's buckets), with a scale, every label under its bar and
    a hover title per bar; ``what`` is the chart's accessible name."""
    count = max(1, len(labels))
    top = nice_ceiling(max([*counts, 1]))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    width = plot_w / count

    def y(value: int) -> float:
        return TOP + plot_h - plot_h * value / top

    parts = [_open(what)]
    parts.extend(_scale(top, y))
    label_every = max(1, count // 13)
    for n, (label, value) in enumerate(zip(labels, counts, strict=True)):
        left = LEFT + n * width
        parts.append(
            f'<rect class="djqueue-bar" x="{left + 1:.1f}" y="{y(value):.1f}" '
            f'width="{max(1.0, width - 2):.1f}" height="{TOP + plot_h - y(value):.1f}" '
            f'fill="{SERIES[0][1]}"><title>{escape(label)}: {value:,}</title></rect>'
        )
        if n % label_every == 0:
            parts.append(
                f'<text x="{left + width / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle" '
                f'font-size="10" fill="currentColor">{escape(label)}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _open(label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'class="djqueue-chart" role="img" aria-label="{escape(label)}">'
    )


def _scale(top: int, y: Callable[[int], float]) -> list[str]:
    """Five horizontal lines from 0 to ``top``, each with its value."""
    return [
        f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(value):.1f}" y2="{y(value):.1f}" '
        'stroke="currentColor" stroke-opacity="0.2" stroke-width="1"/>'
        f'<text x="{LEFT - 6}" y="{y(value) + 4:.1f}" text-anchor="end" font-size="11" '
        f'fill="currentColor">{value:,}</text>'
        for value in (top * step // 4 for step in range(5))
    ]


def nice_ceiling(value: int) -> int:
    """The smallest of 1, 2, 4, 5, 8 or 10 times a power of ten that is at least ``value``, and
    divisible by 4, so the scale's five lines fall on round numbers."""
    magnitude = 1
    while True:
        for factor in (1, 2, 4, 5, 8, 10):
            candidate = factor * magnitude
            if candidate >= value and candidate % 4 == 0:
                return candidate
        magnitude *= 10
