"""``python -m training train``: fit a preset on MNIST and write a checkpoint into the model store."""

from __future__ import annotations

import argparse
import csv
import logging
import os
import platform
import random
import re
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from model_store import (
    ModelCard,
    Preprocessing,
    create_model,
    get_config,
    list_presets,
    save_checkpoint,
)

from .augment import AugmentConfig
from .data import DataBundle, load_data
from .distill import DEFAULT_TEMPERATURE, DEFAULT_WEIGHT, KINDS, Teacher
from .distributed import DistInfo, barrier, cleanup, init_distributed
from .engine import evaluate, train_one_epoch
from .pen_digits import add_pen_digits
from .schedule import make_optimizer, warmup_cosine
from .settings import settings
from .stored import load_stored, refuse_other_labels

log = logging.getLogger("training")


def add_train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, choices=list_presets(), help="preset to train")
    p.add_argument(
        "--name",
        help="name in the model store: letters, digits, '.', '_', '-' (default: the preset name)",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="replace a checkpoint of that name already in the store (otherwise refused, unless --resume "
        "from its run folder's last.pt or --init-from it: continuing or refining that model)",
    )
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a preset field, e.g. --set dim=192 (repeatable)",
    )
    p.add_argument("--dataset", default="mnist", choices=["mnist", "fashion-mnist"], help="default: mnist")
    p.add_argument(
        "--data-root",
        type=Path,
        default=settings.data_root,
        help=f"folder holding MNIST/raw/ (env DATA_ROOT; default: {settings.data_root})",
    )
    p.add_argument(
        "--store-dir",
        type=Path,
        default=settings.model_store_dir,
        help="model store to write the checkpoint into (env MODEL_STORE_DIR; default: "
        f"{settings.model_store_dir}, the shipped checkpoints)",
    )
    p.add_argument(
        "--run-dir",
        type=Path,
        help=f"training state, metrics and plots (default: {settings.runs_dir}/<name>; env RUNS_DIR)",
    )
    p.add_argument("--epochs", type=int, default=30, help="default: 30")
    p.add_argument("--batch-size", type=int, default=256, help="per process; default: 256")
    p.add_argument("--lr", type=float, default=1e-3, help="peak AdamW learning rate; default: 1e-3")
    p.add_argument("--weight-decay", type=float, default=0.05, help="default: 0.05")
    p.add_argument("--warmup-epochs", type=float, default=3, help="default: 3")
    p.add_argument("--label-smoothing", type=float, default=0.1, help="default: 0.1")
    p.add_argument("--grad-clip", type=float, default=1.0, help="max grad norm, 0 = off; default: 1.0")
    p.add_argument("--ema-decay", type=float, default=0.999, help="EMA of weights, 0 = off; default: 0.999")
    p.add_argument("--degrees", type=float, default=12.0, help="augmentation rotation; default: 12")
    p.add_argument("--translate", type=float, default=0.1, help="augmentation shift; default: 0.1")
    p.add_argument("--scale", type=float, nargs=2, default=(0.85, 1.15), help="default: 0.85 1.15")
    p.add_argument("--shear", type=float, default=10.0, help="augmentation shear degrees; default: 10")
    p.add_argument("--morph-prob", type=float, default=0.1, help="stroke thicken/thin chance; default: 0.1")
    p.add_argument(
        "--elastic-alpha",
        type=float,
        default=0.0,
        help="elastic distortion strength in pixels (Simard et al. 2003 used 34), 0 = off; default: 0",
    )
    p.add_argument(
        "--elastic-sigma", type=float, default=4.0, help="elastic field smoothness in pixels; default: 4"
    )
    p.add_argument("--erase-prob", type=float, default=0.0, help="random-erasing chance, 0 = off; default: 0")
    p.add_argument("--no-augment", action="store_true", help="turn augmentation off")
    p.add_argument(
        "--pen-digits",
        type=int,
        default=0,
        help="add this many generated digits (training.pen_digits: pen strokes in styles MNIST lacks, "
        "continental 1s and 7s, open 4s, ...; 30%% seven-segment display digits) to the training split; "
        "validation and test stay MNIST; default: 0",
    )
    p.add_argument(
        "--init-from",
        type=Path,
        help="start from this checkpoint directory's weights (same architecture) instead of a fresh "
        "initialisation: fine-tuning; the card records the checkpoint and its own training command",
    )
    p.add_argument(
        "--teacher",
        type=Path,
        help="distil from this checkpoint directory (e.g. the CNN): the student also learns its answers on "
        "every augmented batch (training.distill); the card records the teacher",
    )
    p.add_argument("--distill", choices=KINDS, help="with --teacher: hard (its top class, DeiT) or soft "
                   "(its probabilities at --distill-temperature, Hinton); default: hard")  # fmt: skip
    p.add_argument(
        "--distill-weight",
        type=float,
        help=f"with --teacher: the teacher's share of the loss, 0..1; default: {DEFAULT_WEIGHT}",
    )
    p.add_argument(
        "--distill-temperature",
        type=float,
        help=f"with --distill soft: softmax temperature; default: {DEFAULT_TEMPERATURE:g}",
    )
    p.add_argument("--val-size", type=int, default=5000, help="held out from train; default: 5000")
    p.add_argument("--limit-train", type=int, help="use only this many training images (smoke runs)")
    p.add_argument("--limit-test", type=int, help="evaluate on only this many test images")
    p.add_argument("--max-steps", type=int, help="stop each epoch after this many steps (smoke runs)")
    p.add_argument("--seed", type=int, default=0, help="default: 0")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N; default: auto")
    p.add_argument("--no-amp", action="store_true", help="disable bf16 autocast on GPU")
    p.add_argument(
        "--compile",
        action="store_true",
        help="torch.compile the training steps (a small model on a GPU is launch-bound: fewer, fused "
        "kernels); evaluation, EMA and the checkpoint use the plain module",
    )
    p.add_argument("--resume", action="store_true", help="continue from <run-dir>/last.pt")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument(
        "--no-calibrate",
        action="store_true",
        help="skip the temperature and digit-detector fit at the end (minutes of CPU work, so a short GPU "
        "lease goes to training); fit them later with `python -m training calibrate NAME`",
    )
    p.add_argument("--no-progress", action="store_true", help="no tqdm bars (logs only)")


