"""The ``plates`` family of read-eval: house numbers on their plates, photographed on a wall."""

from __future__ import annotations

import numpy as np

from training.numbers import make_family
from training.plate_numbers import PHOTO, PLATES, plate_number


def test_plates_are_house_numbers_photographed_in_gray_and_repeatable() -> None:
    samples = make_family("plates", 12, seed=2)
    texts = [t for _, t in samples]
    assert all(1 <= len(t) <= 4 and t[0] != "0" and t.isdigit() for t in texts), texts
    assert texts == [t for _, t in make_family("plates", 12, seed=2)]
    for picture, _ in samples:
        assert picture.dtype == np.uint8 and picture.shape == (PHOTO[1], PHOTO[0])


def test_a_plates_look_and_border_can_be_chosen_without_changing_the_rest() -> None:
    """Choosing the look or the border draws the same random numbers: the wall, the place and the
    light are the same picture's."""
    dark, light = 0, PLATES.index(((246, 246, 242), (20, 20, 20)))
    a = plate_number("42", np.random.default_rng(1), look=dark, border=False)
    b = plate_number("42", np.random.default_rng(1), look=light, border=False)
    corner = (slice(0, 40), slice(0, 40))  # wall, far from any plate
    assert np.abs(a[corner].astype(int) - b[corner].astype(int)).max() <= 8
    assert abs(float(np.median(a)) - float(np.median(b))) <= 2  # mostly wall (JPEG differs a little)
    # the plate itself: the dark plate's picture is darker where they differ
    differ = np.abs(a.astype(int) - b.astype(int)) > 60
    assert differ.any() and a[differ].mean() < b[differ].mean()
