"""The charts of ``report.html``, drawn as inline SVG: no plotting dependency, no scripts.

Line charts and stacked bars over time buckets, a response-time histogram and horizontal
bars per host, each returned as one ``<svg>`` string. On its own so the page (``report``)
reads as a list of sections, and the geometry and tick arithmetic sit in one place.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from politecrawl.tools.report.data import CLASSES, HIST_EDGES_MS

__all__ = ["fmt_num", "grain_text", "hbars", "histogram", "legend", "line_chart", "stacked_bars"]

_W, _H = 560, 250
_ML, _MR, _MT, _MB = 58, 14, 14, 44


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = max(span, 1e-9) / ticks
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw)


def fmt_num(v: float) -> str:
    if v >= 10000:
        return f"{v / 1000:.0f}k"
    return f"{v:.0f}" if v == int(v) else f"{v:.2g}" if v < 1 else f"{v:.1f}"


def _fmt_t(t: float, span: float) -> str:
    fmt = "%H:%M:%S" if span < 600 else "%H:%M" if span < 86400 else "%m-%d %H:%M"
    return time.strftime(fmt, time.gmtime(t))


def grain_text(g: int) -> str:
    for unit, s in (("week", 604800), ("day", 86400), ("hour", 3600), ("minute", 60)):
        if g >= s and g % s == 0:
            n = g // s
            return f"per {unit}" if n == 1 else f"per {n} {unit}s"
    return "per second" if g == 1 else f"per {g} s"


def _svg(body: str, label: str, height: int = _H) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_W} {height}" role="img" '
        f'aria-label="{escape(label)}" class="chart">{body}</svg>'
    )


def _y_axis(ymax: float, fmt: Any = fmt_num) -> tuple[float, str]:
    """Grid lines and labels; returns the axis top value and the SVG."""
    step = _nice_step(ymax)
    top = max(step, math.ceil(ymax / step) * step)
    ph = _H - _MT - _MB
    parts = []
    v = 0.0
    while v <= top + 1e-9:
        y = _MT + ph - v / top * ph
        parts.append(
            f'<line x1="{_ML}" x2="{_W - _MR}" y1="{y:.1f}" y2="{y:.1f}" '
            f'class="grid"/><text x="{_ML - 6}" y="{y + 4:.1f}" '
            f'class="tick" text-anchor="end">{fmt(v)}</text>'
        )
        v += step
    return top, "".join(parts)


def _x_time_labels(starts: Sequence[int], grain: int) -> str:
    n = len(starts)
    pw = _W - _ML - _MR
    span = (starts[-1] - starts[0] + grain) if starts else 0
    parts = []
    for i in sorted({round(j * (n - 1) / 5) for j in range(6)} if n > 1 else {0}):
        x = _ML + (i + 0.5) * pw / n
        parts.append(
            f'<text x="{x:.1f}" y="{_H - _MB + 16}" class="tick" '
            f'text-anchor="middle">{_fmt_t(starts[i], span)}</text>'
        )
    parts.append(
        f'<text x="{_ML + pw / 2:.1f}" y="{_H - 8}" class="axis" '
        f'text-anchor="middle">time (UTC), {grain_text(grain)}</text>'
    )
    return "".join(parts)


def legend(items: Iterable[tuple[str, str]]) -> str:
    return (
        '<div class="legend">'
        + "".join(f'<span><i style="background:{c}"></i>{escape(n)}</span>' for n, c in items)
        + "</div>"
    )


def _no_data(label: str) -> str:
    return _svg(
        f'<text x="{_W / 2}" y="{_H / 2}" text-anchor="middle" class="axis">{escape(label)}</text>',
        label,
    )


def line_chart(
    starts: list[int],
    grain: int,
    series: list[tuple[str, str, list[float]]],
    label: str,
    ymax: float | None = None,
    fmt: Any = fmt_num,
) -> str:
    if not starts:
        return _no_data("no data")
    n = len(starts)
    pw, ph = _W - _ML - _MR, _H - _MT - _MB
    top, grid = _y_axis(
        ymax if ymax is not None else max((max(v) for _, _, v in series), default=1) or 1, fmt
    )
    body = [grid]
    for _name, color, vals in series:
        pts = [
            (_ML + (i + 0.5) * pw / n, _MT + ph - min(v, top) / top * ph)
            for i, v in enumerate(vals)
        ]
        if n > 1:
            body.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                f'stroke-linejoin="round" points="'
                + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
                + '"/>'
            )
        if n <= 40:
            body += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.6" fill="{color}"/>' for x, y in pts]
    body.append(_x_time_labels(starts, grain))
    return _svg("".join(body), label)


def stacked_bars(starts: list[int], grain: int, vecs: list[list[int]], label: str) -> str:
    if not starts:
        return _no_data("no data")
    n = len(starts)
    pw, ph = _W - _ML - _MR, _H - _MT - _MB
    top, grid = _y_axis(max((sum(v[i] for _, _, i in CLASSES) for v in vecs), default=1) or 1)
    bw = pw / n
    body = [grid]
    for j, vec in enumerate(vecs):
        y = float(_MT + ph)
        for _name, color, i in CLASSES:
            if vec[i]:
                h = vec[i] / top * ph
                y -= h
                body.append(
                    f'<rect x="{_ML + j * bw + bw * 0.08:.1f}" y="{y:.1f}" '
                    f'width="{max(bw * 0.84, 0.8):.1f}" height="{h:.1f}" '
                    f'fill="{color}"/>'
                )
    body.append(_x_time_labels(starts, grain))
    return _svg("".join(body), label)


def histogram(counts: list[int]) -> str:
    nz = [i for i, c in enumerate(counts) if c]
    if not nz:
        return _no_data("no responses")
    lo, hi = nz[0], nz[-1]
    shown = counts[lo : hi + 1]
    n = len(shown)
    pw, ph = _W - _ML - _MR, _H - _MT - _MB
    top, grid = _y_axis(max(shown))
    bw = pw / n
    body = [grid]
    for j, c in enumerate(shown):
        h = c / top * ph
        x = _ML + j * bw
        body.append(
            f'<rect x="{x + bw * 0.06:.1f}" y="{_MT + ph - h:.1f}" '
            f'width="{bw * 0.88:.1f}" height="{h:.1f}" fill="#6a5acd">'
            f"<title>{_bin_label(lo + j)}: {c}</title></rect>"
        )
        body.append(
            f'<text x="{x + bw / 2:.1f}" y="{_H - _MB + 16}" class="tick" '
            f'text-anchor="middle">{_bin_label(lo + j)}</text>'
        )
    body.append(
        f'<text x="{_ML + pw / 2:.1f}" y="{_H - 8}" class="axis" '
        'text-anchor="middle">response time, ms (log-spaced bins)</text>'
    )
    return _svg("".join(body), "response-time histogram")


def _ms(v: float) -> str:
    return f"{v / 1000:g}s" if v >= 1000 else f"{v:g}"


def _bin_label(i: int) -> str:
    lo = HIST_EDGES_MS[i]
    if i + 1 >= len(HIST_EDGES_MS):
        return f"≥{_ms(lo)}"
    return f"{_ms(lo)}–{_ms(HIST_EDGES_MS[i + 1])}"


def hbars(rows: list[tuple[str, float, float | None]], label: str, fmt: Any, color: str) -> str:
    """Horizontal bars, one per host; the optional third value is drawn as a tick (a max).

    Each bar is labelled with its own value; where there is a tick, the label (after the
    tick, the rightmost mark) says which is which: ``0.23, max 0.35``. The name column is
    as wide as the longest name, so the bars get the rest of the width.
    """
    if not rows:
        return _no_data("no data")
    row_h = 22
    shown = [n if len(n) <= 26 else n[:12] + "…" + n[-12:] for n, _, _ in rows]
    lw = 16 + int(6.3 * max(len(n) for n in shown))  # 11 px text: ~6.3 px a character
    height = _MT + row_h * len(rows) + 10
    has_max = any(m is not None and m > v for _, v, m in rows)
    pw = _W - lw - _MR - (96 if has_max else 44)
    vmax = max(max(v, m or 0) for _, v, m in rows) or 1
    body = []
    for i, (name, v, m) in enumerate(rows):
        y = _MT + i * row_h
        w = v / vmax * pw
        end = lw + max(w, (m or 0) / vmax * pw, 1)
        text = fmt(v) if m is None or fmt(m) == fmt(v) else f"{fmt(v)}, max {fmt(m)}"
        body.append(
            f'<text x="{lw - 8}" y="{y + 15}" class="tick" text-anchor="end">'
            f"<title>{escape(name)}</title>{escape(shown[i])}</text>"
            f'<rect x="{lw}" y="{y + 3}" width="{max(w, 1):.1f}" height="{row_h - 6}" '
            f'fill="{color}" rx="2"/>'
            f'<text x="{end + 6:.1f}" y="{y + 15}" class="tick">{escape(text)}</text>'
        )
        if m is not None and m > v:
            mx = lw + m / vmax * pw
            body.append(
                f'<line x1="{mx:.1f}" x2="{mx:.1f}" y1="{y + 2}" y2="{y + row_h - 2}" '
                f'stroke="#333" stroke-width="2"><title>max {fmt(m)}</title></line>'
            )
    return _svg("".join(body), label, height)
