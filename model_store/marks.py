"""Punctuation between a number's digits: the decimal point, the comma, the colon of a time, the minus.

A reader that leaves them out answers "125" for 12.5 and "42" for -42: wrong by a factor of ten or a
sign, and sure of it. No model here has seen them, so they are told apart by their shape and where they
sit, measured against their line's digits (h: the digits' height from their top to their baseline, w:
the pen's stroke width):

    .  a dot: roundish, at most DOT_SIZE h across, its centre on the baseline
    ,  a short stroke from the baseline down: taller than a dot, the more so the less it reaches under,
       and under it or longer one way than across (a typeface's point is round)
    :  two dots one over the other, the upper one about halfway up the digits, the lower one lower
    -  a flat stroke of one pen width halfway up the digits, MINUS_LENGTH h long

each drawn with the pen (PEN_MADE, PEN_STROKE: thinner is dust or a printed tick) and standing in a gap
between two digits (a minus also just before the first digit). Anything else small (a full stop after
the number, a piece of a digit over its columns) is no mark: it is left to the digits' grouping as
before. ``spell`` puts the marks between the digits the reading chose; a mark left at the start or the
end of a line of digits is not read. The thresholds were set on the ``marks`` family of ``training.numbers``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .mnist_box import stroke_width
from .parts import Part

BODY = 0.5  # a component at least this share of its line's tallest one is a digit's body
DOT_SIZE = 0.3  # a dot's box side is at most this share of h (or DOT_WIDTHS stroke widths) ...
DOT_WIDTHS = 2.5
DOT_ASPECT = 2.2  # ... and at most this much longer one way than the other
BASELINE = (0.72, 1.15)  # a dot's centre sits this far down the digits (0 their top, 1 their baseline)
MIDDLE = (0.3, 0.72)  # a minus's centre
COLON = (0.1, 0.65)  # a colon's upper dot's centre ...
COLON_LOW = (0.5, 1.15)  # ... and its lower one's (a clock's and some writers' sit over the baseline) ...
COLON_APART = 0.25  # ... at least this much lower
COMMA_FROM = 0.6  # a comma starts at least this far down the digits ...
COMMA_SIZE = (0.5, 0.5)  # ... is at most this tall and wide (times h) ...
COMMA_TALL = 1.75  # ... and ends on the baseline or under it, at least this tall in stroke widths, ...
COMMA_DEEP = 4.0  # ... counting this many for every line height its end reaches under the baseline (a
# dot is about one stroke width across and sits on the baseline) ...
COMMA_UNDER = 0.06  # ... and it reaches this far (times h) under the baseline or its ink is COMMA_LONG
COMMA_LONG = 1.5  # times longer one way than across (its principal axes): a typeface's point, up to
# two of its hairline-thinned stroke widths tall, is round or square and sits on the baseline (1.0-1.3);
# a comma's tail makes it 1.7-3.9
MINUS_LENGTH = (0.25, 1.2)  # a minus is this long (times h) ...
MINUS_FLAT = 1.5  # ... at least this many times longer than it is high
MINUS_THICK = 2.5  # ... and at most this many stroke widths high (one stroke)
MINUS_REACH = 1.0  # a sign is at most this far (times h) before its number's first digit
FREE = 0.35  # at most this share of a mark's columns may lie over a digit's
PEN_MADE = 0.6  # every mark's box is at least this many stroke widths across (less: dust) ...
PEN_STROKE = 0.35  # ... and its own stroke this many (a dot's is about half its size; a printed tick's
# with a bit of its line is a pixel)


@dataclass(frozen=True, slots=True)
class Mark:
    char: str  # ".", ",", ":" or "-"
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive) in the picture's own pixels
    line: int  # the line of writing it sits on

    @property
    def x(self) -> float:
        return (self.box[0] + self.box[2]) / 2


@dataclass(frozen=True)
class _Metrics:
    """One line of digits: each digit's components as grouped, its bodies (the components at least
    BODY of the tallest one's height), the digits' top, baseline, height and extent, and the pen's width
    (measured only when a line has a candidate mark: most have none)."""

    digits: list[list[Part]]
    bodies: list[Part]
    labels: np.ndarray
    top: float
    base: float
    height: float
    left: float  # the first digit's first column less a sign's reach, and the last digit's end
    right: float

    @functools.cached_property
    def pen(self) -> float:
        return float(np.median([_stroke(b, self.labels) for b in self.bodies]))

    def down(self, y: float) -> float:
        """How far down the digits a row is: 0 at their top, 1 on their baseline."""
        return (y - self.top) / self.height

    def near(self, c: Part) -> bool:
        """A component in the line's band, from a sign's reach before its first digit to its last one."""
        cx, cy = (c.x0 + c.x1) / 2, (c.y0 + c.y1) / 2
        return self.left <= cx <= self.right and -0.2 <= self.down(cy) <= 1.5

    def spans(self, *parts: Part) -> list[tuple[int, int]]:
        """Each digit's columns without these parts (a dot that the grouping joined to the digit beside
        it is not that digit's ink)."""
        out, own = [], {p.labels[0] for p in parts}
        for comps in self.digits:
            rest = [c for c in comps if c.labels[0] not in own]
            if rest:
                out.append((min(c.x0 for c in rest), max(c.x1 for c in rest)))
        return out

    def free(self, *parts: Part) -> bool:
        """Whether the parts stand in a gap, not over or under a digit's columns (a piece of a digit
        that a printed box cut off lies over the rest of it)."""
        spans = self.spans(*parts)
        return all(
            max((min(p.x1, b) - max(p.x0, a) for a, b in spans), default=0) <= FREE * p.width for p in parts
        )

    def between(self, *parts: Part) -> bool:
        centre, spans = (parts[-1].x0 + parts[-1].x1) / 2, self.spans(*parts)
        return any(b <= centre for _, b in spans) and any(a >= centre for a, _ in spans)

    def before_first(self, part: Part) -> bool:
        first = min((a for a, _ in self.spans(part)), default=part.x1)
        return (part.x0 + part.x1) / 2 < first and first - part.x1 <= MINUS_REACH * self.height


