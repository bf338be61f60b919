"""On-device augmentation: shape and range kept, reproducible from the generator, identity when off."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from training.augment import (
    AugmentConfig,
    augment,
    elastic_displacement,
    random_affine,
    random_erase,
    random_stroke_width,
)

OFF = AugmentConfig(degrees=0, translate=0, scale=(1.0, 1.0), shear=0, morph_prob=0)


@pytest.fixture(scope="module")
def digits() -> torch.Tensor:
    """Stroke-like images in 0..1: a few thick random lines on black, (16, 1, 28, 28)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.zeros(16, 1, 28, 28)
    for i in range(16):
        r, c = torch.randint(6, 20, (2,), generator=gen).tolist()
        x[i, 0, r : r + 3, 4:24] = 1.0
        x[i, 0, 4:24, c : c + 2] = 0.7
    return x


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_keeps_shape_dtype_and_range(digits: torch.Tensor) -> None:
    out = augment(digits.clone(), AugmentConfig(), gen(0))
    assert out.shape == digits.shape and out.dtype == digits.dtype
    assert out.min() >= 0 and out.max() <= 1
    assert not torch.equal(out, digits)


def test_deterministic_given_the_generator_seed(digits: torch.Tensor) -> None:
    cfg = AugmentConfig(morph_prob=0.3)
    a = augment(digits.clone(), cfg, gen(7))
    b = augment(digits.clone(), cfg, gen(7))
    c = augment(digits.clone(), cfg, gen(8))
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)


def test_everything_off_is_identity(digits: torch.Tensor) -> None:
    assert not OFF.enabled
    g = gen(0)
    before = g.get_state()
    assert torch.equal(augment(digits.clone(), OFF, g), digits)
    assert torch.equal(g.get_state(), before)  # no random numbers drawn


def test_zero_affine_is_identity(digits: torch.Tensor) -> None:
    torch.testing.assert_close(random_affine(digits, OFF, gen(0)), digits, atol=1e-5, rtol=0)


def test_scale_above_one_enlarges() -> None:
    x = torch.zeros(1, 1, 28, 28)
    x[0, 0, 12:16, 12:16] = 1.0  # a centred 4x4 square
    zoom = AugmentConfig(degrees=0, translate=0, scale=(2.0, 2.0), shear=0, morph_prob=0)
    out = random_affine(x, zoom, gen(0))
    assert out.sum().item() == pytest.approx(4 * x.sum().item(), rel=0.15)
    assert out[0, 0, 11:17, 11:17].min() > 0.99  # now an ~8x8 square around the centre
    outside = out.clone()
    outside[0, 0, 9:19, 9:19] = 0
    assert outside.abs().max() < 1e-6


def test_translation_stays_within_bounds(digits: torch.Tensor) -> None:
    shift = AugmentConfig(degrees=0, translate=0.1, scale=(1.0, 1.0), shear=0, morph_prob=0)
    out = random_affine(digits, shift, gen(3))
    # a shift of at most 10% (2.8 px) moves the centre of mass by at most ~3 px
    rows = torch.arange(28.0).view(1, 1, 28, 1)
    com = lambda t: (t * rows).sum((1, 2, 3)) / t.sum((1, 2, 3))  # noqa: E731
    assert (com(out) - com(digits)).abs().max() <= 3.0
    assert (com(out) - com(digits)).abs().max() > 0.1


def test_stroke_width_picks_thicker_or_thinner(digits: torch.Tensor) -> None:
    thick = F.max_pool2d(digits, 3, stride=1, padding=1)
    assert torch.equal(random_stroke_width(digits, 0.0, gen(0)), digits)
    assert torch.equal(random_stroke_width(digits, 1.0, gen(0)), thick)  # everything thickened
    out = random_stroke_width(digits, 0.5, gen(0))  # half thickened, half thinned
    for o, x, t in zip(out, digits, thick, strict=True):
        assert torch.equal(o, t) or (o.sum() < x.sum() and (o <= x).all())


ELASTIC = AugmentConfig(degrees=0, translate=0, scale=(1.0, 1.0), shear=0, morph_prob=0, elastic_alpha=34)


def test_elastic_keeps_shape_and_range_and_is_seeded(digits: torch.Tensor) -> None:
    assert ELASTIC.enabled and ELASTIC.warps
    a = augment(digits.clone(), ELASTIC, gen(5))
    assert a.shape == digits.shape and a.dtype == digits.dtype
    assert a.min() >= 0 and a.max() <= 1
    assert not torch.allclose(a, digits, atol=1e-3)  # it moved the strokes
    assert torch.equal(a, augment(digits.clone(), ELASTIC, gen(5)))
    assert not torch.allclose(a, augment(digits.clone(), ELASTIC, gen(6)))
    # A smooth, local warp: the ink is roughly conserved and stays near where it was.
    assert a.sum().item() == pytest.approx(digits.sum().item(), rel=0.15)
    rows = torch.arange(28.0).view(1, 1, 28, 1)
    com = lambda t: (t * rows).sum((1, 2, 3)) / t.sum((1, 2, 3))  # noqa: E731
    assert (com(a) - com(digits)).abs().max() < 2.0


def test_elastic_field_is_smooth_and_scaled_in_pixels() -> None:
    field = elastic_displacement((64, 1, 28, 28), alpha=34, sigma=4, gen=gen(0))
    assert field.shape == (64, 28, 28, 2)
    px = field * 14  # grid units -> pixels (2 / 28 per pixel)
    assert 0.5 < px.std().item() < 3.0  # Simard's alpha=34, sigma=4: displacements of a pixel or two
    # neighbouring pixels move almost together (a smooth field, not per-pixel noise)
    step = (px[:, 1:] - px[:, :-1]).abs().mean() / px.abs().mean()
    assert step < 0.3
    assert torch.equal(
        elastic_displacement((2, 1, 28, 28), 34, 4, gen(1)),
        elastic_displacement((2, 1, 28, 28), 34, 4, gen(1)),
    )


def test_random_erase_blanks_one_small_rectangle(digits: torch.Tensor) -> None:
    ones = torch.ones(200, 1, 28, 28)
    assert torch.equal(random_erase(ones, 0.0, gen(0)), ones)
    out = random_erase(ones, 1.0, gen(0))
    erased = (out == 0).sum((1, 2, 3)).float() / (28 * 28)
    assert (erased > 0).all() and (erased <= 0.2).all()  # 2-12% of the image, rounded up to whole pixels
    for o in out[:20, 0]:  # the blanked pixels form one axis-aligned rectangle
        r, c = (o == 0).nonzero(as_tuple=True)
        assert (o[r.min() : r.max() + 1, c.min() : c.max() + 1] == 0).all()
    some = random_erase(ones, 0.3, gen(0))
    share = ((some == 0).flatten(1).any(1)).float().mean().item()
    assert 0.15 < share < 0.45
    cfg = AugmentConfig(degrees=0, translate=0, scale=(1.0, 1.0), shear=0, morph_prob=0, erase_prob=1.0)
    assert cfg.enabled and not cfg.warps
    out = augment(digits.clone(), cfg, gen(0))
    assert (out <= digits).all() and out.sum() < digits.sum()  # only blanks, never adds ink
