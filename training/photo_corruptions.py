"""Corrupted uploads photographed: pen on coloured paper, a page in uneven light or on a table, a note on
a table, a hard shadow across the page, glare on glossy paper, chalk on a board with the wall round it,
near or far, a board wiped before (``training.corruptions``)."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

from .corruption_base import encoded, ink_at, on_canvas, random_side, to_u8


def coloured_paper(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """Blue, black or red pen on pastel paper, photographed (JPEG)."""
    side = random_side(rng)
    ink = ink_at(u8, side)[..., None]
    paper = rng.uniform(0.7, 1.0, 3)
    pen = np.array([[0.1, 0.15, 0.6], [0.1, 0.1, 0.1], [0.7, 0.1, 0.1]])[int(rng.integers(3))]
    rgb = paper + (pen - paper) * ink
    return encoded(Image.fromarray(to_u8(rgb), "RGB"), "JPEG", quality=int(rng.integers(70, 96)))


def uneven_paper(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo: light falling off across the page, a soft shadow, paper grain, JPEG."""
    side = random_side(rng)
    yy, xx = np.mgrid[0:side, 0:side] / side
    ang = rng.uniform(0, 2 * np.pi)
    light = 0.9 - rng.uniform(0.2, 0.45) * (np.cos(ang) * xx + np.sin(ang) * yy + 1) / 2
    page = light * (1.0 - 0.85 * ink_at(u8, side)) + rng.normal(0, 0.02, (side, side))
    return encoded(Image.fromarray(to_u8(page)).convert("RGB"), "JPEG", quality=int(rng.integers(60, 91)))


def sheet_mask(width: int, height: int, rng: np.random.Generator) -> np.ndarray:
    """Where the photographed sheet is (1) and the table it lies on shows (0): the whole frame, a band
    along one side, or the corners around a tilted sheet that fills most of the frame."""
    kind = int(rng.integers(3))
    if kind == 0:
        return np.ones((height, width), np.float32)
    if kind == 1:
        mask = np.ones((height, width), np.float32)
        side = int(rng.integers(4))
        band = int(rng.uniform(0.08, 0.2) * (height if side < 2 else width))
        if side == 0:
            mask[:band] = 0
        elif side == 1:
            mask[-band:] = 0
        elif side == 2:
            mask[:, :band] = 0
        else:
            mask[:, -band:] = 0
        return mask
    a, b = rng.uniform(0.44, 0.48) * width, rng.uniform(0.42, 0.47) * height
    theta = np.radians(rng.uniform(3, 8) * rng.choice([-1, 1]))
    c, s = np.cos(theta), np.sin(theta)
    corners = [
        (width / 2 + x * c - y * s, height / 2 + x * s + y * c)
        for x, y in ((-a, -b), (a, -b), (a, b), (-a, b))
    ]
    img = Image.new("L", (width, height), 0)
    ImageDraw.Draw(img).polygon(corners, fill=255)
    return np.asarray(img, np.float32) / 255.0


