"""A house number on its plate, photographed on the wall it hangs on (model_store.sheet): the wall and the
plate's printed frame are painted over, and only the figures are left as ink."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageFilter

from model_store import sheet
from model_store.decode import decode_image, to_gray
from model_store.imageops import coarse_copy
from model_store.segment import page_bytes
from testkit.digits import drawn_mnist_digits
from testkit.plates import plate_photo
from training.corruptions import corrupt


@pytest.mark.parametrize("frame", [False, True])
@pytest.mark.parametrize(
    ("plate", "figures", "wall"),
    [(40, 245, 200), (25, 215, 150), (90, 240, 225), (245, 20, 120), (235, 30, 170)],
)
def test_a_plate_on_a_wall_leaves_only_its_figures_as_ink(plate, figures, wall, frame):
    """A dark plate with light figures on a lighter wall was one huge stroke, its figures holes in it;
    a light plate on a darker wall had its edge read as strokes; a printed frame's sides read as 1s
    either side of the number. Now the reading finds its digits where the figures are, and nowhere
    else."""
    for seed, text in enumerate(["42", "1708", "365"]):
        data, (x0, y0, x1, y1) = plate_photo(text, plate, figures, wall, frame, seed)
        page = page_bytes(data, 25_000_000)
        boxes = [page.box([part]) for line in page.lines for part in line]
        assert len(page.lines) == 1, (text, boxes)
        assert min(b[0] for b in boxes) >= x0 - 8 and max(b[2] for b in boxes) <= x1 + 8, (text, boxes)
        assert min(b[1] for b in boxes) >= y0 - 8 and max(b[3] for b in boxes) <= y1 + 8, (text, boxes)


@pytest.mark.parametrize("name", ["thick_stroke", "low_res_8", "glare", "dithered"])
def test_a_bold_digit_on_paper_is_not_taken_for_a_plate(name, monkeypatch):
    """Inverted, a bold digit is a light blob on a darker ground with its loops darker inside it: a
    plate, but for its outline, which bulges and bends, and its loops, patches as long as they are wide
    where a plate's figures are strokes. Without those two checks, some of these were taken for plates
    (and read as their loops)."""
    images, _ = drawn_mnist_digits(12)
    digits = [u8 for u8 in images for _ in range(4)]
    found = {}
    for checked in (True, False):
        if not checked:
            monkeypatch.setattr(sheet, "PLATE_RECTANGLE", 0.0)
            monkeypatch.setattr(sheet, "PLATE_STROKE", 0.0)
        rng = np.random.default_rng(3)
        found[checked] = 0
        for u8 in digits:
            gray = to_gray(decode_image(corrupt(name, upscaled(u8), rng), 25_000_000)).astype(np.float32)
            if min(gray.shape) < 64:
                continue
            coarse, f = coarse_copy(gray)
            inverted = 1.0 - gray
            found[checked] += sheet._on_plate(inverted, 1.0 - coarse, f) is not inverted
            found[checked] += sheet._on_plate(gray, coarse, f) is not gray
    assert found[True] == 0 and found[False] > 0, found


def upscaled(u8: np.ndarray) -> np.ndarray:
    """A bolder digit: MNIST's strokes grown by a pixel (as a marker writes)."""
    img = Image.fromarray(u8).filter(ImageFilter.MaxFilter(3))
    return np.asarray(img)


def test_every_real_photo_crop_is_read_or_refused_with_a_clear_error():
    """Searched for a plate, a photo crop (a motorcycle's tyre, lit from one side) once gave a "plate"
    with no blank cell to continue its level from, and preprocessing raised a ValueError: a 500 for a
    user's photo. Every crop of the real photos (40 of each) now preprocesses, or is refused with an
    ImageError (a 4xx); /read's split starts with the same step."""
    pytest.importorskip("skimage", reason="scikit-image ships the photos (pip install -e '.[dev]')")
    from model_store.decode import ImageError
    from model_store.preprocess import preprocess_bytes
    from training.real_photos import photo_uploads

    for body in photo_uploads(crops=40, seed=0)["crops of them"]:
        try:
            preprocess_bytes(body, 25_000_000)
        except ImageError:
            pass


@pytest.mark.parametrize("seed", range(4))
def test_the_hull_mask_holds_the_cells_within_the_hull_either_way_round(seed):
    """The plate is taken as its convex hull: the cells whose centres lie on the inner side of every
    edge of it (or on it), whichever way round the corners run, checked cell by cell."""
    rng = np.random.default_rng(seed)
    for _ in range(25):
        mask = np.zeros((int(rng.integers(8, 60)), int(rng.integers(8, 60))), bool)
        for _ in range(int(rng.integers(1, 6))):  # a few blobs, far apart or overlapping
            r, c = int(rng.integers(mask.shape[0])), int(rng.integers(mask.shape[1]))
            mask[r : r + int(rng.integers(1, 15)), c : c + int(rng.integers(1, 15))] = True
        hull = sheet._hull(mask)
        if len(hull) < 3:
            continue
        ys, xs = np.mgrid[0 : mask.shape[0], 0 : mask.shape[1]]
        (sx, sy), (ex, ey) = hull.T[:, :, None, None], np.roll(hull, -1, axis=0).T[:, :, None, None]
        cross = (ex - sx) * (ys - sy) - (ey - sy) * (xs - sx)
        within = (cross >= 0).all(axis=0) | (cross <= 0).all(axis=0)
        assert within[mask].all()
        assert np.array_equal(sheet._hull_mask(mask, hull), within)
        assert np.array_equal(sheet._hull_mask(mask, hull[::-1]), within)
