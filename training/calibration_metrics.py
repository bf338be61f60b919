"""The numbers behind calibration: temperature fit, expected calibration error, flag rates, and the
logistic fit of how sure ``/read`` is of a whole reading.

Pure functions, no I/O: ``training/calibrate.py`` feeds them a checkpoint's logits and scores,
``training/fit_confidence.py`` and ``read-eval`` the readings of generated numbers.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F


def fit_temperature(logits: torch.Tensor, labels: torch.Tensor, max_iter: int = 100) -> float:
    """The T > 0 that minimises the NLL of softmax(logits / T) (Guo et al. 2017), fitted in log T."""
    logits, labels = logits.double(), labels.long()
    log_t = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([log_t], lr=0.5, max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = F.cross_entropy(logits / log_t.exp(), labels)
        loss.backward()
        return loss

    opt.step(closure)
    return float(log_t.detach().exp())


def reliability_bins(
    probs: torch.Tensor, labels: torch.Tensor, bins: int = 15
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per equal-width confidence bin: mean confidence, accuracy and count (empty bins: 0, 0, 0)."""
    conf, pred = probs.max(dim=-1)
    return binned(conf, pred == labels, bins)


def binned(
    conf: torch.Tensor, right: torch.Tensor, bins: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """Per equal-width bin of ``conf``: its mean, the share ``right`` and the count (empty bins: 0, 0, 0)."""
    # Bin (i/bins, (i+1)/bins]: a confidence of exactly 1 falls into the last bin.
    idx = (conf.double() * bins).ceil().long().clamp(1, bins) - 1
    count = torch.bincount(idx, minlength=bins).double()
    conf_sum = torch.bincount(idx, weights=conf.double(), minlength=bins)
    right_sum = torch.bincount(idx, weights=right.double(), minlength=bins)
    safe = count.clamp_min(1)
    return conf_sum / safe, right_sum / safe, count


def expected_calibration_error(probs: torch.Tensor, labels: torch.Tensor, bins: int = 15) -> float:
    """ECE: the count-weighted mean |accuracy - confidence| over ``bins`` equal-width bins."""
    conf, acc, count = reliability_bins(probs, labels, bins)
    return float(((acc - conf).abs() * count).sum() / count.sum())


def threshold_at(scores: torch.Tensor, flag_rate: float) -> float:
    """The score below which a fraction ``flag_rate`` of ``scores`` (digits) falls."""
    return float(torch.quantile(scores.double(), flag_rate))


def flag_rate(scores: torch.Tensor, threshold: float) -> float:
    """Fraction flagged "not a digit" (score < threshold: ``is_digit = score >= threshold``)."""
    return float((scores < threshold).double().mean()) if len(scores) else 0.0


def auroc(digits: torch.Tensor, outliers: torch.Tensor) -> float:
    """P(a random digit scores above a random outlier), ties count half: threshold-free separation."""
    both = torch.cat([digits, outliers]).double()
    ranks = torch.empty_like(both)
    ranks[both.argsort()] = torch.arange(1, len(both) + 1, dtype=torch.float64)
    # average the ranks of ties, so equal scores count half
    uniq, inverse = torch.unique(both, return_inverse=True)
    mean_rank = torch.zeros(len(uniq), dtype=torch.float64).index_add_(0, inverse, ranks)
    mean_rank /= torch.bincount(inverse, minlength=len(uniq)).double()
    r = mean_rank[inverse][: len(digits)].sum()
    n, m = len(digits), len(outliers)
    return float((r - n * (n + 1) / 2) / (n * m))


def fit_logistic(
    x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None, l2: float = 1e-3, steps: int = 50
) -> tuple[float, np.ndarray]:  # fmt: skip
    """Logistic regression of ``y`` (0/1) on the rows of ``x`` (each row counting ``weights``, default 1),
    by Newton's method on standardised features with a little L2 on the weights: (bias, coefficients),
    on the features as given."""
    weights = np.ones(len(x)) if weights is None else weights
    mean, sd = x.mean(axis=0), x.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)  # a feature constant over the fit weighs nothing
    z = np.c_[np.ones(len(x)), (x - mean) / sd]
    w = np.zeros(z.shape[1])
    ridge = l2 * np.diag(np.r_[0.0, np.ones(z.shape[1] - 1)])
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w)))
        gradient = z.T @ (weights * (p - y)) + ridge @ w
        hessian = (z * (weights * p * (1 - p))[:, None]).T @ z + ridge + 1e-9 * np.eye(len(w))
        w = w - np.linalg.solve(hessian, gradient)
    coefficients = w[1:] / sd
    return float(w[0] - coefficients @ mean), coefficients


def sureness_error(p: np.ndarray, right: np.ndarray, bins: int = 10) -> float:
    """The ECE of a probability that an answer is right: over equal-width bins of ``p``, the
    count-weighted mean |share right - mean p|."""
    conf, share, count = binned(torch.from_numpy(p), torch.from_numpy(right), bins)
    return float(((share - conf).abs() * count).sum() / count.sum().clamp_min(1))