def parse_overrides(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects KEY=VALUE, got {item!r}")
        for cast in (int, float):
            try:
                out[key] = cast(raw)
                break
            except ValueError:
                continue
        else:
            out[key] = {"true": True, "false": False}.get(raw.lower(), raw)
    return out


def pick_device(name: str, info: DistInfo) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and info.enabled:
        name = f"cuda:{info.local_rank}"
    return torch.device(name)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def hardware_string(device: torch.device) -> str:
    if device.type == "cuda":
        return f"{torch.cuda.get_device_name(device)} x{int(os.environ.get('WORLD_SIZE', '1'))}"
    return f"{platform.processor() or platform.machine()} CPU, {os.cpu_count()} cores"


def training_command(argv: list[str]) -> str:
    launcher = (
        "torchrun --nproc_per_node=" + os.environ["WORLD_SIZE"] + " -m training"
        if ("TORCHELASTIC_RUN_ID" in os.environ)
        else "python -m training"
    )
    return f"{launcher} {shlex.join(argv)}"


def save_state(path: Path, state: dict) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)  # atomic: a crash never leaves a half-written resume file


def main(args: argparse.Namespace, argv: list[str] | None = None) -> Path:
    """Train; ``argv`` (default: this process's arguments) is recorded as the card's command."""
    args.argv = list(sys.argv[1:] if argv is None else argv)
    info = init_distributed(
        "cuda"
        if args.device.startswith("cuda") or (args.device == "auto" and torch.cuda.is_available())
        else "cpu"
    )
    try:
        return _train(args, info)
    finally:
        cleanup(info)