def photo_of_page(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of a page with one digit written on it: 2 megapixels, the digit 12-25% of the
    page's height (its ink well under 1% of the picture) in the middle 60% of the frame, light falling
    off, camera blur, grain, JPEG; in two photos of three the dark table the sheet lies on shows."""
    width, height = 1600, 1200
    digit = ink_at(u8, int(height * rng.uniform(0.12, 0.25)))
    ink = np.pad(on_canvas(digit, 960, 720, rng), ((240, 240), (320, 320)))
    table = rng.uniform(0.15, 0.45)  # its brightness relative to the sheet's
    paper = table + (1.0 - table) * sheet_mask(width, height, rng)
    yy, xx = np.ogrid[0:height, 0:width]
    ang = rng.uniform(0, 2 * np.pi)
    light = 0.92 - rng.uniform(0.15, 0.35) * (np.cos(ang) * xx / width + np.sin(ang) * yy / height + 1) / 2
    page = Image.fromarray(to_u8(light * paper * (1.0 - 0.85 * ink))).filter(
        ImageFilter.GaussianBlur(rng.uniform(0.5, 2.0))
    )
    grainy = np.asarray(page, np.float32) / 255.0 + 0.015 * rng.standard_normal((height, width), np.float32)
    return encoded(Image.fromarray(to_u8(grainy)).convert("RGB"), "JPEG", quality=int(rng.integers(80, 93)))


def photo_of_note(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of a note, a sticky note or a card smaller than the table it lies on (6-40% of a
    1200x900 frame), the digit written on it (45-75% of its side) in black or blue; the note tilted up
    to 20 degrees, perhaps cut by the frame; the table wood-toned or gray with a grain, 0.15-0.5 as bright
    as the note, a pen lying on it in half the photos; light falling off, camera blur, grain, JPEG."""
    height, width = (900, 1200) if rng.random() < 0.5 else (1200, 900)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    grain = Image.fromarray(rng.normal(0, 1, (height // 8, width // 8)).astype(np.float32))
    grain = np.asarray(grain.resize((width, height), Image.Resampling.BICUBIC))
    streaks = np.sin(xx / rng.uniform(15, 60) + yy / rng.uniform(150, 400))
    tint = np.array([1.0, rng.uniform(0.6, 1.0), rng.uniform(0.3, 1.0)], np.float32)  # wood .. gray
    rgb = (rng.uniform(0.15, 0.5) * (1 + 0.12 * grain + 0.08 * streaks))[..., None] * tint
    if rng.random() < 0.5:  # a pen lying on the table
        pen = Image.new("L", (width, height), 0)
        x0, y0, a = rng.uniform(0, width), rng.uniform(0, height), rng.uniform(0, np.pi)
        ImageDraw.Draw(pen).line([(x0, y0), (x0 + 500 * np.cos(a), y0 + 500 * np.sin(a))], fill=255, width=18)
        rgb *= 1 - 0.8 * (np.asarray(pen, np.float32) / 255)[..., None]
    side = np.sqrt(rng.uniform(0.06, 0.4) * height * width)
    aspect = rng.uniform(1.0, 1.45)
    w, h = (side * aspect, side / aspect) if rng.random() < 0.5 else (side / aspect, side * aspect)
    w, h = int(w), int(h)
    paper = np.array(
        [1.0, 0.96, rng.uniform(0.55, 0.8)] if rng.random() < 0.3 else [1.0, 1.0, 1.0], np.float32
    )
    note = np.ones((h, w, 3), np.float32) * paper
    d = int(min(w, h) * rng.uniform(0.45, 0.75))
    y, x = int((h - d) * rng.uniform(0.3, 0.7)), int((w - d) * rng.uniform(0.3, 0.7))
    ink = ink_at(u8, d)[..., None]
    colour = np.array([[0.1, 0.1, 0.1], [0.1, 0.15, 0.55]], np.float32)[int(rng.integers(2))]
    note[y : y + d, x : x + d] += (colour - note[y : y + d, x : x + d]) * ink
    _lay(rgb, note, rng.uniform(-20, 20), (0.3, 0.7), rng)  # the note's centre in the middle 40%
    return _photographed(rgb, rng)


def chalk_board(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of a digit chalked on a dark board (green or black), the light wall round it in view:
    the board 35-85% of a 1200x900 frame, tilted up to 8 degrees, the digit 30-60% of its shorter side in
    grainy chalk; light falling off, camera blur, grain, JPEG."""
    return _chalked(u8, rng, (0.35, 0.85))


def chalk_close(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """``chalk_board`` photographed closer: the board 85-120% of the frame's area, so that the wall shows
    in slivers along a side or two, or in the corners the tilt leaves."""
    return _chalked(u8, rng, (0.85, 1.2))


def erased_board(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of a digit on a board filling the frame, a chalkboard (grainy chalk) or a whiteboard
    (a marker), that was wiped before: 2-5 eraser swipes across it, each 8-20% of the frame tall, soft,
    leaving 8-25% of the way from the board to the ink (a chalkboard's haze, a whiteboard's ghosting;
    where swipes overlap, more). Light falling off, camera blur, grain, JPEG."""
    height, width = 900, 1200
    chalk = rng.random() < 0.5
    if chalk:
        tone = np.array([[0.12, 0.2, 0.15], [0.13, 0.13, 0.14]], np.float32)[int(rng.integers(2))]
        ground, pen = tone * rng.uniform(0.8, 1.6), np.full(3, 0.9, np.float32)
    else:
        ground = np.full(3, rng.uniform(0.85, 0.97), np.float32)
        pen = np.array([[0.1, 0.1, 0.1], [0.1, 0.15, 0.6], [0.1, 0.5, 0.2]], np.float32)[int(rng.integers(3))]
    haze = Image.new("F", (width, height), 0.0)
    for _ in range(int(rng.integers(2, 6))):
        swipe = Image.new("L", (width, height), 0)
        y, x0 = rng.uniform(0, height), rng.uniform(-0.2, 0.6) * width
        x1, tall = x0 + rng.uniform(0.3, 0.8) * width, rng.uniform(0.08, 0.2) * height
        ImageDraw.Draw(swipe).line(
            [(x0, y), (x1, y + rng.uniform(-0.1, 0.1) * height)], fill=255, width=int(tall)
        )
        soft = np.asarray(swipe.filter(ImageFilter.GaussianBlur(rng.uniform(10, 30))), np.float32) / 255
        haze = Image.fromarray(np.asarray(haze) + soft * rng.uniform(0.08, 0.25))
    board = np.ones((height, width, 3), np.float32) * ground
    board += (pen - board) * np.clip(np.asarray(haze), 0, 1)[..., None]
    d = int(min(width, height) * rng.uniform(0.3, 0.6))
    y, x = int((height - d) * rng.uniform(0.3, 0.7)), int((width - d) * rng.uniform(0.3, 0.7))
    ink = ink_at(u8, d)
    if chalk:
        ink = ink * np.clip(rng.uniform(0.75, 0.95) + 0.25 * rng.standard_normal((d, d)), 0, 1)
    board[y : y + d, x : x + d] += (pen - board[y : y + d, x : x + d]) * ink[..., None]
    return _photographed(board, rng)


def _chalked(u8: np.ndarray, rng: np.random.Generator, share: tuple[float, float]) -> bytes:
    """The digit chalked on a board covering ``share`` of the frame's area (drawn from that range), the
    wall round it (``chalk_board``)."""
    height, width = 900, 1200
    rgb = np.empty((height, width, 3), np.float32)
    rgb[:] = rng.uniform(0.6, 0.9) * np.array([1.0, rng.uniform(0.9, 1.0), rng.uniform(0.8, 1.0)], np.float32)
    side = np.sqrt(rng.uniform(*share))
    w, h = int(width * side * rng.uniform(0.9, 1.1)), int(height * side * rng.uniform(0.9, 1.1))
    tone = np.array([[0.12, 0.2, 0.15], [0.13, 0.13, 0.14]], np.float32)[int(rng.integers(2))]
    board = np.ones((h, w, 3), np.float32) * tone * rng.uniform(0.8, 1.6)
    d = int(min(w, h) * rng.uniform(0.3, 0.6))
    y, x = int((h - d) * rng.uniform(0.3, 0.7)), int((w - d) * rng.uniform(0.3, 0.7))
    chalk = ink_at(u8, d) * np.clip(rng.uniform(0.75, 0.95) + 0.25 * rng.standard_normal((d, d)), 0, 1)
    board[y : y + d, x : x + d] += (np.float32(0.9) - board[y : y + d, x : x + d]) * chalk[..., None]
    _lay(rgb, board, rng.uniform(-8, 8), (0.4, 0.6), rng)
    return _photographed(rgb, rng)


def _lay(rgb: np.ndarray, card: np.ndarray, angle: float, centre: tuple[float, float],
         rng: np.random.Generator) -> None:  # fmt: skip
    """Lay ``card`` (RGB 0..1) on ``rgb`` turned by ``angle`` degrees, its centre at ``centre`` of the
    frame's height and width (drawn from that range), cut by the frame where it reaches beyond it."""
    height, width = rgb.shape[:2]
    h, w = card.shape[:2]
    tilted = np.asarray(Image.fromarray(to_u8(card), "RGB").rotate(angle, expand=True), np.float32) / 255
    cover = np.asarray(Image.new("L", (w, h), 255).rotate(angle, expand=True), np.float32)[..., None] / 255
    top = int(rng.uniform(*centre) * height) - cover.shape[0] // 2
    left = int(rng.uniform(*centre) * width) - cover.shape[1] // 2
    rows = slice(max(0, top), min(height, top + cover.shape[0]))
    cols = slice(max(0, left), min(width, left + cover.shape[1]))
    inner = (slice(rows.start - top, rows.stop - top), slice(cols.start - left, cols.stop - left))
    rgb[rows, cols] += (tilted[inner] - rgb[rows, cols]) * cover[inner]


def _photographed(rgb: np.ndarray, rng: np.random.Generator) -> bytes:
    """The scene ``rgb`` as a phone photographs it: light falling off, grain, camera blur, JPEG."""
    height, width = rgb.shape[:2]
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    ang = rng.uniform(0, 2 * np.pi)
    light = 1.0 - rng.uniform(0.0, 0.35) * (np.cos(ang) * xx / width + np.sin(ang) * yy / height + 1) / 2
    rgb = rgb * light[..., None] * rng.uniform(0.8, 1.0) + rng.normal(0, 0.015, rgb.shape).astype(np.float32)
    photo = Image.fromarray(to_u8(rgb), "RGB").filter(ImageFilter.GaussianBlur(rng.uniform(0.6, 2.0)))
    return encoded(photo, "JPEG", quality=int(rng.integers(75, 93)))


def hard_shadow(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of a page with a hard shadow across it (the phone's or the hand's): a straight
    edge at any angle, over the digit or beside it, a penumbra 0.5-3% of the picture wide, the shadow
    35-60% darker than the lit page; the digit 60% of the picture, anywhere; grain, JPEG."""
    side = int(rng.integers(160, 401))
    ink = on_canvas(ink_at(u8, int(side * 0.6)), side, side, rng)
    yy, xx = np.mgrid[0:side, 0:side] / side
    ang = rng.uniform(0, 2 * np.pi)
    across = np.cos(ang) * (xx - 0.5) + np.sin(ang) * (yy - 0.5) - rng.uniform(-0.25, 0.25)
    shade = np.clip(across / rng.uniform(0.005, 0.03) + 0.5, 0.0, 1.0)
    light = 0.92 * (1.0 - rng.uniform(0.35, 0.6) * shade)
    page = light * (1.0 - 0.85 * ink) + 0.015 * rng.standard_normal((side, side))
    return encoded(Image.fromarray(to_u8(page)).convert("RGB"), "JPEG", quality=int(rng.integers(75, 93)))


def lamp_highlight(
    yy: np.ndarray, xx: np.ndarray, centre: tuple[float, float], radius: float, rng: np.random.Generator
) -> np.ndarray:  # fmt: skip
    """A lamp's or the flash's reflection on glossy paper, over the grid ``yy``, ``xx`` (any unit, as
    ``centre`` and ``radius`` are): a soft ellipse up to 2.5 times as long as wide, at any angle, adding
    0.25-0.6 of the paper's light at its centre."""
    cy, cx = centre
    stretch, turn = rng.uniform(1.0, 2.5), rng.uniform(0, np.pi)
    u = (np.cos(turn) * (xx - cx) + np.sin(turn) * (yy - cy)) / (radius * stretch)
    v = (-np.sin(turn) * (xx - cx) + np.cos(turn) * (yy - cy)) / radius
    return rng.uniform(0.25, 0.6) * np.exp(-0.5 * (u * u + v * v) ** rng.uniform(1.0, 2.0))


def glare(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A phone photo of glossy paper (a print, a laminated card, a whiteboard) with a lamp's or the
    flash's reflection on it: a soft elliptical highlight (10-35% of the picture across) over or beside
    the digit, adding 0.25-0.6 of the paper's light to paper and ink alike, the sensor clipping where
    the sum passes white (as in a photo; the ink under the highlight stays readable to a person);
    light falling off, grain, JPEG."""
    side = int(rng.integers(160, 401))
    ink = on_canvas(ink_at(u8, int(side * rng.uniform(0.45, 0.7))), side, side, rng)
    yy, xx = np.mgrid[0:side, 0:side] / side
    ang = rng.uniform(0, 2 * np.pi)
    light = 0.88 - rng.uniform(0.05, 0.2) * (np.cos(ang) * xx + np.sin(ang) * yy + 1) / 2
    # the highlight's centre: on the ink in two photos of three, anywhere on the page otherwise
    ys, xs = np.nonzero(ink > 0.5)
    k = int(rng.integers(len(ys)))
    cy, cx = (ys[k] / side, xs[k] / side) if rng.random() < 2 / 3 else tuple(rng.uniform(0.15, 0.85, 2))
    highlight = lamp_highlight(yy, xx, (cy, cx), rng.uniform(0.05, 0.175), rng)
    page = light * (1.0 - 0.85 * ink) + highlight + 0.015 * rng.standard_normal((side, side))
    return encoded(Image.fromarray(to_u8(page)).convert("RGB"), "JPEG", quality=int(rng.integers(75, 93)))
