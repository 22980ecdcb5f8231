"""Chart geometry for the admin's server-rendered SVG: numbers in, pixel boxes out.

No JavaScript and no charting file: the templates draw what these return. Colours are a
palette readable on the admin's light and dark backgrounds; text and axes take the admin's
own CSS variables in the templates, so they follow its theme.
"""

from __future__ import annotations

from typing import Sequence

# Tableau 10: distinct at a glance, legible on white and on the admin's dark grey.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)

WIDTH, HEIGHT = 640, 180
LEFT, BOTTOM, TOP = 44, 22, 8


def nice_max(value: float) -> float:
    """The axis top: 1, 2 or 5 times a power of ten, at least `value`."""
    if value <= 0:
        return 1
    power = 1.0
    while power * 10 <= value:
        power *= 10
    while power > value:
        power /= 10
    for factor in (1, 2, 5, 10):
        if factor * power >= value:
            return factor * power
    return 10 * power


def _label_every(n: int, room: int = 12) -> int:
    return max(1, -(-n // room))


def stacked_bars(
    labels: Sequence[str], series: dict[str, Sequence[float]], width: int = WIDTH, height: int = HEIGHT
) -> dict:
    """Bars over time, one stack per label, one colour per series (in `series` order)."""
    n = max(len(labels), 1)
    plot_w, plot_h = width - LEFT - 4, height - BOTTOM - TOP
    totals = [sum(values[i] for values in series.values()) for i in range(len(labels))]
    top = nice_max(max(totals, default=0))
    slot = plot_w / n
    bars = []
    for i, label in enumerate(labels):
        y = TOP + plot_h
        for k, (name, values) in enumerate(series.items()):
            value = values[i]
            if not value:
                continue
            h = value / top * plot_h
            y -= h
            bars.append(
                {
                    "x": round(LEFT + i * slot + 1, 1),
                    "y": round(y, 1),
                    "w": round(max(slot - 2, 1), 1),
                    "h": round(h, 1),
                    "colour": PALETTE[k % len(PALETTE)],
                    "title": f"{label}: {name} {_number(value)}",
                }
            )
    every = _label_every(len(labels))
    ticks = [
        {"x": round(LEFT + (i + 0.5) * slot, 1), "label": label}
        for i, label in enumerate(labels)
        if i % every == 0
    ]
    return {
        "width": width,
        "height": height,
        "left": LEFT,
        "top": TOP,
        "bottom": TOP + plot_h,
        "right": width - 4,
        "bars": bars,
        "ticks": ticks,
        "max": _number(top),
        "label_y": height - 6,
        "legend": legend(series),
        "empty": not any(totals),
    }


def hbars(rows: Sequence[tuple[str, float]], width: int = 420, unit: str = "") -> dict:
    """One horizontal bar per (label, value), longest scale first as given."""
    label_w, row_h = 150, 20
    top = max((v for _, v in rows), default=0) or 1
    plot_w = width - label_w - 60
    out = []
    for i, (label, value) in enumerate(rows):
        out.append(
            {
                "y": i * row_h + 2,
                "text_y": i * row_h + 15,
                "label": label,
                "w": round(value / top * plot_w, 1),
                "value": f"{_number(value)}{unit}",
                "value_x": round(label_w + value / top * plot_w + 4, 1),
                "colour": PALETTE[i % len(PALETTE)],
            }
        )
    return {"width": width, "height": max(len(rows), 1) * row_h + 4, "label_w": label_w, "rows": out}


def sparkline(values: Sequence[float], width: int = 160, height: int = 24) -> dict:
    """A polyline of `values`, scaled to its own maximum."""
    top = max(values, default=0) or 1
    n = max(len(values) - 1, 1)
    points = " ".join(
        f"{round(i / n * (width - 2) + 1, 1)},{round(height - 2 - v / top * (height - 4), 1)}"
        for i, v in enumerate(values)
    )
    return {"width": width, "height": height, "points": points}


def legend(series: dict[str, Sequence[float]]) -> list[dict]:
    return [
        {"name": name, "colour": PALETTE[k % len(PALETTE)], "total": _number(sum(values))}
        for k, (name, values) in enumerate(series.items())
    ]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
