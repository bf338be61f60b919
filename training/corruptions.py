"""Corrupted uploads for the robustness suite: one MNIST digit -> the bytes a user might send.

In the spirit of MNIST-C (Mu & Gilmer, 2019), plus what people produce with phones, scanners and
pencils. Every generator takes a 28x28 uint8 MNIST digit (white on black) and a seeded
``numpy.random.Generator`` and returns an encoded image: the digit drawn as dark ink on light paper
(unless the corruption is about polarity or colour) at a realistic size, as PNG or JPEG. Strengths
are in MNIST pixels (the digit's 20-px box) so that they mean the same at every rendered size.
Nothing is stored: the suite is regenerated from the test set and a seed.

Here: the catalogue (``FAMILIES``, ``corrupt``) and the corruptions of the digit's own pixels (blur,
resolution, faintness, noise, stroke, geometry); the photographed ones are in ``photo_corruptions``, what
the digit is written on and how it is sent in ``page_corruptions``, what they are all made of in
``corruption_base``.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageFilter

from .corruption_base import (
    Corruption,
    affine_mapped,
    convolved,
    encoded,
    ink_at,
    morphed,
    on_canvas,
    on_page,
    random_side,
    to_u8,
)
from .page_corruptions import dithered, form_field, inverted, page_scan, ruled_paper, tight_crop, transparent
from .photo_corruptions import (
    chalk_board,
    chalk_close,
    coloured_paper,
    erased_board,
    glare,
    hard_shadow,
    photo_of_note,
    photo_of_page,
    uneven_paper,
)
from .screen_corruptions import screenshot_of


def clean(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    return encoded(on_page(ink_at(u8, random_side(rng))))


def gaussian_blur(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = random_side(rng)
    sigma = rng.uniform(0.8, 1.6) * side / 28  # out of focus: strokes smeared over ~3-6 MNIST px
    page = Image.fromarray(to_u8(on_page(ink_at(u8, side)))).filter(ImageFilter.GaussianBlur(sigma))
    return encoded(page)


def motion_blur(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = random_side(rng)
    length = rng.uniform(2.0, 4.0) * side / 28
    n = max(3, int(length) | 1)
    kernel = np.zeros((n, n), np.float32)
    kernel[n // 2, :] = 1.0  # a horizontal streak, then turned to a random angle
    kernel = np.asarray(Image.fromarray(kernel, "F").rotate(rng.uniform(0, 180), Image.BILINEAR))
    return encoded(convolved(on_page(ink_at(u8, side)), kernel / kernel.sum()))


def defocus_blur(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = random_side(rng)
    r = rng.uniform(1.0, 2.0) * side / 28  # the disk of a lens out of focus
    n = int(np.ceil(r))
    yy, xx = np.mgrid[-n : n + 1, -n : n + 1]
    disk = (yy**2 + xx**2 <= r**2).astype(np.float32)
    return encoded(convolved(on_page(ink_at(u8, side)), disk / disk.sum()))


def _low_res(box: int) -> Corruption:
    """The digit's 20-px box captured at ``box`` px (scanned or photographed small), then enlarged."""

    def low_res(u8: np.ndarray, rng: np.random.Generator) -> bytes:
        small = max(4, round(28 * box / 20))
        page = Image.fromarray(to_u8(on_page(u8 / 255.0))).resize((small, small), Image.BOX)
        up = [Image.NEAREST, Image.BILINEAR, Image.BICUBIC][int(rng.integers(3))]
        side = random_side(rng)
        return encoded(page.resize((side, side), up))

    low_res.__name__ = f"low_res_{box}"
    return low_res


