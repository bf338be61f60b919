"""Request payloads: a real MNIST test digit (or a drawn stand-in when MNIST is absent) as PNG / pixels."""

from __future__ import annotations

import numpy as np

from testkit.images import drawn_seven
from testkit.mnist import find_data_root, load_test_split


def load_digits(n: int = 256) -> tuple[np.ndarray, str]:
    """n digits (N, 28, 28) uint8 white-on-black, and where they came from."""
    split = load_test_split(n)
    if split is not None:
        return split[0], f"MNIST test set ({find_data_root()})"
    return drawn_seven(n), "synthetic digit (MNIST not found)"


def pixels_list(gray: np.ndarray) -> list[list[int]]:
    return gray.astype(int).tolist()
