"""Targets, console table, results.json, RESULTS.md and plot.png."""

from __future__ import annotations

import json
from pathlib import Path

from .raw import at_batch

VIT = "vit-mnist"


def find(rows: list[dict], **want) -> dict | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in want.items())), None)


def _target(name: str, value: float | None, goal: float, higher: bool, unit: str, detail: str) -> dict:
    ok = value is not None and (value >= goal if higher else value <= goal)
    return {
        "target": name,
        "value": value,
        "goal": f"{'>=' if higher else '<='} {goal:g}{unit}",
        "pass": ok,
        "status": "PASS" if ok else ("FAIL" if value is not None else "N/A"),
        "detail": detail,
    }


def raw_capacity(res: dict, model: str, batch: float) -> float | None:
    """Best raw images/s of `model` on the served device at the largest measured batch <= `batch`."""
    device = res["settings"]["device"]
    best = None
    for r in res.get("raw", []):
        if r["model"] != model or r["device"] != device:
            continue
        rows = [row for row in r["rows"] if row["batch_size"] <= max(1.0, batch)]
        if rows:
            v = max(rows, key=lambda row: row["batch_size"])["images_per_s"]
            best = v if best is None else max(best, v)
    return best


def add_raw_ratios(res: dict) -> None:
    """served images/s over what the bare model does at the batch size the server formed."""
    for row in res.get("served", []):
        if row.get("model") and row.get("mean_batch_size"):
            cap = raw_capacity(res, row["model"], row["mean_batch_size"])
            row["vs_raw_model"] = row["images_per_s"] / cap if cap else None


def compute_targets(res: dict, ref_c: int = 64) -> list[dict]:
    served, raw, device = res.get("served", []), res.get("raw", []), res["settings"]["device"]
    out = []
    b = find(served, label="batched", model=VIT, payload="png", concurrency=ref_c)
    n = find(served, label="noop", concurrency=ref_c)
    u = find(served, label="unbatched", model=VIT, payload="png", concurrency=ref_c)
    ratio = b["ok_per_s"] / n["ok_per_s"] if b and n and n["ok_per_s"] else None
    detail = f"{b['ok_per_s']:.0f} / {n['ok_per_s']:.0f} req/s" if b and n else "not measured"
    out.append(_target(f"served ViT / no-op at {ref_c} clients", ratio, 0.6, True, "", detail))
    ratio = b["ok_per_s"] / u["ok_per_s"] if b and u and u["ok_per_s"] else None
    detail = f"{b['ok_per_s']:.0f} / {u['ok_per_s']:.0f} req/s" if b and u else "not measured"
    out.append(_target(f"batching / max_batch_size=1 at {ref_c} clients", ratio, 2.0, True, "x", detail))
    batch_rows = [r for r in served if r["label"] == "batch" and r["model"] == VIT]
    best = max(batch_rows, key=lambda r: r["images_per_s"]) if batch_rows else None
    # the raw reference: the best thread setting measured for this device at the same batch size
    vit_raw = [r for r in raw if r["model"] == VIT and r["device"] == device] if best else []
    refs = [row for row in (at_batch(r, best["images_per_request"]) for r in vit_raw) if row]
    ref = max(refs, key=lambda r: r["images_per_s"]) if refs else None
    ratio = best["images_per_s"] / ref["images_per_s"] if best and ref else None
    detail = (
        f"{best['images_per_s']:.0f} img/s ({best['payload']}, c={best['concurrency']}) / raw "
        f"{ref['images_per_s']:.0f} img/s at batch {ref['batch_size']}"
        if best and ref
        else "not measured"
    )
    out.append(_target("batch endpoint / raw model images/s", ratio, 0.5, True, "", detail))
    one = find(served, label="batched", model=VIT, payload="png", concurrency=1)
    p50 = one["p50_ms"] if one else None
    out.append(
        _target("ViT p50 latency, 1 client (PNG)", p50, 3.0, False, " ms", f"{p50:.2f} ms" if p50 else "-")
    )
    cs = res.get("coldstart")
    v = cs["ready_s_median"] if cs else None
    out.append(
        _target("cold start to ready", v, 5.0, False, " s", f"median of {cs['repeats']}" if cs else "-")
    )
    return out