def find_marks(
    components: list[Part], lines: list[list[Part]], labels: np.ndarray
) -> list[tuple[str, list[Part], int]]:
    """(mark, its components, the label of a digit's stroke on its line) for each mark found on the
    lines of digits. ``components``: every connected stroke, specks too; ``lines``: the grouped digits."""
    by_label = {c.labels[0]: c for c in components}
    found: list[tuple[str, list[Part], int]] = []
    taken: set[int] = set()
    for line in lines:
        metrics = _metrics([[by_label[label] for label in group.labels] for group in line], labels)
        bodies = {c.labels[0] for c in metrics.bodies}
        near = [c for c in components if c.labels[0] not in bodies and metrics.near(c)]
        near = [c for c in near if _pen_made(c, metrics)]
        for char, parts in _marks(near, metrics):
            if not taken & {p.labels[0] for p in parts}:
                taken |= {p.labels[0] for p in parts}
                found.append((char, parts, metrics.digits[0][0].labels[0]))
    return found


def _metrics(groups: list[list[Part]], labels: np.ndarray) -> _Metrics:
    """The line's measures, from its bodies."""
    members = [c for comps in groups for c in comps]
    tallest = max(c.height for c in members)
    bodies = [c for c in members if c.height >= BODY * tallest]
    top = float(np.median([b.y0 for b in bodies]))
    base = float(np.median([b.y1 for b in bodies]))
    height = max(base - top, 1.0)
    digits = [g for g in groups if max(c.y1 for c in g) - min(c.y0 for c in g) >= BODY * height]
    digits.sort(key=lambda g: min(c.x0 for c in g))
    left = min(c.x0 for g in digits for c in g) - MINUS_REACH * height
    right = max(c.x1 for g in digits for c in g)
    return _Metrics(digits, bodies, labels, top, base, height, left, right)


def _stroke(c: Part, labels: np.ndarray) -> float:
    """A component's mean stroke width."""
    return stroke_width(np.pad(labels[c.y0 : c.y1, c.x0 : c.x1] == c.labels[0], 1))


def _pen_made(c: Part, m: _Metrics) -> bool:
    """Whether a component is as thick as the pen makes it: its box and its stroke (a printed tick
    with a bit of its line, a hair of dust, is a pixel thick however long)."""
    return min(c.width, c.height) >= PEN_MADE * m.pen and _stroke(c, m.labels) >= PEN_STROKE * m.pen


