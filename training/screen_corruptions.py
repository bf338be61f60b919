"""A digit drawn in a drawing app and sent as a screenshot of the app: the canvas with the app's chrome
round it (a phone's status bar, toolbar, colour palette and gesture bar, or a desktop window's title bar,
menus, tool panel and colour grid). The chrome is ink too, of every colour, often larger in area than the
digit; a person sees at once which mark was drawn. ``screenshot_of`` draws any writing so: a digit
(`robustness`'s ``app_screenshot``), a whole number (``scripts/numbers_seen.py``)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .corruption_base import encoded

RGB = tuple[int, int, int]
SWATCHES: tuple[RGB, ...] = (
    (0, 0, 0), (244, 67, 54), (255, 152, 0), (255, 235, 59), (76, 175, 80), (33, 150, 243), (156, 39, 176),
    (121, 85, 72), (158, 158, 158), (255, 255, 255), (0, 188, 212), (233, 30, 99),
)  # fmt: skip
PENS: tuple[RGB, ...] = ((0, 0, 0), (33, 33, 33), (21, 101, 192), (198, 40, 40))  # the digit's, light theme


def _font(size: float) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=max(8, round(size)))


def _icon(draw: ImageDraw.ImageDraw, cx: float, cy: float, r: float, colour: RGB,
          rng: np.random.Generator) -> None:  # fmt: skip
    """One tool icon (a pen, an eraser, undo, a shape, a bucket, a menu...) as simple strokes in ``r``."""
    w = max(2, round(r / 5))
    kind = int(rng.integers(7))
    if kind == 0:  # a pen: a slanted bar with a tip
        draw.line([(cx - r, cy + r), (cx + 0.6 * r, cy - 0.6 * r)], colour, 2 * w)
        draw.polygon([(cx - r, cy + r), (cx - 0.6 * r, cy + 0.4 * r), (cx - 0.4 * r, cy + 0.6 * r)], colour)
    elif kind == 1:  # undo or redo: an arc and an arrowhead
        draw.arc([cx - r, cy - 0.7 * r, cx + r, cy + r], 180, 360, colour, w)
        side = -1 if rng.random() < 0.5 else 1
        draw.polygon([(cx + side * r, cy - 0.6 * r), (cx + side * 0.5 * r, cy + 0.2 * r),
                      (cx + side * 1.4 * r, cy + 0.2 * r)], colour)  # fmt: skip
    elif kind == 2:  # shapes: a square outline and a circle
        draw.rectangle([cx - r, cy - r, cx + 0.3 * r, cy + 0.3 * r], outline=colour, width=w)
        draw.ellipse([cx - 0.2 * r, cy - 0.2 * r, cx + r, cy + r], outline=colour, width=w)
    elif kind == 3:  # a menu: three bars, or three dots
        for k in (-1, 0, 1):
            if rng.random() < 0.5:
                draw.line([(cx - r, cy + k * 0.6 * r), (cx + r, cy + k * 0.6 * r)], colour, w)
            else:
                draw.ellipse([cx + k * 0.7 * r - w, cy - w, cx + k * 0.7 * r + w, cy + w], colour)
    elif kind == 4:  # an eraser: a filled tilted block
        draw.polygon([(cx - r, cy + 0.2 * r), (cx - 0.1 * r, cy - r), (cx + r, cy - 0.2 * r),
                      (cx + 0.1 * r, cy + r)], colour)  # fmt: skip
    elif kind == 5:  # the text tool: a letter
        draw.text((cx, cy), str(rng.choice(["T", "A", "Aa"])), colour, _font(2 * r), anchor="mm")
    else:  # a bucket or a bin: an outlined cup
        draw.rectangle([cx - 0.7 * r, cy - 0.5 * r, cx + 0.7 * r, cy + r], outline=colour, width=w)
        draw.line([(cx - r, cy - 0.7 * r), (cx + r, cy - 0.7 * r)], colour, w)


def _icons(draw: ImageDraw.ImageDraw, box: tuple[float, float, float, float], n: int, colour: RGB,
           rng: np.random.Generator) -> None:  # fmt: skip
    """``n`` icons spread along the bar ``box`` (left, top, right, bottom), horizontal or vertical."""
    x0, y0, x1, y1 = box
    along_x = x1 - x0 >= y1 - y0
    r = 0.28 * (y1 - y0 if along_x else x1 - x0)
    for k in range(n):
        t = (k + 0.5) / n
        cx, cy = (x0 + t * (x1 - x0), (y0 + y1) / 2) if along_x else ((x0 + x1) / 2, y0 + t * (y1 - y0))
        _icon(draw, cx, cy, r, colour, rng)


def _swatches(draw: ImageDraw.ImageDraw, box: tuple[float, float, float, float], cols: int, rows: int,
              round_: bool, rng: np.random.Generator) -> None:  # fmt: skip
    """A palette: ``rows`` x ``cols`` colour swatches (discs or squares) in ``box``, one ringed as chosen."""
    x0, y0, x1, y1 = box
    cw, ch = (x1 - x0) / cols, (y1 - y0) / rows
    s = 0.36 * min(cw, ch)
    order = rng.permutation(len(SWATCHES))
    chosen = int(rng.integers(cols * rows))
    for k in range(cols * rows):
        cx, cy = x0 + (k % cols + 0.5) * cw, y0 + (k // cols + 0.5) * ch
        colour = SWATCHES[order[k % len(SWATCHES)]]
        shape = draw.ellipse if round_ else draw.rectangle
        shape([cx - s, cy - s, cx + s, cy + s], colour, outline=(128, 128, 128), width=1)
        if k == chosen:
            ring = 1.3 * s
            shape(
                [cx - ring, cy - ring, cx + ring, cy + ring], outline=(90, 90, 90), width=max(2, round(s / 6))
            )


def written_on(shot: Image.Image, glyph: np.ndarray, box: tuple[float, float, float, float], pen: RGB,
               rng: np.random.Generator) -> None:  # fmt: skip
    """The writing ``glyph`` (uint8, white ink on black: a digit, a number) written with ``pen``
    somewhere in the canvas ``box``, 35-80% of its shorter side tall (narrower where it is long)."""
    x0, y0, x1, y1 = box
    tall = min(x1 - x0, y1 - y0) * rng.uniform(0.35, 0.8)
    f = min(tall / glyph.shape[0], (x1 - x0) / glyph.shape[1])
    w, h = max(1, round(glyph.shape[1] * f)), max(1, round(glyph.shape[0] * f))
    img = Image.fromarray(np.ascontiguousarray(glyph, dtype=np.uint8)).resize((w, h), Image.BICUBIC)
    cover = (np.asarray(img, dtype=np.float32) / 255.0)[..., None]
    left = int(rng.integers(int(x0), max(int(x0), int(x1) - w) + 1))
    top = int(rng.integers(int(y0), max(int(y0), int(y1) - h) + 1))
    region = np.asarray(shot.crop((left, top, left + w, top + h)), np.float32)
    out = region * (1.0 - cover) + np.asarray(pen, np.float32) * cover
    shot.paste(Image.fromarray(np.round(out).astype(np.uint8)), (left, top))


def _phone(glyph: np.ndarray, rng: np.random.Generator) -> Image.Image:
    """A phone's drawing app, portrait: status bar, toolbar, the canvas, a palette and size slider, the
    gesture bar; a light or a dark theme."""
    w = int(rng.integers(540, 1081))
    h = int(w * rng.uniform(1.8, 2.2))
    dark = rng.random() < 0.3
    back: RGB = (32, 33, 36) if dark else (248, 248, 250)
    fore: RGB = (232, 234, 237) if dark else (60, 64, 67)
    canvas: RGB = (18, 18, 18) if dark and rng.random() < 0.5 else (255, 255, 255)
    shot = Image.new("RGB", (w, h), back)
    draw = ImageDraw.Draw(shot)
    bar = 0.035 * h
    clock = f"{rng.integers(1, 13)}:{rng.integers(0, 60):02d}"
    draw.text((0.06 * w, bar / 2), clock, fore, _font(0.5 * bar), anchor="lm")
    for k in range(3):  # signal, wifi, battery
        x = w - (0.06 + 0.06 * k) * w
        draw.rectangle([x - 0.025 * w, bar * 0.3, x, bar * 0.7], fore if k else None, outline=fore, width=2)
    tools = 0.065 * h
    accent = rng.random() < 0.4
    if accent:  # a coloured app bar with white icons
        draw.rectangle([0, bar, w, bar + tools], tuple(int(c) for c in rng.integers(30, 200, 3)))
    icon: RGB = (255, 255, 255) if accent else fore
    _icons(draw, (0.02 * w, bar, 0.98 * w, bar + tools), int(rng.integers(4, 8)), icon, rng)
    bottom = h - 0.03 * h
    palette = 0.08 * h
    slider = 0.04 * h if rng.random() < 0.6 else 0.0
    top_canvas, bottom_canvas = bar + tools, bottom - palette - slider
    draw.rectangle([0, top_canvas, w, bottom_canvas], canvas)
    if slider:
        y = bottom_canvas + slider / 2
        draw.line([(0.1 * w, y), (0.9 * w, y)], fore, max(2, round(0.006 * h)))
        knob = 0.1 * w + rng.uniform(0, 0.8 * w)
        draw.ellipse([knob - 0.3 * slider, y - 0.3 * slider, knob + 0.3 * slider, y + 0.3 * slider], fore)
    cols, rows = int(rng.integers(5, 9)), int(rng.integers(1, 3))
    _swatches(draw, (0.03 * w, bottom - palette, 0.97 * w, bottom), cols, rows, rng.random() < 0.7, rng)
    gesture = h - 0.012 * h
    draw.line([(0.38 * w, gesture), (0.62 * w, gesture)], fore, max(3, round(0.005 * h)))
    pen = (255, 255, 255) if canvas[0] < 128 else PENS[int(rng.integers(len(PENS)))]
    margin = 0.04 * w
    written_on(shot, glyph, (margin, top_canvas + margin, w - margin, bottom_canvas - margin), pen, rng)
    return shot


def _desktop(glyph: np.ndarray, rng: np.random.Generator) -> Image.Image:
    """A desktop paint program's window: title bar, menus, a toolbar, a tool panel at the side, a colour
    grid, the canvas on a gray workspace, a status line."""
    w = int(rng.integers(900, 1601))
    h = int(w * rng.uniform(0.55, 0.75))
    chrome: RGB = (240, 240, 240) if rng.random() < 0.7 else (45, 45, 48)
    fore: RGB = (30, 30, 30) if chrome[0] > 128 else (220, 220, 220)
    shot = Image.new("RGB", (w, h), chrome)
    draw = ImageDraw.Draw(shot)
    title = 0.04 * h
    draw.rectangle([0, 0, w, title], (255, 255, 255) if chrome[0] > 128 else (30, 30, 30))
    draw.text((0.02 * w, title / 2), "Untitled - Paint", fore, _font(0.45 * title), anchor="lm")
    for k in range(3):  # minimise, maximise, close
        x = w - (0.02 + 0.035 * k) * w
        draw.line([(x - 0.01 * w, title / 2), (x, title / 2)], fore, 2)
    menu = 0.035 * h
    menus = "File   Edit   View   Image   Colors   Help"
    draw.text((0.02 * w, title + menu / 2), menus, fore, _font(0.5 * menu), anchor="lm")
    tools = 0.09 * h
    y0 = title + menu
    grid_w = 0.28 * w
    _icons(draw, (0.01 * w, y0, w - grid_w - 0.02 * w, y0 + tools), int(rng.integers(5, 11)), fore, rng)
    _swatches(draw, (w - grid_w, y0 + 0.05 * tools, w - 0.01 * w, y0 + 0.95 * tools), 10, 2, False, rng)
    status = 0.035 * h
    size = f"{rng.integers(300, 1200)} x {rng.integers(300, 900)}px    100%"
    draw.text((0.02 * w, h - status / 2), size, fore, _font(0.5 * status), anchor="lm")
    panel = 0.05 * w if rng.random() < 0.5 else 0.0
    if panel:
        _icons(draw, (0, y0 + tools, panel, h - status - 0.3 * h), int(rng.integers(4, 9)), fore, rng)
    space = (panel, y0 + tools, w, h - status)
    draw.rectangle(space, (200, 205, 215) if chrome[0] > 128 else (70, 70, 74))
    sx0, sy0, sx1, sy1 = space
    cw, ch = (sx1 - sx0) * rng.uniform(0.5, 0.95), (sy1 - sy0) * rng.uniform(0.6, 0.95)
    cx0, cy0 = sx0 + 0.02 * w, sy0 + 0.02 * h
    draw.rectangle([cx0, cy0, cx0 + cw, cy0 + ch], (255, 255, 255))
    margin = 0.02 * w
    pen = PENS[int(rng.integers(len(PENS)))]
    written_on(shot, glyph, (cx0 + margin, cy0 + margin, cx0 + cw - margin, cy0 + ch - margin), pen, rng)
    return shot


def screenshot_of(glyph: np.ndarray, rng: np.random.Generator) -> bytes:
    """The writing ``glyph`` (uint8, white ink on black) drawn in a drawing app, sent as a screenshot: a
    phone's (two in three) or a desktop paint program's window, as PNG, or as JPEG (one in four: sent on
    through a chat app)."""
    shot = _phone(glyph, rng) if rng.random() < 2 / 3 else _desktop(glyph, rng)
    if rng.random() < 0.25:
        return encoded(shot, "JPEG", quality=int(rng.integers(70, 93)))
    return encoded(shot)
