"""Split a picture of a number into digits by rules: the strokes, the digits they make, their lines.

    picture -> ink map -> connected components -> broken strokes merged -> lines -> touching
    digits split -> reading order -> one MNIST-style (28, 28) image per digit

Pure numpy/Pillow, no model. ``read_page`` gives the ink, the components and the rules' digits;
``model_store.reading`` builds from them the alternatives the model chooses among (what the service
serves and ``python -m training read-eval`` measures); ``segment`` is the rules' reading alone. Each
digit goes through the single-digit preprocessing (``ink_to_mnist``: ``to_mnist`` on ink whose paper is
already taken out).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from PIL import Image

from .components import component_boxes, grown, label_components, loops_round_writing
from .decode import ImageTooLarge, NoInk, by_luminance_then_colour, full_size, to_gray
from .displays import bars_joined, digits_of_display
from .drawing import Drawn, Layer
from .edge_bands import without_edge_bands
from .guides import page_guides_removed
from .marks import Mark, find_marks
from .mnist_box import stroke_width
from .paper import GRAIN, MIN_FLOOR, ink_above_paper
from .parts import Part, column_piece
from .preprocess import GUIDE_LEVEL, cut_out, ink_to_mnist, painted_as, small_writing
from .screen_pad import pad_only

INK = 0.2  # ink-map level at which a pixel belongs to a stroke (antialiased edges are added back)
SPECK_AREA = 0.04  # a component under this share of the largest one's area ...
SPECK_HEIGHT = 0.3  # ... and under this share of its height is dust, not part of a digit
PIECE_HEIGHT = 0.8  # a piece at most this tall relative to its neighbour may be one of its strokes
PIECE_OVERLAP = 0.45  # ... when this share of the narrower one's columns lies over the other
PIECE_GAP = 0.35  # ... and the vertical gap between them is under this share of the taller's height
PIECE_SHORT = 0.75  # a piece beside a digit (not over it) must be this short relative to it ...
PIECE_BESIDE = 0.2  # ... and at most this far from it (times the digit's height)
LINE_OVERLAP = 0.4  # digits whose rows overlap by this share of the shorter one share a line
NARROW = 0.7  # a part at most this wide (times its height) is one digit
BRIDGE = 1.6  # touching digits meet in a column of at most this many stroke widths of ink ...
PIECE_TALL = 0.6  # ... with a digit at least this share of the part's height on either side
SPLIT_ASPECT = 1.1  # wider than this times its height: touching digits, however they meet ...
FLAT = 0.5  # ... unless it is under this share of its line's tallest part (a dash)
BAR = 2.0  # a line whose tallest part is under this many stroke widths tall and twice as wide as tall
BAR_ASPECT = 2.0  # holds a bar (a dash, a rule), no digits: a bold digit is a blob taller than wide
# A part whose ink is under this share of the writing's (the strongest quarter of the parts) is no
# stroke: the edge of a plate the sheet search missed, or the shadow along it, which the paper's
# levelling leaves faint.
FAINT = 0.5
MARGIN = 2  # zero pixels around each digit's crop (the fit reads the paper from the border)


class TooManyDigits(ImageTooLarge):
    """More separate marks than a number may have: refused before any per-digit work (HTTP 413)."""

    def __init__(self, found: int, limit: int) -> None:
        super().__init__(f"the picture has at least {found} separate marks; at most {limit} digits are read")
        self.found = found
        self.limit = limit


@dataclass(frozen=True, slots=True)
class DigitCrop:
    box: tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive) in the picture's own pixels
    pixels: np.ndarray  # (28, 28) float32 0..1, white on black, as ``ink_to_mnist`` makes it
    line: int  # 0 for the first line of writing, 1 for the next, ...


@dataclass(frozen=True, slots=True)
class PenStroke:
    """One stroke of a drawing sent as strokes (``model_store.drawing``), as the page's ink holds it."""

    label: int  # the component its ink is part of
    y0: int
    x0: int
    mask: np.ndarray  # bool: its pixels in its box, those it shares with a stroke crossing it included

    def window(self, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
        """Its ``mask`` in a window of the page inside its box."""
        return self.mask[y0 - self.y0 : y1 - self.y0, x0 - self.x0 : x1 - self.x0]


# --------------------------------------------------------------------------------------- entry points


@dataclass(slots=True)
class Page:
    """A picture's ink, its components and the rule-based digits, line by line: what ``segment`` fits
    and what ``model_store.reading`` builds its alternatives from."""

    ink: np.ndarray  # (H, W) float32 0..1, white on black
    labels: np.ndarray  # (H, W) int32 component labels, 0 = paper
    lines: list[list[Part]]  # top to bottom; each the rule-based digits left to right
    components: list[Part]  # every connected stroke, specks and marks left out
    scale: tuple[float, float]  # picture pixels per ink pixel (x, y)
    offset: tuple[int, int] = (0, 0)  # where the ink's (0, 0) lies in the picture (x, y)
    marks: list[Mark] = field(default_factory=list)  # punctuation between the digits (``marks``)
    display: bool = False  # a display's digits, its bars grouped per digit (``displays``)
    pen: list[PenStroke] = field(default_factory=list)  # a drawing's strokes (none for a picture)

    def box(self, parts: list[Part]) -> tuple[int, int, int, int]:
        """x0, y0, x1, y1 of some parts together, in the picture's own pixels."""
        (sx, sy), (ox, oy) = self.scale, self.offset
        x0, y0 = min(p.x0 for p in parts), min(p.y0 for p in parts)
        x1, y1 = max(p.x1 for p in parts), max(p.y1 for p in parts)
        return ox + int(x0 * sx), oy + int(y0 * sy), ox + int(np.ceil(x1 * sx)), oy + int(np.ceil(y1 * sy))

    def fit(self, parts: list[Part]) -> np.ndarray | None:
        """The ink of these parts alone (their neighbours' strokes masked out), through ``ink_to_mnist``;
        None when nothing of it is left."""
        h, w = self.ink.shape
        y0, y1 = max(min(p.y0 for p in parts) - 1, 0), min(max(p.y1 for p in parts) + 1, h)
        x0, x1 = max(min(p.x0 for p in parts) - 1, 0), min(max(p.x1 for p in parts) + 1, w)
        window = self.labels[y0:y1, x0:x1]
        keep = np.zeros(window.shape, dtype=bool)
        for p in parts:
            mask = grown(self._pixels(p, y0, y1, x0, x1))  # one pixel more: the antialiased edge
            between = p.within_cut(y0, y1, x0, x1)
            keep |= mask if between is None else mask & between  # a cut: this digit's side alone
        crop = np.pad(self.ink[y0:y1, x0:x1] * keep, MARGIN)
        if self.display:
            crop = bars_joined(crop, y1 - y0)
        try:
            return ink_to_mnist(crop)
        except NoInk:
            return None

    def _pixels(self, part: Part, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
        """Bool (y1 - y0, x1 - x0): the part's pixels in that window: its components', or its pen
        stroke's own."""
        if part.stroke is None:
            return np.isin(self.labels[y0:y1, x0:x1], part.labels)
        s = self.pen[part.stroke]
        out = np.zeros((y1 - y0, x1 - x0), dtype=bool)
        h, w = s.mask.shape
        ty0, tx0 = max(s.y0, y0), max(s.x0, x0)
        ty1, tx1 = min(s.y0 + h, y1), min(s.x0 + w, x1)
        if ty1 > ty0 and tx1 > tx0:
            own = s.mask[ty0 - s.y0 : ty1 - s.y0, tx0 - s.x0 : tx1 - s.x0]
            out[ty0 - y0 : ty1 - y0, tx0 - x0 : tx1 - x0] = own
        return out


def shared_ink(a: PenStroke, b: PenStroke, width: float) -> float:
    """The ink two pen strokes share (pixels both draw: where they cross, touch or run along each other),
    in squared stroke widths ``width``: a crossing is about 1, a stroke running along another as many as
    it runs stroke widths."""
    if a.label != b.label:  # in two components: no pixel in common
        return 0.0
    y0, x0 = max(a.y0, b.y0), max(a.x0, b.x0)
    y1 = min(a.y0 + a.mask.shape[0], b.y0 + b.mask.shape[0])
    x1 = min(a.x0 + a.mask.shape[1], b.x0 + b.mask.shape[1])
    if y1 <= y0 or x1 <= x0:
        return 0.0
    both = a.window(y0, y1, x0, x1) & b.window(y0, y1, x0, x1)
    return float(both.sum()) / max(width, 1.0) ** 2


def read_page(
    gray: np.ndarray, max_digits: int = 32, scale: tuple[float, float] = (1.0, 1.0),
    offset: tuple[int, int] = (0, 0), layers: list[Layer] | None = None,
) -> Page:  # fmt: skip
    """Gray picture (any polarity, 0..1) -> its Page; ``scale`` and ``offset`` place it in the uploaded
    picture (boxes are that picture's pixels). ``layers``: each pen stroke's ink, when the picture was
    drawn from strokes (``model_store.drawing``). Raises NoInk, TooManyDigits."""
    x = ink_map(gray)
    mask = x > INK
    labels, n = label_components(mask)
    if n == 0:
        raise NoInk("no ink found: the picture is empty")
    display = digits_of_display(mask, labels, n)  # a display's bars: one mark per digit
    if display is None and layers is None:  # a screenshot of the app it was drawn in? (the pad has none)
        kept = without_edge_bands(x, INK, (mask, labels, n))  # a display's end would pass for a tool panel
        if kept is not x:
            x, mask = kept, kept > INK
            labels, n = label_components(mask)
    if display is not None:
        labels, n = display.labels, display.count
    every = _parts(labels, n)
    parts = _without_faint(_without_specks(every), x, labels)
    # Labelling is linear in the pixels; merging is quadratic in the parts: refuse noise early.
    if len(parts) > 4 * max_digits:
        raise TooManyDigits(len(parts), max_digits)
    parts = _without_enclosures(parts)
    writing = _writing(parts, labels)
    if display is None:
        found_marks = find_marks(every, writing, labels)
    else:  # a display's punctuation sits where a display puts it, not where a pen does
        by_label = {p.labels[0]: p for p in every}
        found_marks = [(char, [by_label[k] for k in ks], anchor) for char, ks, anchor in display.marks]
    # The digits grouped again without the marks: a minus beside a 7 is not one of its strokes (most
    # dots were specks, left out already).
    taken = {p.labels[0] for _, mark_parts, _ in found_marks for p in mark_parts}
    if any(p.labels[0] in taken for p in parts):
        parts = [p for p in parts if p.labels[0] not in taken]
        writing = _writing(parts, labels)
    lines = writing if display is not None else [_split_line(line, labels) for line in writing]
    found = sum(len(line) for line in lines)
    if found > max_digits:
        raise TooManyDigits(found, max_digits)
    page = Page(x, labels, lines, parts, scale, offset, display=display is not None)
    if layers and display is None:  # a display's bars are grouped across strokes: read as a picture
        page.pen = _pen_strokes(mask, labels, layers)
    line_of = {label: i for i, line in enumerate(writing) for q in line for label in q.labels}
    page.marks = [
        Mark(char, page.box(mark_parts), line_of[anchor])
        for char, mark_parts, anchor in found_marks
        if anchor in line_of
    ]
    return page


def page_drawn(drawn: Drawn, max_digits: int = 32) -> Page:
    """A drawing's Page (``model_store.drawing.draw``): boxes in the canvas's pixels. Raises NoInk,
    TooManyDigits."""
    scale = (drawn.scale, drawn.scale)
    return read_page(drawn.gray, max_digits, scale=scale, offset=drawn.offset, layers=drawn.layers)


def _pen_strokes(mask: np.ndarray, labels: np.ndarray, layers: list[Layer]) -> list[PenStroke]:
    """Each stroke's own pixels of the page's ink, in the component that holds most of them (a stroke
    the ink map lost, such as a light tap, is left out)."""
    out = []
    for layer in layers:
        own = layer.own(mask)
        h, w = own.shape
        window = labels[layer.y0 : layer.y0 + h, layer.x0 : layer.x0 + w]
        counts = np.bincount(window[own])
        if counts.size < 2 or counts[1:].max() == 0:
            continue
        label = int(counts[1:].argmax()) + 1
        own &= window == label
        rows, cols = np.flatnonzero(own.any(axis=1)), np.flatnonzero(own.any(axis=0))
        box = own[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
        out.append(PenStroke(label, layer.y0 + int(rows[0]), layer.x0 + int(cols[0]), box))
    return out


def page_bytes(data: bytes, max_pixels: int, max_digits: int = 32) -> Page:
    """Encoded image bytes -> its Page. Raises the decoder's ImageErrors, NoInk and TooManyDigits."""
    return by_luminance_then_colour(data, max_pixels, lambda img: _page(data, max_pixels, max_digits, img))


def _page(data: bytes, max_pixels: int, max_digits: int, img: Image.Image) -> Page:
    """``page_bytes`` of the picture ``img`` (decoded from ``data``)."""
    width, height = full_size(img)  # a JPEG is decoded at a reduced scale: boxes are the picture's own
    seen = to_gray(img)  # reduced to at most WORK_SIZE per side: boxes are scaled back
    gray = pad_only(data, max_pixels, img, seen)
    box = small_writing(gray, max(width, height), lines=True)
    if box is None:
        return read_page(gray, max_digits, scale=(width / gray.shape[1], height / gray.shape[0]))
    cut, scale, offset = cut_out(data, max_pixels, img, box, gray.shape)  # a small number on a large page
    # The page round a pad is painted over in the cut too: its outline would be read as a 1.
    return read_page(painted_as(cut, box, seen, gray), max_digits, scale=scale, offset=offset)


def segment(
    gray: np.ndarray, max_digits: int = 32, scale: tuple[float, float] = (1.0, 1.0)
) -> list[DigitCrop]:
    """Gray picture (any polarity, 0..1) -> the rules' digits in reading order, no model asked (the
    served reading, ``model_store.reading``, lets the model choose among alternatives)."""
    page = read_page(gray, max_digits, scale)
    crops = []
    for line_no, line in enumerate(page.lines):
        for part in line:
            pixels = page.fit([part])
            if pixels is not None:
                crops.append(DigitCrop(page.box([part]), pixels, line_no))
    if not crops:
        raise NoInk("no ink found: the picture is empty")
    return crops


# ------------------------------------------------------------------------------------------ ink map


def ink_map(gray: np.ndarray) -> np.ndarray:
    """White-on-black ink 0..1 with the paper at 0, made as ``to_mnist`` makes it (polarity, paper,
    grain, guides) but on the whole picture, so components are found on the ink the digits are fitted
    from."""
    x, sigma = ink_above_paper(gray)
    peak = float(x.max())
    t = max(MIN_FLOOR, GRAIN * sigma / peak)
    return page_guides_removed(np.clip((x / peak - t) / (1.0 - t), 0.0, 1.0), GUIDE_LEVEL)


# ------------------------------------------------------------------------------------------- grouping


def _parts(labels: np.ndarray, n: int) -> list[Part]:
    """One part per component."""
    boxes, area = component_boxes(labels, n)
    return [Part([i + 1], *map(int, boxes[i]), int(area[i])) for i in range(n)]


def _without_specks(parts: list[Part]) -> list[Part]:
    """The parts without the specks (dust, a pen touching the paper by mistake; a decimal point too,
    which ``marks`` looks for among all of them)."""
    big_area = max(p.area for p in parts)
    big_height = max(p.height for p in parts)
    return [p for p in parts if p.area >= SPECK_AREA * big_area or p.height >= SPECK_HEIGHT * big_height]


def _without_faint(parts: list[Part], ink: np.ndarray, labels: np.ndarray) -> list[Part]:
    """The parts without those much fainter than the writing (FAINT): one pen writes a number, and
    what is far lighter beside it is an edge or a shadow the paper's levelling left."""
    if len(parts) < 2:
        return parts
    strength = np.array([_strength(p, ink, labels) for p in parts])
    least = FAINT * float(np.quantile(strength, 0.75))
    kept = [p for p, s in zip(parts, strength, strict=True) if s >= least]
    return kept or parts


def _strength(part: Part, ink: np.ndarray, labels: np.ndarray) -> float:
    """How dark a part's ink is: the 90th percentile of its pixels' (its strokes' cores, not their
    antialiased edges)."""
    window = (slice(part.y0, part.y1), slice(part.x0, part.x1))
    own = np.isin(labels[window], part.labels)
    return float(np.quantile(ink[window][own], 0.9)) if own.any() else 0.0


def _without_enclosures(parts: list[Part]) -> list[Part]:
    """The parts without a loop drawn round the writing (``components.loops_round_writing``)."""
    boxes = np.array([[p.x0, p.y0, p.x1, p.y1] for p in parts]).reshape(-1, 4)
    loops = loops_round_writing(boxes, np.array([p.area for p in parts]))
    kept = [p for p, loop in zip(parts, loops, strict=True) if not loop]
    return kept or parts


def _writing(parts: list[Part], labels: np.ndarray) -> list[list[Part]]:
    """The parts grouped into digits, line by line. A line of nothing but flat marks (the end of a
    ruling the picture's edge cut off, a stray dash far from the number, or a picture of nothing but
    a dash or a rule) is no writing: cut up as touching digits it would be dozens of them."""
    groups = _merge_pieces([replace(p, labels=list(p.labels)) for p in parts])  # merging mutates
    tallest = max(p.height for p in groups)
    lines = [line for line in _lines(groups) if max(p.height for p in line) >= SPECK_HEIGHT * tallest]
    return [line for line in lines if not _flat_bar(max(line, key=lambda p: p.height), labels)]


def _flat_bar(part: Part, labels: np.ndarray) -> bool:
    """Under BAR of its own stroke widths tall and BAR_ASPECT times as wide: a dash or a rule, not
    digits."""
    if part.width < BAR_ASPECT * part.height:
        return False
    own = np.pad(part.own_pixels(labels), 1)  # padded: its outline along the box counts too
    return part.height < BAR * stroke_width(own)


def _split_line(line: list[Part], labels: np.ndarray) -> list[Part]:
    """A line's parts with touching digits cut apart. A part much shorter than the line's tallest (a
    dash, an equals sign's bar) is no pair of digits: cut up, its slivers would set the line's height."""
    tallest = max(p.height for p in line)
    return [p for q in line for p in (split_touching(q, labels) if q.height >= FLAT * tallest else [q])]


def _belongs(small: Part, big: Part) -> bool:
    """A stroke of the same digit: shorter, and either over or under its columns (a 5's flag, a
    7's bar) or just beside its rows (the two strokes of a 4), close in both directions."""
    if small.height > PIECE_HEIGHT * big.height:
        return False
    overlap = min(small.x1, big.x1) - max(small.x0, big.x0)
    gap_y = max(small.y0 - big.y1, big.y0 - small.y1, 0)
    if overlap >= PIECE_OVERLAP * min(small.width, big.width):
        return gap_y <= PIECE_GAP * big.height
    beside = min(small.y1, big.y1) - max(small.y0, big.y0) >= 0.7 * small.height
    return beside and -overlap <= PIECE_BESIDE * big.height and small.height <= PIECE_SHORT * big.height


def _merge_pieces(parts: list[Part]) -> list[Part]:
    """Merge each piece, shortest first, into the digit it belongs to (the most overlapping one),
    until nothing changes."""
    parts = list(parts)
    merged = True
    while merged:
        merged = False
        parts.sort(key=lambda p: p.height)
        for i, small in enumerate(parts):
            hosts = [q for q in parts[i + 1 :] if _belongs(small, q)]
            if hosts:
                host = max(hosts, key=lambda q: min(small.x1, q.x1) - max(small.x0, q.x0))
                host.absorb(small)
                parts.pop(i)
                merged = True
                break
    return parts


def _lines(parts: list[Part]) -> list[list[Part]]:
    """Lines of writing top to bottom, each left to right: a part joins the first line whose rows
    overlap it enough."""
    lines: list[list[Part]] = []
    spans: list[list[int]] = []
    for p in sorted(parts, key=lambda p: (p.y0 + p.y1) / 2):
        for line, span in zip(lines, spans, strict=True):
            overlap = min(p.y1, span[1]) - max(p.y0, span[0])
            if overlap >= LINE_OVERLAP * min(p.height, span[1] - span[0]):
                line.append(p)
                span[0], span[1] = min(span[0], p.y0), max(span[1], p.y1)
                break
        else:
            lines.append([p])
            spans.append([p.y0, p.y1])
    return [sorted(line, key=lambda p: (p.x0 + p.x1) / 2) for line in lines]


def split_touching(part: Part, labels: np.ndarray, height: int | None = None) -> list[Part]:
    """Touching digits, cut where they touch.

    A cut is taken at the column with the least ink in the middle of a part wider than a narrow
    digit when that column is a thin bridge (about one stroke wide) with a full-height digit on
    either side: inside one digit the middle columns cross two or three strokes, and a thin column
    near a digit's edge (a 7's bar, a 4's arm) leaves a short piece. A part much wider than tall is
    cut at its least-ink columns in any case. Pieces are split again (three touching digits), measured
    against the whole group's ``height``: a cut's sliver (a 3's tips, trimmed to its few rows) is not
    a part much wider than tall.
    """
    height = height or part.height
    if part.width <= NARROW * height:
        return [part]
    mask = part.own_pixels(labels)
    between = part.within_cut(part.y0, part.y1, part.x0, part.x1)
    if between is not None:
        mask &= between
    ink = mask.sum(axis=0).astype(np.float64)
    window = np.arange(int(0.2 * part.width), int(0.8 * part.width) + 1)
    centre = part.width / 2
    cut = int(window[np.argmin(ink[window] + 0.5 * np.abs(window - centre) / part.width)])
    left, right = column_piece(part, mask, 0, cut), column_piece(part, mask, cut, part.width)
    if left is None or right is None:
        return [part]
    # Rows with ink, not the extent: a cut through a 2 leaves its arc's end and its base's end.
    tall = min(_rows_inked(mask[:, :cut]), _rows_inked(mask[:, cut:])) >= PIECE_TALL * height
    if (ink[cut] <= BRIDGE * stroke_width(mask) and tall) or part.width > SPLIT_ASPECT * height:
        return split_touching(left, labels, height) + split_touching(right, labels, height)
    return [part]


def _rows_inked(mask: np.ndarray) -> int:
    return int(mask.any(axis=1).sum())
