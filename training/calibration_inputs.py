"""What ``python -m training calibrate`` feeds a model: MNIST's splits, generated outliers, drawn, pen
and corrupted digits, each upload through the real preprocessing, made once per dataset split and shared
by the checkpoints; and one forward pass's outputs over a set, what every digit score is computed from."""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass

import numpy as np
import torch

from model_store.preprocess import ImageError, preprocess_bytes
from model_store.serving import ServingHead

from .corruptions import CORRUPTIONS
from .data import DataBundle
from .drawn import drawn_digits
from .evaluate import UPLOAD_MAX_PIXELS
from .outliers import FAMILIES, generate_outliers
from .pen_digits import pen_digits
from .robustness import preprocess_corrupted

log = logging.getLogger("training")


def uploads_to_tensor(pngs: list[bytes]) -> tuple[torch.Tensor, torch.Tensor]:
    """PNG uploads through the real preprocessing -> (N, 1, 28, 28) 0..1 and which were accepted.

    A picture the preprocessing refuses (no ink, too little contrast) never reaches the model.
    """
    arrays, ok = [], []
    for png in pngs:
        try:
            arrays.append(preprocess_bytes(png, UPLOAD_MAX_PIXELS))
            ok.append(True)
        except ImageError:
            ok.append(False)
        except ValueError:  # a preprocessing bug, not a refusal: count it as refused, but say so
            log.warning("preprocess_bytes failed on a generated upload", exc_info=True)
            ok.append(False)
    x = torch.from_numpy(np.stack(arrays)) if arrays else torch.zeros(0, 28, 28)
    return x[:, None].float(), torch.tensor(ok)


@dataclass
class Outputs:
    """One forward pass over a set: what every digit score is computed from."""

    features: torch.Tensor
    logits: torch.Tensor
    summaries: torch.Tensor

    def __getitem__(self, mask: torch.Tensor) -> Outputs:
        return Outputs(self.features[mask], self.logits[mask], self.summaries[mask])


@torch.inference_mode()
def model_outputs(
    head: ServingHead, images01: torch.Tensor, device: torch.device, batch: int = 1000
) -> Outputs:
    """0..1 images -> penultimate features, logits and layer summaries, on the CPU."""
    parts: list[list[torch.Tensor]] = [[], [], []]
    for i in range(0, len(images01), batch):
        f, z, s, _ = head.layers(head.normalize(images01[i : i + batch].to(device)))
        for part, t in zip(parts, (f, z, s), strict=True):
            part.append(t.float().cpu())
    return Outputs(*(torch.cat(p) for p in parts))


def u8_to_01(images: torch.Tensor) -> torch.Tensor:
    return images.float() / 255


def corrupted_digits(images: torch.Tensor, per_kind: int, seed: int) -> torch.Tensor:
    """``per_kind`` digits under each shipped corruption, through the upload preprocessing (the ones
    refused as empty dropped: a 422, never a digit score)."""
    pick = np.random.default_rng(seed).permutation(len(images))[: per_kind * len(CORRUPTIONS)]
    out = []
    for k, name in enumerate(CORRUPTIONS):
        digits = images[pick[k * per_kind : (k + 1) * per_kind], 0].numpy()
        x, refused = preprocess_corrupted(name, digits, seed)
        out.append(x[~refused])
    return torch.from_numpy(np.concatenate(out))[:, None].float()


def generated_uploads(args: argparse.Namespace, seeds: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """Outliers of ``seeds`` that pass the preprocessing -> (images, family index)."""
    xs, fams = [], []
    for seed in seeds:
        outliers = generate_outliers(args.outliers_per_family, seed)
        x, ok = uploads_to_tensor([o.png for o in outliers])
        xs.append(x)
        fams.append(torch.tensor([FAMILIES.index(o.family) for o in outliers])[ok])
    return torch.cat(xs), torch.cat(fams)


def drawn_uploads(args: argparse.Namespace, seeds: list[int]) -> torch.Tensor:
    xs = []
    for seed in seeds:
        pngs, _ = drawn_digits(args.drawn_per_class, seed)
        xs.append(uploads_to_tensor(pngs)[0])
    return torch.cat(xs)


@dataclass
class Inputs:
    """What calibration feeds a model, the same for every model of one dataset split: generated once
    (uploads through the real preprocessing take most of a run) and shared by the checkpoints."""

    data: DataBundle
    fit_idx: torch.Tensor  # training images the statistics are fitted on
    fit_seeds: list[int]
    fit_out_x: torch.Tensor  # outliers to fit on (seeds fit_seeds) and their families
    fit_families: torch.Tensor
    fit_drawn_x: torch.Tensor
    fit_pen_x: torch.Tensor  # the writing styles training adds to MNIST, as training sees them
    fit_corrupted_x: torch.Tensor
    outliers: list
    out_x: torch.Tensor  # outliers to measure on (seed args.seed); out_ok: not refused as empty
    out_ok: torch.Tensor
    drawn_count: int
    drawn_labels: np.ndarray
    drawn_x: torch.Tensor
    drawn_ok: torch.Tensor
    test_corrupted_x: torch.Tensor


def make_inputs(data: DataBundle, args: argparse.Namespace) -> Inputs:
    """Fit on seeds seed+1.., measure on seed; corrupted digits: training images to fit, test ones to
    measure."""
    gen = torch.Generator().manual_seed(args.seed)
    fit_idx = torch.randperm(len(data.train), generator=gen)[: args.fit_images]
    fit_seeds = [args.seed + 1 + k for k in range(args.fit_seeds)]
    fit_out_x, fit_families = generated_uploads(args, fit_seeds)
    outliers = generate_outliers(args.outliers_per_family, args.seed)
    out_x, out_ok = uploads_to_tensor([o.png for o in outliers])
    drawn_png, drawn_labels = drawn_digits(args.drawn_per_class, args.seed)
    drawn_x, drawn_ok = uploads_to_tensor(drawn_png)
    return Inputs(
        data, fit_idx, fit_seeds, fit_out_x, fit_families, drawn_uploads(args, fit_seeds[:2]),
        u8_to_01(torch.from_numpy(pen_digits(args.pen_digits, fit_seeds[0])[0])[:, None]),
        corrupted_digits(data.train.images, args.corrupted_per_kind, args.seed + 1),
        outliers, out_x, out_ok, len(drawn_png), drawn_labels, drawn_x, drawn_ok,
        corrupted_digits(data.test.images, args.corrupted_per_kind, args.seed),
    )  # fmt: skip