def _train(args: argparse.Namespace, info: DistInfo) -> Path:
    device = pick_device(args.device, info)
    name = args.name or args.model
    run_dir = _run_dir(args, name)
    amp = not args.no_amp and device.type == "cuda"
    seed_everything(args.seed)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    def load() -> DataBundle:
        return load_data(
            args.dataset, args.data_root, args.val_size, args.seed, args.limit_train, args.limit_test
        )

    overrides = _check_options(args, name)  # before any data is read or folder made
    run_dir.mkdir(parents=True, exist_ok=True)
    data = load() if info.is_main else None  # rank 0 unpacks the archives first,
    barrier(info)
    data = data or load()  # then the others read the result
    train_split = data.train
    if args.pen_digits:  # the training split only: validation, test and calibration stay MNIST
        train_split = add_pen_digits(train_split, args.pen_digits, args.seed)
    train_split, val_split, test_split = (
        train_split.to(device),
        data.val.to(device),
        data.test.to(device),
    )

    if args.dataset != "mnist":
        overrides.setdefault("num_classes", len(data.labels))
    model = create_model(args.model, **overrides)
    cfg = model.cfg
    init_from = _init_from(model, args.init_from, data.labels, info.is_main) if args.init_from else None
    teacher = None
    if args.teacher:
        teacher = Teacher.load(args.teacher, data.labels, cfg.image_size, args.distill, args.distill_weight,
                               args.distill_temperature).to(device)  # fmt: skip
        if info.is_main:
            log.info("distilling from %s (%s, %s params, test accuracy %s): %s, weight %.2f", args.teacher,
                     teacher.record["arch"], f"{teacher.record['num_params']:,}",
                     teacher.record["test_accuracy"], teacher.kind, teacher.weight)  # fmt: skip
    model = model.to(device)
    n_params = model.get_num_params()
    ddp_model: nn.Module = DistributedDataParallel(model) if info.enabled else model
    if info.enabled:  # same init everywhere (DDP broadcasts it), but each rank its own dropout masks
        torch.manual_seed(args.seed + info.rank)
    ema = (AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(args.ema_decay), use_buffers=True)
           if args.ema_decay else None)  # fmt: skip

    steps_per_epoch = len(train_split) // info.world_size // args.batch_size
    if args.max_steps:
        steps_per_epoch = min(steps_per_epoch, args.max_steps)
    if steps_per_epoch < 1:
        raise SystemExit(f"batch size {args.batch_size} is larger than the training shard")
    kept = args.ema_decay ** (steps_per_epoch * args.epochs) if ema is not None else 0.0
    if kept > 0.1 and info.is_main:  # the EMA starts at the random weights: a short run saves those
        log.warning("--ema-decay %g over %d steps keeps %.0f%% of the initial weights in the saved model; "
                    "for a short run pass --ema-decay 0 or a smaller decay", args.ema_decay,
                    steps_per_epoch * args.epochs, 100 * kept)  # fmt: skip
    optimizer = make_optimizer(model, args.lr, args.weight_decay, device)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        warmup_cosine(steps_per_epoch * args.epochs, int(steps_per_epoch * args.warmup_epochs)),
    )
    gen = torch.Generator(device=device).manual_seed(args.seed * 1000 + info.rank)
    aug = _augment(args)

    history: list[dict] = []
    start_epoch, wall_before = 0, 0.0
    state_path = run_dir / "last.pt"
    if args.resume and state_path.exists():
        state = torch.load(state_path, map_location=device, weights_only=True)  # tensors only, no code
        _check_same_run(state.get("args", {}), args, state_path)
        _restore(state, model, ema, optimizer, scheduler, gen, device)
        start_epoch, history, wall_before = state["epoch"], state["history"], state["wall_time_s"]
        if info.is_main:
            log.info("resumed from %s at epoch %d", state_path, start_epoch + 1)
    elif args.resume and info.is_main:
        log.info("no %s yet: starting from scratch", state_path)

    if info.is_main:
        log.info(
            "%s (%s): %s params on %s, %d train / %d val / %d test images, %d steps/epoch",
            name,
            args.model,
            f"{n_params:,}",
            hardware_string(device),
            len(train_split),
            len(val_split),
            len(test_split),
            steps_per_epoch,
        )
    writer = _tensorboard(run_dir) if info.is_main else None
    # The compiled module shares its parameters with `model`; one recompile for a short last batch.
    train_net = torch.compile(ddp_model) if args.compile else ddp_model
    t0 = time.perf_counter()
    for epoch in range(start_epoch, args.epochs):
        stats = train_one_epoch(
            train_net, train_split, optimizer=optimizer, scheduler=scheduler, batch_size=args.batch_size,
            mean=data.mean, std=data.std, aug=aug, gen=gen, shuffle_seed=args.seed * 1000,
            label_smoothing=args.label_smoothing,
            grad_clip=args.grad_clip, amp=amp, dist_info=info, epoch=epoch, max_steps=args.max_steps,
            on_step=(lambda: ema.update_parameters(model)) if ema is not None else None,
            progress=not args.no_progress, teacher=teacher,
        )  # fmt: skip
        eval_model = ema.module if ema is not None else model
        val_loss, val_acc, _ = evaluate(eval_model, val_split, mean=data.mean, std=data.std, amp=amp)
        row = {"epoch": epoch + 1, "train_loss": stats.loss, "train_acc": stats.accuracy,
               "val_loss": val_loss, "val_acc": val_acc, "lr": scheduler.get_last_lr()[0],
               "epoch_s": stats.seconds, "images_per_s": stats.images_per_s}  # fmt: skip
        history.append(row)
        if info.is_main:
            log.info("epoch %3d/%d  train loss %.4f acc %.4f | val loss %.4f acc %.4f "
                     "| lr %.2e | %.1fs (%.0f img/s)", epoch + 1, args.epochs, stats.loss, stats.accuracy,
                     val_loss, val_acc,
                     row["lr"], stats.seconds, stats.images_per_s)  # fmt: skip
            _write_metrics(run_dir / "metrics.csv", history)
            if writer:
                for k, v in row.items():
                    if k != "epoch":
                        writer.add_scalar(k, v, epoch + 1)
            wall = wall_before + time.perf_counter() - t0
            save_state(state_path, _state(model, ema, optimizer, scheduler, gen, device) | {
                "epoch": epoch + 1, "history": history, "wall_time_s": wall, "args": _jsonable(vars(args)),
            })  # fmt: skip
    wall = wall_before + time.perf_counter() - t0
    if writer:
        writer.close()

    final = ema.module if ema is not None else model
    if not info.is_main:
        return run_dir
    test_loss, test_acc, test_logits = evaluate(final, test_split, mean=data.mean, std=data.std, amp=False)
    last = history[-1] if history else {}
    log.info(
        "test (%d images): loss %.4f accuracy %.4f (%d errors)",
        len(test_split),
        test_loss,
        test_acc,
        int(round((1 - test_acc) * len(test_split))),
    )
    card = ModelCard(
        name=name, preset=args.model, architecture=cfg.to_dict(), num_params=n_params, labels=data.labels,
        dataset={"name": args.dataset, "train_images": len(train_split), "val_images": len(val_split),
                 "test_images": len(test_split), "val_split_seed": args.seed, "pen_digits": args.pen_digits},
        preprocessing=Preprocessing(image_size=cfg.image_size, mean=data.mean, std=data.std),
        metrics={"test_accuracy": test_acc, "test_loss": test_loss, "val_accuracy": last.get("val_acc", 0.0),
                 "val_loss": last.get("val_loss", 0.0), "train_loss": last.get("train_loss", 0.0)},
        training=_training_record(args, wall, device, info, amp, init_from, teacher),
    )  # fmt: skip
    out = save_checkpoint(final, card, args.store_dir / name)
    log.info("wrote %s (sha256 %s…)", out, card.weights_sha256[:12])
    if args.no_calibrate:
        log.info("not calibrated (--no-calibrate): served uncalibrated until "
                 "`python -m training calibrate %s --store-dir %s --data-root %s`", name, args.store_dir,
                 args.data_root)  # fmt: skip
    else:
        from .calibrate import calibrate_after_training  # temperature and "is it a digit", in the card

        calibrate_after_training(out, data, args, run_dir / "plots", smoke=bool(args.limit_train))
    if not args.no_plots:
        from .plots import write_all_plots

        paths = write_all_plots(final, test_split, test_logits, history, data, run_dir / "plots")
        log.info("plots: %s", ", ".join(str(p) for p in paths))
    return out


NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _run_dir(args: argparse.Namespace, name: str) -> Path:
    return args.run_dir or settings.runs_dir / name


def _check_options(args: argparse.Namespace, name: str) -> dict[str, Any]:
    """Every option that can be checked without the data, and the preset overrides, checked too."""
    if not NAME.fullmatch(name):
        raise SystemExit(f"--name {name!r}: a letter or digit first, then letters, digits, '.', '_' or '-'")
    dest = args.store_dir / name
    refining = args.init_from is not None and args.init_from.resolve() == dest.resolve()
    state = _run_dir(args, name) / "last.pt"
    continuing = args.resume and state.exists()  # --resume without a state starts a new run
    if (dest / "card.json").exists() and not (args.replace or continuing or refining):
        if args.resume:
            raise SystemExit(
                f"--resume: no {state} to continue from, and {dest} already holds a checkpoint: pass the "
                "--run-dir of the run that wrote it, or --replace to replace it"
            )
        raise SystemExit(
            f"{dest} already holds a checkpoint: pass --name NEW to keep it, or --replace to replace it"
        )
    overrides = parse_overrides(args.overrides)
    try:
        get_config(args.model, **overrides)
    except (TypeError, ValueError) as exc:
        raise SystemExit(f"--set: {exc}") from None
    if args.pen_digits < 0 or (args.pen_digits and args.dataset != "mnist"):
        raise SystemExit("--pen-digits: a count >= 0, and only for --dataset mnist (they are digits)")
    distill_options = (args.distill, args.distill_weight, args.distill_temperature)
    if args.teacher is None and any(v is not None for v in distill_options):
        raise SystemExit("--distill, --distill-weight and --distill-temperature need --teacher")
    return overrides