def _marks(near: list[Part], m: _Metrics) -> list[tuple[str, list[Part]]]:
    """The marks among a line's small components that stand in a gap of its digits."""
    dots = [c for c in near if _dot(c, m)]
    low = [c for c in dots if _centred(c, m, BASELINE)]
    out: list[tuple[str, list[Part]]] = []
    used: set[int] = set()
    for c in (c for c in dots if _centred(c, m, COLON_LOW)):  # a colon: a dot halfway up over a lower one
        for high in dots:
            over = min(c.x1, high.x1) - max(c.x0, high.x0)
            up = (
                _centred(high, m, COLON)
                and m.down((c.y0 + c.y1) / 2) - m.down((high.y0 + high.y1) / 2) >= COLON_APART
            )
            if over > 0 and up and id(high) not in used and m.free(high, c) and m.between(high, c):
                out.append((":", [high, c]))
                used |= {id(high), id(c)}
                break
    on_baseline = {id(c) for c in low}
    for c in near:
        if id(c) in used or not m.free(c):
            continue
        if _comma(c, m) and m.between(c):
            out.append((",", [c]))
        elif id(c) in on_baseline and m.between(c):
            out.append((".", [c]))
        elif _minus(c, m) and (m.between(c) or m.before_first(c)) and not _stacked(c, near, m):
            out.append(("-", [c]))
    return out


def _centred(c: Part, m: _Metrics, band: tuple[float, float]) -> bool:
    """Whether a component's centre lies within ``band`` down the digits (0 their top, 1 their baseline)."""
    return band[0] <= m.down((c.y0 + c.y1) / 2) <= band[1]


def _dot(c: Part, m: _Metrics) -> bool:
    big, small = max(c.width, c.height), min(c.width, c.height)
    return big <= max(DOT_SIZE * m.height, DOT_WIDTHS * m.pen) and big <= DOT_ASPECT * small


def _comma(c: Part, m: _Metrics) -> bool:
    tall, wide = COMMA_SIZE
    small = m.down(c.y0) >= COMMA_FROM and c.height <= tall * m.height and c.width <= wide * m.height
    under = (c.y1 - m.base) / m.height
    return (
        small
        and under >= 0.0
        and c.height / m.pen + COMMA_DEEP * under >= COMMA_TALL
        and (under >= COMMA_UNDER or _elongation(c, m.labels) >= COMMA_LONG)
    )


def _elongation(c: Part, labels: np.ndarray) -> float:
    """How much longer a component's ink is along its principal axis than across it (1: a disc or a
    square; a slanted stroke scores by its length, where its box would call it square)."""
    ys, xs = np.nonzero(labels[c.y0 : c.y1, c.x0 : c.x1] == c.labels[0])
    if len(xs) < 2:
        return 1.0
    spread = np.cov(np.stack([xs, ys]).astype(np.float64)) + np.eye(2) / 12  # a pixel's own spread
    low, high = np.linalg.eigvalsh(spread)
    return float(np.sqrt(high / low))


def _flat(c: Part, m: _Metrics) -> bool:
    return c.width >= MINUS_FLAT * c.height and c.width >= MINUS_LENGTH[0] * m.height


def _minus(c: Part, m: _Metrics) -> bool:
    return (
        _flat(c, m)
        and c.width <= MINUS_LENGTH[1] * m.height
        and c.height <= MINUS_THICK * m.pen
        and _centred(c, m, MIDDLE)
    )


def _stacked(c: Part, near: list[Part], m: _Metrics) -> bool:
    """Another flat stroke over or under it (an equals sign, a crossed-out stroke): no minus."""
    return any(
        o is not c and min(o.x1, c.x1) - max(o.x0, c.x0) > 0.5 * min(o.width, c.width) and _flat(o, m)
        for o in near
    )


def spell(digits: list[tuple[str, Sequence[int], int]], marks: list[Mark]) -> tuple[str, list[Mark]]:
    """A reading's text and the marks in it: each line's digits (label, box, line) in the order given,
    with the marks that stand between two of them, or a minus just before the first, put in after the
    digits left of them; lines joined by newlines."""
    lines = max((line for _, _, line in digits), default=-1) + 1
    texts, kept = [], []
    for line in range(lines):
        own = [(label, (box[0] + box[2]) / 2) for label, box, ln in digits if ln == line]
        after: dict[int, list[str]] = {}  # marks by the number of the line's digits left of them
        for mark in sorted((m for m in marks if m.line == line), key=lambda m: m.x):
            left = sum(x < mark.x for _, x in own)
            if 0 < left < len(own) or (left == 0 and own and mark.char == "-"):
                after.setdefault(left, []).append(mark.char)
                kept.append(mark)
        texts.append("".join("".join(after.get(k, [])) + label for k, (label, _) in enumerate(own)))
    return "\n".join(texts), kept
