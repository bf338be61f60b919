"""Reliability diagram (Guo et al. 2017): accuracy against confidence, before and after temperature."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from .calibration_metrics import expected_calibration_error, reliability_bins  # noqa: E402


def plot_reliability(
    probs_before: torch.Tensor,
    probs_after: torch.Tensor,
    labels: torch.Tensor,
    path: Path,
    title: str,
    bins: int = 15,
) -> Path:
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.6), sharey=True)
    edges = torch.linspace(0, 1, bins + 1)
    centres = (edges[:-1] + edges[1:]) / 2
    for ax, probs, name in zip(
        axes, (probs_before, probs_after), ("uncalibrated", "temperature-scaled"), strict=True
    ):
        conf, acc, count = reliability_bins(probs, labels, bins)
        used = count > 0
        ax.bar(centres[used], acc[used], width=1 / bins, edgecolor="black", alpha=0.75, label="accuracy")
        ax.bar(
            centres[used],
            (conf - acc)[used],
            bottom=acc[used],
            width=1 / bins,
            color="tab:red",
            alpha=0.35,
            label="gap to confidence",
        )
        ax.plot([0, 1], [0, 1], "--", color="gray", label="perfect calibration")
        for c, a, n in zip(centres[used], acc[used], count[used], strict=True):
            ax.text(float(c), float(a) + 0.01, f"{int(n)}", ha="center", fontsize=6, rotation=90)
        ece = expected_calibration_error(probs, labels, bins)
        ax.set(
            xlabel="confidence (top probability)",
            title=f"{name}: ECE {100 * ece:.2f}%",
            xlim=(0, 1),
            ylim=(0, 1.05),
        )
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy")
    axes[1].legend(loc="upper left", fontsize=8)
    fig.suptitle(f"{title} ({bins} bins; numbers: images per bin)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