def _augment(args: argparse.Namespace) -> AugmentConfig:
    if args.no_augment:
        return AugmentConfig(0, 0, (1.0, 1.0), 0, 0)
    return AugmentConfig(
        args.degrees, args.translate, tuple(args.scale), args.shear, args.morph_prob,
        elastic_alpha=args.elastic_alpha, elastic_sigma=args.elastic_sigma, erase_prob=args.erase_prob,
    )  # fmt: skip


def _state(model: nn.Module, ema: AveragedModel | None, optimizer, scheduler, gen, device) -> dict:
    """What a resume needs besides the epoch count and history: weights, optimiser, schedule and
    every random generator the run draws from (augmentation, shuffling, dropout)."""
    return {
        "model": model.state_dict(), "ema": ema.state_dict() if ema is not None else {},
        "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
        "generator": gen.get_state(), "torch_rng": torch.get_rng_state(),
        "cuda_rng": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
    }  # fmt: skip


def _restore(
    state: dict, model: nn.Module, ema: AveragedModel | None, optimizer, scheduler, gen, device
) -> None:
    """``_state`` put back."""
    model.load_state_dict(state["model"])
    if ema is not None and state.get("ema"):
        ema.load_state_dict(state["ema"])
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    gen.set_state(state["generator"].to("cpu") if device.type == "cpu" else state["generator"].cpu())
    if "torch_rng" in state:  # dropout draws from the global generators
        torch.set_rng_state(state["torch_rng"].cpu())
        if device.type == "cuda" and state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(state["cuda_rng"].cpu(), device)


