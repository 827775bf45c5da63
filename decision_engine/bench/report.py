"""The benchmark report: ratios computed from the raw figures, the run's metadata, and the text form.

Ratios are of groups/s at the same batch size. `joint_over_independent` and `joint_over_sequential`
are taken at `ratios.batch_size`: of the batch sizes every mode was measured at, the one where joint
is fastest (`ratios.by_batch_size` has them at each of those sizes). `cache_on_over_off` compares
joint mode at `prefix_cache.on.batch_size`, `triton_over_torch` joint mode at its best batch size.
"""

from __future__ import annotations

import datetime as dt
import subprocess
from pathlib import Path
from typing import Any

from .runner import MODES, best

TARGETS = {  # the figures the project aims for
    "cpu_joint_over_independent": 4.0,
    "cpu_joint_over_sequential": 1.5,
    "h200_groups_per_s": 2000.0,
    "h200_confidence_share_of_copy": 0.70,
    "h200_confidence_over_eager": 3.0,
}


def git_commit() -> str | None:
    """The checkout's commit, when the package runs from a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def _at(rows: list[dict], size: int) -> dict | None:
    return next((r for r in rows if r["batch_size"] == size), None)


def ratios(result: dict[str, Any]) -> dict[str, Any]:
    modes = result["modes"]
    common = sorted(set.intersection(*({r["batch_size"] for r in modes[m]} for m in MODES)))

    def speed(mode: str, size: int) -> float:
        return _at(modes[mode], size)["groups_per_s"]

    by_size = {
        str(size): {
            "joint_over_independent": speed("joint", size) / speed("independent", size),
            "joint_over_sequential": speed("joint", size) / speed("sequential", size),
        }
        for size in common
    }
    chosen = max(common, key=lambda size: speed("joint", size))
    cache, kernels = result.get("prefix_cache"), result.get("triton_vs_torch")
    return {
        "batch_size": chosen,
        **by_size[str(chosen)],
        "cache_on_over_off": cache["on"]["groups_per_s"] / cache["off"]["groups_per_s"] if cache else None,
        "cache_batch_size": cache["on"]["batch_size"] if cache else None,
        "triton_over_torch": kernels["triton"]["groups_per_s"] / kernels["torch"]["groups_per_s"] if kernels else None,
        "by_batch_size": by_size,
    }


def finish(
    result: dict[str, Any],
    *,
    device: str,
    device_name: str,
    model: str,
    workload: dict,
    quick: bool,
    precision: str = "float32",
) -> dict:
    """The JSON report: metadata, the raw figures, the best batch size per mode and the ratios."""
    return {
        "device": device,
        "device_name": device_name,
        "precision": precision,  # what the forward passes computed in
        "commit": git_commit(),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "model": model,
        "quick": quick,
        "workload": workload,
        **result,
        "best": {mode: best(rows) for mode, rows in result["modes"].items()},
        "latency_cold_p50_ms": result["latency"]["cold_p50_ms"] if result.get("latency") else None,
        "latency_warm_p50_ms": result["latency"]["warm_p50_ms"] if result.get("latency") else None,
        # forward passes over answer blocks per eight-question group, at each mode's best batch size
        "passes_per_group": {mode: best(rows)["passes_per_group"] for mode, rows in result["modes"].items()},
        "steps_per_group": {mode: best(rows)["steps_per_group"] for mode, rows in result["modes"].items()},
        "ratios": ratios(result),
    }


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def to_text(report: dict[str, Any]) -> str:
    lines = [
        f"decision-engine bench  {report['date']}  commit {(report['commit'] or 'unknown')[:12]}  "
        f"device {report['device']} ({report['device_name']})  model {report['model']}  "
        f"precision {report.get('precision', 'float32')}",
        f"workload: {report['workload']['groups']} groups x {report['workload']['questions_per_group']} questions, "
        f"documents of {report['workload']['mean_document_chars']:.0f} characters on average "
        f"({report['workload']['source']})",
        "",
        f"{'mode':12s}{'batch':>6s}{'groups/s':>10s}{'questions/s':>13s}{'p50 ms':>10s}{'p95 ms':>10s}{'steps':>8s}"
        f"{'prefix':>9s}{'blocks':>9s}{'other':>9s}{'pass':>7s}",
    ]
    for mode in MODES:
        for row in report["modes"][mode]:
            lines.append(
                f"{mode:12s}{row['batch_size']:6d}{row['groups_per_s']:10.3f}{row['questions_per_s']:13.2f}"
                f"{row['latency_p50_ms']:10.0f}{row['latency_p95_ms']:10.0f}{row['steps_per_group']:8.1f}"
                f"{row['prefix_ms_per_group']:9.1f}{row['block_ms_per_group']:9.1f}{row['other_ms_per_group']:9.1f}"
                f"{row['ms_per_block_pass']:7.1f}"
            )
    lines.append("(prefix, blocks, other: ms per group spent encoding prefixes, in answer-block passes, and on the rest;"
                 " pass: ms per answer-block pass)")
    latency = report.get("latency")
    if latency:
        lines += [
            "",
            f"one group alone ({latency['mode']}, {latency['groups']} groups): cold p50 {latency['cold_p50_ms']:.0f} ms "
            f"(document not yet encoded), warm p50 {latency['warm_p50_ms']:.0f} ms (document cached)",
        ]
    cache = report.get("prefix_cache")
    if cache:
        lines += [
            "",
            f"prefix cache (joint, batch {cache['on']['batch_size']}, {cache['on']['groups']} groups): "
            f"on {cache['on']['groups_per_s']:.3f} groups/s, off {cache['off']['groups_per_s']:.3f} groups/s, "
            f"same decisions: {cache['same_decisions']}",
        ]
    kernels = report.get("triton_vs_torch")
    if kernels:
        lines += [
            "",
            f"joint, batch {kernels['triton']['batch_size']}: Triton kernels {kernels['triton']['groups_per_s']:.1f} groups/s, "
            f"PyTorch path {kernels['torch']['groups_per_s']:.1f} groups/s, same decisions: {kernels['same_decisions']}",
        ]
    micro = report.get("kernels")
    if micro:
        lines += ["", f"device copy: {micro['copy']['gb_per_s']:.0f} GB/s"]
        for k in micro["constrained_confidence"]:
            lines.append(
                f"constrained confidence P{k['rows']}-V{k['vocab']} {k['dtype']}: {k['ms']:.3f} ms, {k['gb_per_s']:.0f} GB/s "
                f"({k['share_of_copy']:.0%} of copy), eager PyTorch {k['eager_ms']:.3f} ms ({k['speedup_over_eager']:.1f}x)"
            )
        for k in micro["block_attention"]:
            lines.append(
                f"block attention B{k['batch']}-H{k['heads']}-T{k['prefix']}-L{k['block']}-D{k['dim']}: {k['ms']:.3f} ms, "
                f"{k['gb_per_s']:.0f} GB/s ({k['share_of_copy']:.0%} of copy), fused PyTorch {k['fused_ms']:.3f} ms "
                f"({k['speedup_over_fused']:.1f}x)"
            )
    elif report["device"] != "cuda":
        lines += ["", "Triton kernels: not measured (they run on CUDA only)"]
    r = report["ratios"]
    cpu = report["device"] == "cpu"
    lines += [
        "",
        f"ratios of groups/s at batch {r['batch_size']}: joint/independent {_ratio(r['joint_over_independent'])}"
        + (f" (CPU target >= {TARGETS['cpu_joint_over_independent']:g}x)" if cpu else "")
        + f", joint/sequential {_ratio(r['joint_over_sequential'])}"
        + (f" (CPU target >= {TARGETS['cpu_joint_over_sequential']:g}x)" if cpu else ""),
        f"cache on/off (batch {r['cache_batch_size']}): {_ratio(r['cache_on_over_off'])}   "
        f"Triton/PyTorch: {_ratio(r['triton_over_torch'])}",
    ]
    if not cpu:
        lines.append(
            f"best joint: {report['best']['joint']['groups_per_s']:.1f} groups/s "
            f"at batch {report['best']['joint']['batch_size']} "
            f"(H200 target >= {TARGETS['h200_groups_per_s']:g}); confidence kernel targets: "
            f">= {TARGETS['h200_confidence_share_of_copy']:.0%} of copy, >= {TARGETS['h200_confidence_over_eager']:g}x eager"
        )
    for size, pair in r["by_batch_size"].items():
        lines.append(
            f"  batch {size}: joint/independent {_ratio(pair['joint_over_independent'])}, "
            f"joint/sequential {_ratio(pair['joint_over_sequential'])}"
        )
    return "\n".join(lines)
