"""Off/on comparisons in one run: a feature's cost as the ratio of two modes measured in turns.

The machines here are noisy, so a figure worth quoting is a ratio of two runs made under the
same load: each round measures both modes, the first mode first in even rounds and last in odd
ones (so a trend in the machine's load does not favour either), and the summary prints the
medians, their ratio, and the ratio of each round. `bench.retention_bench`,
`bench.metrics_bench`, `bench.time_limit_bench` and `bench.limits_bench` measure this way.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator, Sequence

#: What a round measures: row label -> mode -> one value per round.
Rows = dict[str, dict[str, list[float]]]


def arguments(doc: str | None, default_jobs: int = 20_000) -> argparse.ArgumentParser:
    """A parser with ``--rounds`` and ``--jobs``; the bench adds its own options."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=default_jobs, help="a multiple of 1,000")
    return parser


class Rounds:
    """The turns of an off/on run and what each measured. Iterating gives ``(round, mode)``
    pairs in turn order; `add` keeps a value; `summary` prints the comparison."""

    def __init__(self, modes: Sequence[str], rounds: int, name: str = "") -> None:
        self.modes = list(modes)
        self.rounds = rounds
        #: What the modes switch ("metrics"), shown in each round's line (`say`).
        self.name = name
        self.rows: Rows = {}

    def __iter__(self) -> Iterator[tuple[int, str]]:
        for number in range(1, self.rounds + 1):
            order = self.modes if number % 2 else list(reversed(self.modes))
            for mode in order:
                yield number, mode

    def say(self, number: int, mode: str, text: str) -> None:
        """Print what round ``number`` measured in ``mode``, as it comes."""
        width = max(len(m) for m in self.modes)
        print(
            f"round {number} {self.name + ' ' if self.name else ''}{mode:>{width}}: {text}",
            flush=True,
        )

    def add(self, label: str, mode: str, value: float) -> None:
        self.rows.setdefault(label, {m: [] for m in self.modes})[mode].append(value)

    def summary(self, shapes: dict[str, str] | None = None) -> None:
        summary(list(self.rows.items()), shapes or {}, self.modes)

    def ratios(self, label: str) -> list[float]:
        """``label``'s on/off ratio per round (the last mode over the first), sorted."""
        values = self.rows[label]
        first, last = values[self.modes[0]], values[self.modes[-1]]
        return sorted(b / a for a, b in zip(first, last, strict=True))


def summary(
    rows: list[tuple[str, dict[str, list[float]]]],
    shapes: dict[str, str],
    modes: Sequence[str] = ("off", "on"),
) -> None:
    """Each row's medians per mode and each later mode's ratio to the first, then the first
    row's ratios per round. ``shapes``: a row's number format (default ``.1f``)."""
    base, later = modes[0], list(modes[1:])
    print()
    head = "".join(f"{mode:>12}" for mode in modes)
    print(f"{'':28}{head}" + "".join(f"{mode + '/' + base:>12}" for mode in later))
    for label, values in rows:
        shape = shapes.get(label, ".1f")
        medians = {mode: statistics.median(values[mode]) for mode in modes}
        figures = "".join(f"{medians[mode]:>12{shape}}" for mode in modes)
        ratios = "".join(f"{medians[mode] / medians[base]:>12.2f}" for mode in later)
        print(f"{label:28}{figures}{ratios}")
    first = rows[0][1]
    for mode in later:
        per_round = [a / b for a, b in zip(first[mode], first[base], strict=True)]
        shown = ", ".join(f"{x:.2f}" for x in per_round)
        print(f"{rows[0][0].split(',')[0]} {mode}/{base} per round: {shown}")
