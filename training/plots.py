"""PNG plots a person would rather look at than read: curves, confusion, mistakes, attention."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402

from model_store import ViT, attention_rollout, cls_attention  # noqa: E402

from .data import DataBundle, Split, normalize  # noqa: E402


def plot_curves(history: list[dict], path: Path) -> Path:
    epochs = [r["epoch"] for r in history]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.plot(epochs, [r["train_loss"] for r in history], label="train (augmented, smoothed)")
    ax1.plot(epochs, [r["val_loss"] for r in history], label="validation")
    ax1.set(xlabel="epoch", ylabel="cross-entropy", title="Loss")
    ax2.plot(epochs, [100 * r["train_acc"] for r in history], label="train (augmented)")
    ax2.plot(epochs, [100 * r["val_acc"] for r in history], label="validation")
    lowest = min(100 * min(r["train_acc"], r["val_acc"]) for r in history)
    floor = min(95.0, max(0.0, lowest - 1))  # 95-100%, or down to where a short run's curves are
    ax2.set(xlabel="epoch", ylabel="accuracy (%)", title="Accuracy", ylim=(floor, 100))
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend()
    return _save(fig, path)


def plot_confusion(labels: torch.Tensor, preds: torch.Tensor, names: list[str], path: Path) -> Path:
    k = len(names)
    cm = torch.bincount(labels.cpu() * k + preds.cpu(), minlength=k * k).reshape(k, k)
    fig, ax = plt.subplots(figsize=(7, 6))
    off = cm.clone().float()
    off.fill_diagonal_(float("nan"))  # colour the errors; the diagonal would wash them out
    im = ax.imshow(off.numpy(), cmap="Reds")
    for i in range(k):
        for j in range(k):
            ax.text(j, i, int(cm[i, j]), ha="center", va="center", fontsize=8,
                    color="black" if i != j else "tab:blue")  # fmt: skip
    ax.set(
        xticks=range(k),
        yticks=range(k),
        xticklabels=names,
        yticklabels=names,
        xlabel="predicted",
        ylabel="true",
        title=f"Confusion matrix ({int(cm.sum() - cm.trace())} errors)",
    )
    plt.setp(ax.get_xticklabels(), rotation=45 if k and len(names[0]) > 2 else 0)
    fig.colorbar(im, ax=ax, label="errors")
    return _save(fig, path)


def plot_misclassified(
    split: Split, logits: torch.Tensor, names: list[str], path: Path, limit: int = 40
) -> Path:
    probs = logits.softmax(1).cpu()
    preds = probs.argmax(1)
    labels = split.labels.cpu()
    wrong = (preds != labels).nonzero().flatten()
    wrong = wrong[probs[wrong, preds[wrong]].argsort(descending=True)][:limit]  # most confident first
    cols = 10
    rows = max(1, (len(wrong) + cols - 1) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(cols * 1.3, rows * 1.5), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, i in zip(axes.flat, wrong.tolist(), strict=False):
        ax.imshow(split.images[i, 0].cpu().numpy(), cmap="gray")
        ax.set_title(f"{names[labels[i]]}→{names[preds[i]]}\n{probs[i, preds[i]]:.0%}", fontsize=8)
    fig.suptitle(f"Misclassified test images (true→predicted, confidence): {len(wrong)} shown")
    return _save(fig, path)


@torch.inference_mode()
def plot_attention(model: ViT, split: Split, data: DataBundle, path: Path, count: int = 6) -> Path:
    model.eval()
    count = min(count, len(split))  # a --limit-test below 6 still gets its maps
    x = normalize(split.images[:count], data.mean, data.std)
    logits, attn = model.forward_with_attention(x)
    g = model.cfg.grid_size
    layers = attn.shape[1]
    cls = cls_attention(attn).mean(dim=2).reshape(count, layers, g, g).cpu()  # head mean
    rollout = attention_rollout(attn).reshape(count, g, g).cpu()
    show_layers = sorted({0, layers // 2, layers - 1})
    cols = 2 + len(show_layers)
    fig, axes = plt.subplots(count, cols, figsize=(cols * 1.8, count * 1.8), squeeze=False)
    size = model.cfg.image_size
    for r in range(count):
        img = split.images[r, 0].cpu().numpy()
        axes[r, 0].imshow(img, cmap="gray")
        axes[r, 0].set_title(f"pred {data.labels[logits[r].argmax()]}", fontsize=8)
        maps = [(f"layer {lyr + 1}", cls[r, lyr]) for lyr in show_layers] + [("rollout", rollout[r])]
        for c, (title, m) in enumerate(maps, start=1):
            axes[r, c].imshow(img, cmap="gray")
            extent = (-0.5, size - 0.5, size - 0.5, -0.5)
            axes[r, c].imshow(m.numpy(), cmap="inferno", alpha=0.6, extent=extent)
            axes[r, c].set_title(title, fontsize=8)
    for ax in axes.flat:
        ax.axis("off")
    fig.suptitle("CLS-token attention over patches (head mean) and attention rollout")
    return _save(fig, path)


def write_all_plots(model: nn.Module, test: Split, logits: torch.Tensor, history: list[dict],
                    data: DataBundle, out_dir: Path) -> list[Path]:  # fmt: skip
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    if history:
        paths.append(plot_curves(history, out_dir / "curves.png"))
    paths.append(plot_confusion(test.labels, logits.argmax(1), data.labels, out_dir / "confusion.png"))
    paths.append(plot_misclassified(test, logits, data.labels, out_dir / "misclassified.png"))
    if isinstance(model, ViT):
        paths.append(plot_attention(model, test, data, out_dir / "attention.png"))
    return paths


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
