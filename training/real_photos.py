"""Real photographs that are not digits, as a held-out check of ``is_digit``: the sample pictures that
ship inside scikit-image, scikit-learn and matplotlib (an astronaut, a cameraman, a cat, coffee, coins,
a rocket, the moon, a retina, a building in China, a flower, Grace Hopper...) and scikit-image's 200 faces
from Labeled Faces in the Wild.

A user who sends a photo of their cat to a digit service should hear "not a digit". The digit score's
detector is fitted on generated outliers only (``training.outliers``; its ``scenes`` stand in for
photos); none of these pictures is generated nor fitted on. Each photo is sent whole (a JPEG, as a phone
sends it) and as ``crops`` square crops of 15-70% of its short side, 28-256 px, JPEG and PNG, through the
upload path and the model's ``ServingHead`` with its threshold. Pictures of writing (scikit-image's
``text`` and ``page``), drawings and test charts are left out: they are not photos of things.

Without scikit-image (``pip install scikit-image``) its pictures are skipped and the others still sent.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path

import numpy as np
from PIL import Image

from model_store.serving import ServingHead

from .corruption_base import encoded
from .evaluate import preprocess_uploads, served_answers

log = logging.getLogger("training")

# scikit-image's photographs (skimage/data/, shipped in its wheel); its charts, drawings and pages of
# writing are not among them.
SKIMAGE_PHOTOS = (
    "astronaut.png", "brick.png", "camera.png", "cell.png", "chelsea.png", "coffee.png", "coins.png",
    "grass.png", "gravel.png", "hubble_deep_field.jpg", "ihc.png", "microaneurysms.png", "moon.png",
    "motorcycle_left.png", "motorcycle_right.png", "retina.jpg", "rocket.jpg",
)  # fmt: skip
OTHER_PHOTOS = (
    ("sklearn", "datasets/images/china.jpg"),
    ("sklearn", "datasets/images/flower.jpg"),
    ("matplotlib", "mpl-data/sample_data/grace_hopper.jpg"),
)
FACES = ("skimage", "data/lfw_subset.npy")  # 200 faces, 25x25, 0..1
CROP_SIZES = (28, 64, 128, 256)  # px
FACE_SIZE = 100  # px: a face's 25 px enlarged, as a viewer zooms it


def _package_file(package: str, relative: str) -> Path | None:
    """A file shipped inside an installed package, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    return path if path.is_file() else None


def photo_files() -> list[Path]:
    """The photographs on this machine, in a fixed order."""
    found = [_package_file("skimage", f"data/{name}") for name in SKIMAGE_PHOTOS]
    found += [_package_file(package, relative) for package, relative in OTHER_PHOTOS]
    return [p for p in found if p is not None]


def photo_uploads(crops: int, seed: int) -> dict[str, list[bytes]]:
    """{"whole photos", "crops of them", "faces"} -> the uploads, as a user would send them."""
    rng = np.random.default_rng([seed, 2])
    whole, cut = [], []
    for path in photo_files():
        img = Image.open(path).convert("RGB")
        whole.append(encoded(img, "JPEG", quality=90))
        for k in range(crops):
            side = rng.uniform(0.15, 0.7) * min(img.size)
            left, top = rng.uniform(0, img.width - side), rng.uniform(0, img.height - side)
            crop = img.crop((int(left), int(top), int(left + side), int(top + side)))
            size = CROP_SIZES[k % len(CROP_SIZES)]
            crop = crop.resize((size, size), Image.Resampling.BILINEAR)
            cut.append(encoded(crop, "JPEG", quality=90) if k % 2 == 0 else encoded(crop))
    uploads = {"whole photos": whole, "crops of them": cut}
    faces_file = _package_file(*FACES)
    if faces_file is not None:
        faces = np.round(255 * np.load(faces_file)).astype(np.uint8)
        uploads["faces"] = [
            encoded(Image.fromarray(f).resize((FACE_SIZE, FACE_SIZE), Image.Resampling.BILINEAR))
            for f in faces
        ]
    return uploads


def photo_check(heads: dict[str, ServingHead], crops: int, seed: int) -> dict | None:
    """Per group of photos and model: the share called not a digit (of those the preprocessing did not
    refuse as empty, which the service answers 422); None when no photo is on this machine."""
    if not photo_files():
        log.info("skipping the photo check (real photos that are not digits): pip install scikit-image")
        return None
    if _package_file("skimage", "data/camera.png") is None:
        log.info("photo check: scikit-learn's and matplotlib's photos alone; pip install scikit-image")
    result: dict = {}
    for group, uploads in photo_uploads(crops, seed).items():
        x, refused = preprocess_uploads(uploads, len(uploads))
        kept = ~refused
        row: dict = {"pictures": len(uploads), "refused": int(refused.sum()), "flagged": {}}
        for m, head in heads.items():
            not_digit = served_answers(head, x[kept])[1] if kept.any() else np.zeros(0, bool)
            row["flagged"][m] = float(not_digit.mean()) if kept.any() else 1.0
            log.info("photos %-14s %s calls %.1f%% of %d not a digit (%d refused as empty)", group, m,
                     100 * row["flagged"][m], int(kept.sum()), row["refused"])  # fmt: skip
        result[group] = row
    return result


def markdown(result: dict, models: list[str]) -> str:
    """Per group of photos: the share called not a digit, per model, and how many were refused."""
    head = "| photos | pictures | refused as empty | " + " | ".join(models) + " |"
    rows = [
        f"| {group} | {row['pictures']} | {row['refused']} | "
        + " | ".join(f"{100 * row['flagged'][m]:.1f}%" for m in models)
        + " |"
        for group, row in result.items()
    ]
    return "\n".join([head, f"|---|---:|---:|{'---:|' * len(models)}", *rows])