def soft_scan(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """Everything at once, as in the field: grey ink captured small (9-14 px box), enlarged, soft
    focus, JPEG."""
    small = max(4, round(28 * rng.uniform(9, 14) / 20))
    page = on_page(u8 / 255.0, rng.uniform(0.75, 0.95), rng.uniform(0.3, 0.55))
    img = Image.fromarray(to_u8(page)).resize((small, small), Image.BOX)
    side = random_side(rng)
    img = img.resize((side, side), Image.BICUBIC).filter(
        ImageFilter.GaussianBlur(rng.uniform(0.3, 1.0) * side / 28)
    )
    return encoded(img.convert("RGB"), "JPEG", quality=int(rng.integers(40, 90)))


def low_contrast(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    paper = rng.uniform(0.55, 0.95)
    pen = paper - rng.uniform(0.15, 0.3)  # gray ink on gray paper
    return encoded(on_page(ink_at(u8, random_side(rng)), paper, pen))


def faint_pencil(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """Light, grainy graphite: thin gray strokes whose darkness varies along the line."""
    side = random_side(rng)
    ink = morphed(ink_at(u8, side), int(side / 28), grow=False)
    grain = np.clip(rng.normal(1.0, 0.35, ink.shape), 0.2, 1.6).astype(np.float32)
    page = on_page(ink * grain, 0.93, 0.93 - rng.uniform(0.2, 0.4)) + rng.normal(0, 0.015, ink.shape)
    return encoded(page)


def gaussian_noise(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = random_side(rng)
    return encoded(on_page(ink_at(u8, side)) + rng.normal(0, rng.uniform(0.08, 0.2), (side, side)))


def impulse_noise(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = random_side(rng)
    page = on_page(ink_at(u8, side))
    hit = rng.random((side, side)) < rng.uniform(0.01, 0.04)  # salt and pepper
    page[hit] = rng.integers(0, 2, int(hit.sum()))
    return encoded(page)


def jpeg(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    page = Image.fromarray(to_u8(on_page(ink_at(u8, random_side(rng))))).convert("RGB")
    return encoded(page, "JPEG", quality=int(rng.integers(5, 21)))


def thick_stroke(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = random_side(rng)
    grow = int(rng.uniform(1.5, 3.0) * side / 28)  # a marker: strokes 1.5-3 MNIST px wider
    return encoded(on_page(morphed(ink_at(u8, side), grow, grow=True)))


def thin_stroke(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    side = random_side(rng)
    shrink = int(rng.uniform(0.8, 1.5) * side / 28)  # a fine pen
    return encoded(on_page(morphed(ink_at(u8, side), shrink, grow=False)))


def rotate(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    angle = np.deg2rad(rng.uniform(15, 25) * rng.choice([-1, 1]))
    cos, sin = np.cos(angle), np.sin(angle)
    return encoded(on_page(affine_mapped(ink_at(u8, random_side(rng)), (cos, -sin, sin, cos))))


def shear(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    k = rng.uniform(0.2, 0.4) * rng.choice([-1, 1])  # a slanted hand
    return encoded(on_page(affine_mapped(ink_at(u8, random_side(rng)), (1.0, k, 0.0, 1.0))))


def scale(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A small digit on a large page (10-30% of its width)."""
    width, height = int(rng.integers(300, 601)), int(rng.integers(300, 601))
    ink = ink_at(u8, int(min(width, height) * rng.uniform(0.14, 0.4)))
    return encoded(on_page(on_canvas(ink, width, height, rng)))


def translate(u8: np.ndarray, rng: np.random.Generator) -> bytes:
    """A digit anywhere on a wide or tall page."""
    side = random_side(rng)
    long = int(side * rng.uniform(1.5, 3.0))
    width, height = (long, side) if rng.random() < 0.5 else (side, long)
    return encoded(on_page(on_canvas(ink_at(u8, side), width, height, rng)))


# family -> corruptions, in the order the tables show them
FAMILIES: dict[str, dict[str, Corruption]] = {
    "clean": {"clean": clean},
    "blur": {"gaussian_blur": gaussian_blur, "motion_blur": motion_blur, "defocus_blur": defocus_blur},
    "low_res": {**{f"low_res_{b}": _low_res(b) for b in (8, 12, 16)}, "soft_scan": soft_scan},
    "faint": {"low_contrast": low_contrast, "faint_pencil": faint_pencil},
    "noise": {"gaussian_noise": gaussian_noise, "impulse_noise": impulse_noise, "jpeg": jpeg},
    "stroke": {"thick_stroke": thick_stroke, "thin_stroke": thin_stroke},
    "geometry": {"rotate": rotate, "shear": shear, "scale": scale, "translate": translate},
    "paper": {
        "coloured_paper": coloured_paper,
        "uneven_paper": uneven_paper,
        "photo_of_page": photo_of_page,
        "inverted": inverted,
        "transparent": transparent,
        "ruled_paper": ruled_paper,  # appended: the other corruptions keep their digits in calibrate
        "photo_of_note": photo_of_note,  # appended after it, for the same reason
        "form_field": form_field,  # and this after that
    },
    "scan": {"dithered": dithered, "page_scan": page_scan},  # last, for the same reason
    "shadow": {"hard_shadow": hard_shadow},  # then this
    "light": {"glare": glare},  # and this
    "framing": {"tight_crop": tight_crop},  # and this
    "board": {"chalk_board": chalk_board},  # and this
    "screen": {"app_screenshot": screenshot_of},  # and this
    "board_close": {"chalk_close": chalk_close},  # and this
    "erased": {"erased_board": erased_board},  # and this last
}
CORRUPTIONS: dict[str, Corruption] = {n: f for fam in FAMILIES.values() for n, f in fam.items()}
FAMILY_OF: dict[str, str] = {n: fam for fam, group in FAMILIES.items() for n in group}


def corrupt(name: str, u8: np.ndarray, seed: int | np.random.Generator) -> bytes:
    """One corrupted upload of ``u8``; the same name, digit and seed give the same bytes."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    return CORRUPTIONS[name](u8, rng)
