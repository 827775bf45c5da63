"""Chart geometry for the inline SVG charts; the templates draw it, so every label is escaped there."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .formatting import score

LABEL_CHARS = 30  # longer row labels are shortened; the full text is the bar's tooltip


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    series: int  # index into the chart's series (sets the colour)
    text: str  # the value as shown beside the bar
    tooltip: str


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def bar_chart(
    rows: Sequence[tuple[str, Sequence[float | None]]],
    series: Sequence[str],
    width: int = 720,
    bar_height: int = 14,
    label_width: int = 210,
) -> dict:
    """Horizontal grouped bars on a 0-1 axis: one group per row label, one bar per series."""
    top, gap, group_gap, right = 28, 3, 12, 56
    plot_left, plot_right = label_width, width - right
    span = plot_right - plot_left
    groups = []
    y = top
    for label, values in rows:
        bars = []
        for i, value in enumerate(values):
            length = 0.0 if value is None else max(0.0, min(1.0, value)) * span
            text = "no labels" if value is None else score(value)
            bars.append(Bar(plot_left, y, length, bar_height, i, text, f"{label} · {series[i]}: {text}"))
            y += bar_height + gap
        group_height = len(values) * (bar_height + gap) - gap
        groups.append({"label": _short(label), "full_label": label, "y": y - gap - group_height / 2, "bars": bars})
        y += group_gap - gap
    bottom = y - group_gap + gap + 4
    ticks = [{"x": plot_left + span * t / 5, "text": f"{t / 5:.1f}"} for t in range(6)]
    legend, x = [], float(plot_left)
    for i, name in enumerate(series):
        legend.append({"name": _short(name), "index": i, "x": x})
        x += 16 + 7 * len(_short(name)) + 24  # swatch, text at about 7 px a character, gap
    return {
        "width": width,
        "height": bottom + 18,
        "plot_left": plot_left,
        "plot_right": plot_right,
        "top": top - 4,
        "bottom": bottom,
        "tick_y": bottom + 13,
        "groups": groups,
        "ticks": ticks,
        "series": legend,
    }


def reliability_diagram(bins: Sequence, size: int = 380) -> dict:
    """Accuracy against confidence per bin, beside the diagonal of perfect calibration.

    `bins` are `CalibrationBin`s; empty bins get no bar. Counts are written under each bin.
    """
    left, top, right_pad = 48, 12, 12
    plot = size - left - right_pad

    def x_of(value: float) -> float:
        return left + value * plot

    def y_of(value: float) -> float:
        return top + (1 - value) * plot

    base = y_of(0.0)
    bars, points, counts = [], [], []
    for b in bins:
        mid = x_of((b.low + b.high) / 2)
        counts.append({"x": mid, "text": str(b.count)})
        if not b.count:
            continue
        accuracy = b.accuracy
        tip = (
            f"confidence {b.low:.1f}–{b.high:.1f}: {b.count} answers, accuracy {score(accuracy)}, "
            f"mean confidence {score(b.mean_confidence)}"
        )
        bar_top, width = y_of(accuracy), plot / len(bins) - 2
        bars.append({"x": x_of(b.low) + 1, "y": bar_top, "width": width, "height": base - bar_top, "tooltip": tip})
        points.append({"x": x_of(b.mean_confidence), "y": y_of(accuracy), "tooltip": tip})
    ticks = [{"value": f"{t / 5:.1f}", "x": x_of(t / 5), "y": y_of(t / 5)} for t in range(6)]
    return {
        "width": size,
        "height": base + 58,
        "left": left,
        "top": top,
        "right": x_of(1.0),
        "base": base,
        "middle": x_of(0.5),
        "diagonal": {"x1": x_of(0.0), "y1": y_of(0.0), "x2": x_of(1.0), "y2": y_of(1.0)},
        "bars": bars,
        "points": points,
        "counts": counts,
        "tick_y": base + 14,
        "axis_title_y": base + 30,
        "count_y": base + 48,
        "ticks": ticks,
    }