def _f(x, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def md_table(header: list[str], rows: list[list[object]], text_columns: int = 1) -> list[str]:
    """A Markdown table; the first `text_columns` columns left-aligned, the rest (numbers) right."""
    align = ["---" if i < text_columns else "---:" for i in range(len(header))]
    return [f"| {' | '.join(header)} |", f"|{'|'.join(align)}|"] + [
        f"| {' | '.join(str(c) for c in row)} |" for row in rows
    ]


def _dev(r: dict) -> str:
    return f"{r['device']} x{r['threads']} thr" if r["device"] == "cpu" and r.get("threads") else r["device"]


def raw_table(raw: list[dict]) -> list[str]:
    sizes = sorted({row["batch_size"] for r in raw for row in r["rows"]})
    head = "| model | device | " + " | ".join(f"bs {s}" for s in sizes) + " |"
    lines = [head, "|" + "---|" * (2 + len(sizes))]
    for r in raw:
        cells = []
        for s in sizes:
            row = at_batch(r, s)
            cells.append(f"{row['images_per_s']:.0f} ({row['latency_ms_p50']:.2f} ms)" if row else "-")
        lines.append(f"| {r['model']} | {_dev(r)} | " + " | ".join(cells) + " |")
    return lines


def served_table(served: list[dict]) -> list[str]:
    lines = [
        "| run | endpoint / payload | model | clients | ok req/s | images/s | p50 ms | p95 ms | p99 ms "
        "| mean batch | vs raw model | peak PSS MB (all processes) | statuses |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in served:
        status = ", ".join(f"{k}: {v}" for k, v in sorted(r["status"].items()))
        if r["errors"]:
            status += "; errors " + ", ".join(f"{k}: {v}" for k, v in r["errors"].items())
        lines.append(
            f"| {r['label']} | {r['payload']} | {r['model'] or '-'} | {r['concurrency']} "
            f"| {r['ok_per_s']:.0f} | {r['images_per_s']:.0f} | {_f(r['p50_ms'], '.2f')} "
            f"| {_f(r['p95_ms'], '.2f')} | {_f(r['p99_ms'], '.2f')} "
            f"| {_f(r.get('mean_batch_size'))} | {_f(r.get('vs_raw_model'), '.2f')} "
            f"| {_f(r.get('server_pss_mb'), '.0f')} | {status} |"
        )
    return lines


def targets_table(targets: list[dict]) -> list[str]:
    lines = ["| target | goal | measured | result | detail |", "|---|---|---|---|---|"]
    for t in targets:
        lines.append(
            f"| {t['target']} | {t['goal']} | {_f(t['value'], '.2f')} | **{t['status']}** | {t['detail']} |"
        )
    return lines


def markdown(res: dict) -> str:
    m, s = res["machine"], res["settings"]
    out = [
        "# Benchmark results",
        "",
        f"Run {m['timestamp']} on {m['cpu_model']} ({m['cpu_cores']} cores, {m['mem_total_gib']} GiB)"
        + (f", GPU {m['gpu']}" if m.get("gpu") else "")
        + f"; device **{s['device']}**; torch {m['torch']} ({m['torch_threads']} threads); "
        f"python {m['python']}; load average before the run {m['load_avg_1m']}.",
        "",
        f"Command: `{s['command']}`. Models: {s['store']}. Request image: {s['sample']}.",
        "",
        "Load generator: " + s["loadgen"],
        "",
        "## Targets",
        "",
        *targets_table(res["targets"]),
        "",
    ]
    if res.get("raw"):
        out += [
            "## Raw model (in-process, no HTTP): images/s (median latency per batch)",
            "",
            *raw_table(res["raw"]),
            "",
        ]
    if res.get("served"):
        out += ["## Served (loopback)", ""]
        out += [f"Server: {s['server']}.", ""] if s.get("server") else []
        out += [*served_table(res["served"]), ""]
    if res.get("coldstart"):
        cs = res["coldstart"]
        out += [
            "## Cold start",
            "",
            f"Spawn to `/v2/health/ready` 200: median {cs['ready_s_median']:.2f} s over {cs['repeats']} "
            f"({', '.join(f'{x:.2f}' for x in cs['ready_s'])}); "
            f"SIGTERM to exit: {cs['stop_s_median']:.2f} s; exit codes {cs['exit_codes']}; "
            f"memory at ready, all processes: RSS {_f(cs['rss_mb_at_ready'], '.0f')} MB, "
            f"PSS {_f(cs.get('pss_mb_at_ready'), '.0f')} MB.",
            "",
        ]
    out += ["## Settings", "", "```json", json.dumps(s, indent=2), "```", ""]
    return "\n".join(out)


def console(res: dict) -> str:
    lines = []
    for r in res.get("raw", []):
        cells = "  ".join(f"{row['batch_size']}:{row['images_per_s']:.0f}" for row in r["rows"])
        lines.append(f"raw {r['model']:>10} {_dev(r):>11} img/s by batch  {cells}")
    for r in res.get("served", []):
        lines.append(
            f"{r['label']:>9} {r['payload']:>12} {r['model'] or '-':>10} c={r['concurrency']:<4}"
            f"{r['ok_per_s']:8.0f} ok/s {r['images_per_s']:8.0f} img/s  p50 {_f(r['p50_ms'], '7.2f')}"
            f"  p95 {_f(r['p95_ms'], '7.2f')}  p99 {_f(r['p99_ms'], '7.2f')} ms"
            f"  batch {_f(r.get('mean_batch_size'), '5.1f')}"
            f"  {r['status']}" + (f" errors {r['errors']}" if r["errors"] else "")
        )
    if res.get("coldstart"):
        lines.append(f"cold start to ready: {res['coldstart']['ready_s_median']:.2f} s (median)")
    lines.append("")
    for t in res["targets"]:
        lines.append(
            f"{t['status']:>4}  {t['target']:<48} {t['goal']:>10}  "
            f"measured {_f(t['value'], '.2f'):>7}  ({t['detail']})"
        )
    return "\n".join(lines)


def plot(res: dict, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
    ax = axes[0]
    for r in res.get("raw", []):
        xs = [row["batch_size"] for row in r["rows"]]
        ax.plot(xs, [row["images_per_s"] for row in r["rows"]], marker="o", label=f"{r['model']} ({_dev(r)})")
    ax.set(xscale="log", yscale="log", xlabel="batch size", ylabel="images/s", title="raw model throughput")
    ax.set_xscale("log", base=2)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    served = res.get("served", [])
    series: dict[str, list[dict]] = {}
    for r in served:
        if r["payload"] in ("png", "noop"):
            series.setdefault(f"{r['label']} {r['model'] or 'no-op'}", []).append(r)
    for name, rows in series.items():
        rows = sorted(rows, key=lambda r: r["concurrency"])
        cs = [r["concurrency"] for r in rows]
        axes[1].plot(cs, [r["ok_per_s"] for r in rows], marker="o", label=name)
        line = axes[2].plot(cs, [r["p50_ms"] for r in rows], marker="o", label=f"{name} p50")
        axes[2].plot(cs, [r["p99_ms"] for r in rows], ls="--", color=line[0].get_color(), label=f"{name} p99")
    axes[1].set(xlabel="concurrent clients", ylabel="requests/s (200)", title="served throughput (PNG)")
    axes[1].set_yscale("log")
    axes[2].set(xlabel="concurrent clients", ylabel="latency ms", yscale="log", title="served latency")
    for ax in axes[1:]:
        ax.set_xscale("log", base=2)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    m, s = res["machine"], res["settings"]
    fig.suptitle(
        f"vit-digits bench: {m['cpu_model']} x{m['cpu_cores']}, device {s['device']}, torch {m['torch']}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def write_all(res: dict, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "RESULTS.md"]
    paths[0].write_text(json.dumps(res, indent=2) + "\n")
    paths[1].write_text(markdown(res))
    if plot(res, out / "plot.png"):
        paths.append(out / "plot.png")
    return paths