def _training_record(
    args: argparse.Namespace, wall: float, device: torch.device, info: DistInfo, amp: bool,
    init_from: dict | None, teacher: Teacher | None,
) -> dict[str, Any]:  # fmt: skip
    """The card's ``training``: the exact command and arguments, and where and how long it ran."""
    return {
        "command": training_command(args.argv), "args": _jsonable(vars(args)), "seed": args.seed,
        "epochs": args.epochs, "wall_time_s": round(wall, 1), "hardware": hardware_string(device),
        "world_size": info.world_size, "torch_version": torch.__version__, "amp": "bf16" if amp else "fp32",
        "ema_decay": args.ema_decay, **({"init_from": init_from} if init_from else {}),
        **({"teacher": teacher.record} if teacher else {}),
    }  # fmt: skip


def _check_same_run(saved: dict, args: argparse.Namespace, state_path: Path) -> None:
    """--resume continues the run that wrote ``state_path``, not another one (a fine-tune sharing the
    run folder of the checkpoint it started from)."""
    for key in ("model", "init_from", "pen_digits", "teacher"):
        then, now = saved.get(key) or None, getattr(args, key) or None  # 0 pen digits = none
        if str(then) != str(now):
            raise SystemExit(
                f"--resume: {state_path} belongs to a run with --{key.replace('_', '-')} {then}, not {now}; "
                "give this run its own --run-dir"
            )
    then_set, now_set = (  # the architecture's overrides (rates may change: they shape no weights)
        {k: v for k, v in parse_overrides(items or []).items() if k not in REGULARISATION}
        for items in (saved.get("overrides"), args.overrides)
    )
    if then_set != now_set:
        raise SystemExit(
            f"--resume: {state_path} belongs to a run with --set {then_set or 'nothing'}, not "
            f"{now_set or 'nothing'}; give this run its own --run-dir"
        )


# Rates that shape training, not the weights: a fine-tune may change them.
REGULARISATION = ("dropout", "attn_dropout", "emb_dropout", "drop_path")


def _init_from(model: nn.Module, directory: Path, labels: list[str], log_it: bool) -> dict[str, Any]:
    """Load a stored checkpoint's weights into ``model`` (fresh, same architecture and labels); what the
    card should say about where training started (that checkpoint's own start included)."""
    base, card = load_stored(directory, "--init-from")
    theirs, ours = card.model_config().to_dict(), model.cfg.to_dict()
    keys = [k for k in {**theirs, **ours} if k not in REGULARISATION and theirs.get(k) != ours.get(k)]
    if keys:
        differ = ", ".join(f"{k}: {theirs.get(k)} there, {ours.get(k)} here" for k in keys)
        raise SystemExit(f"--init-from: {directory} has another architecture ({differ})")
    refuse_other_labels(card, labels, directory, "--init-from")
    model.load_state_dict(base.state_dict())
    if log_it:
        log.info("starting from %s (sha256 %s…, trained by: %s)", directory, card.weights_sha256[:12],
                 card.training.get("command"))  # fmt: skip
    kept = {k: card.training[k] for k in ("command", "epochs", "wall_time_s", "hardware", "init_from")
            if k in card.training}  # fmt: skip
    test_accuracy = card.metrics.get("test_accuracy")
    return {"path": str(directory), "weights_sha256": card.weights_sha256, "test_accuracy": test_accuracy,
            **kept}  # fmt: skip


def _tensorboard(run_dir: Path):
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # tensorboard is optional
        log.info("tensorboard not installed: metrics go to CSV only")
        return None
    return SummaryWriter(str(run_dir / "tb"))


def _write_metrics(path: Path, history: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(history[0]))
        w.writeheader()
        w.writerows(history)


def _jsonable(d: dict) -> dict:
    return {
        k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v) for k, v in d.items()
    }
