"""``report.html``: one self-contained page of charts about a crawl, readable offline.

Inline SVG drawn here (no plotting dependency, no scripts, no external assets), so the file can
be mailed or archived with the crawl. The request log is read once (rotated files included)
into time buckets that coarsen as they grow, so a month of logs needs little memory.

Harvest rate comes from ``log/pages.jsonl`` (or ``pages.jsonl`` in the output folder, rotated
files included) when its records carry ``time`` (ISO 8601 or epoch seconds) and either
``relevance`` (a number; >= 0.5 counts as relevant) or ``relevant`` (a bool); otherwise the
chart is replaced by a note.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from politecrawl.errors import ConfigError
from politecrawl.storage.logs import iter_log_records

__all__ = ["main_args", "write_report"]

_GRAINS = (
    1,
    5,
    10,
    30,
    60,
    300,
    600,
    1800,
    3600,
    10800,
    21600,
    86400,
    604800,
)  # each divides the next
_MAX_KEYS = 20000
_TARGET_BUCKETS = 90
_TOP_HOSTS = 20
_HIST_EDGES_MS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 60000)
_RELEVANT_AT = 0.5

# request vector: pages, stored, 2xx, 3xx, 4xx, 5xx, no response, robots.txt
_PAGES, _STORED, _C2, _C3, _C4, _C5, _CNONE, _ROBOTS = range(8)
_CLASSES = (
    ("2xx", "#2e9d5b", _C2),
    ("3xx", "#3b7dd8", _C3),
    ("4xx", "#f0a030", _C4),
    ("5xx", "#d9453d", _C5),
    ("no response", "#8a939c", _CNONE),
)


class _Timeline:
    """Count vectors per time bucket; the bucket size grows when there are too many keys."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.grain_i = 0
        self.buckets: dict[int, list[int]] = {}

    @property
    def grain(self) -> int:
        return _GRAINS[self.grain_i]

    def add(self, t: float, *idx: int) -> None:
        k = int(t // self.grain) * self.grain
        vec = self.buckets.get(k)
        if vec is None:
            vec = self.buckets[k] = [0] * self.width
            if len(self.buckets) > _MAX_KEYS and self.grain_i + 1 < len(_GRAINS):
                self._regrain(self.grain_i + 1)
                vec = self.buckets[int(t // self.grain) * self.grain]
        for i in idx:
            vec[i] += 1

    def _regrain(self, grain_i: int) -> None:
        self.grain_i = grain_i
        g, merged = self.grain, dict[int, list[int]]()
        for k, vec in self.buckets.items():
            kk = k // g * g
            tgt = merged.setdefault(kk, [0] * self.width)
            for i, v in enumerate(vec):
                tgt[i] += v
        self.buckets = merged

    def series(self) -> tuple[list[int], int, list[list[int]]]:
        """Contiguous buckets (zeros filled in), at most about ``_TARGET_BUCKETS`` of them."""
        if not self.buckets:
            return [], self.grain, []
        lo, hi = min(self.buckets), max(self.buckets)
        while (hi - lo) // self.grain + 1 > _TARGET_BUCKETS and self.grain_i + 1 < len(_GRAINS):
            self._regrain(self.grain_i + 1)
            lo, hi = min(self.buckets), max(self.buckets)
        starts = list(range(lo, hi + 1, self.grain))
        zero = [0] * self.width
        return starts, self.grain, [self.buckets.get(s, zero) for s in starts]


@dataclass(slots=True)
class _Data:
    requests: _Timeline = field(default_factory=lambda: _Timeline(8))
    harvest: _Timeline = field(default_factory=lambda: _Timeline(2))
    hist: list[int] = field(default_factory=lambda: [0] * len(_HIST_EDGES_MS))
    hosts: dict[str, list[float]] = field(default_factory=dict)  # requests, delay sum, max
    total: int = 0
    first: float | None = None
    last: float | None = None
    scored_pages: int = 0


def _epoch(value: Any) -> float | None:
    if isinstance(value, int | float):
        return float(value)
    try:
        return datetime.fromisoformat(str(value)).timestamp()
    except ValueError:
        return None


def _read_requests(out_dir: Path, data: _Data) -> None:
    for rec in iter_log_records(out_dir / "log", "requests"):
        t = _epoch(rec.get("time"))
        if t is None:
            continue
        data.total += 1
        data.first = t if data.first is None else min(data.first, t)
        data.last = t if data.last is None else max(data.last, t)
        code = rec.get("status")
        outcome = str(rec.get("outcome", ""))
        cls = (
            _CNONE
            if not isinstance(code, int) or not 200 <= code < 600
            else (_C2, _C3, _C4, _C5)[code // 100 - 2]
        )
        if outcome.startswith("robots:"):
            data.requests.add(t, cls, _ROBOTS)
        elif outcome == "stored":
            data.requests.add(t, cls, _PAGES, _STORED)
        else:
            data.requests.add(t, cls, _PAGES)
        dur = rec.get("duration_ms")
        if isinstance(code, int) and isinstance(dur, int | float):
            i = next((i for i, e in enumerate(_HIST_EDGES_MS) if dur < e), len(_HIST_EDGES_MS))
            data.hist[max(0, i - 1)] += 1
        try:
            host = urlsplit(str(rec.get("url", ""))).hostname or "?"
        except ValueError:
            host = "?"
        h = data.hosts.get(host)
        if h is None:
            h = data.hosts[host] = [0.0, 0.0, 0.0]
        delay = rec.get("delay_s")
        h[0] += 1
        if isinstance(delay, int | float):
            h[1] += delay
            h[2] = max(h[2], float(delay))


def _read_pages(out_dir: Path, data: _Data) -> None:
    """pages.jsonl (in log/ or the output folder): harvest rate needs a relevance per page."""
    folder = out_dir / "log"
    if not any(folder.glob("pages*.jsonl*")):
        folder = out_dir
    for rec in iter_log_records(folder, "pages"):
        t = _epoch(rec.get("time"))
        rel = rec.get("relevant", rec.get("relevance"))
        if t is None or rel is None or not isinstance(rel, bool | int | float):
            continue
        data.scored_pages += 1
        if (rel is True) or (not isinstance(rel, bool) and rel >= _RELEVANT_AT):
            data.harvest.add(t, 0, 1)
        else:
            data.harvest.add(t, 0)


# -- drawing --------------------------------------------------------------------------------
_W, _H = 560, 250
_ML, _MR, _MT, _MB = 58, 14, 14, 44


def _nice_step(span: float, ticks: int = 5) -> float:
    raw = max(span, 1e-9) / ticks
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * mag >= raw)


def _fmt_num(v: float) -> str:
    if v >= 10000:
        return f"{v / 1000:.0f}k"
    return f"{v:.0f}" if v == int(v) else f"{v:.2g}" if v < 1 else f"{v:.1f}"


def _fmt_t(t: float, span: float) -> str:
    fmt = "%H:%M:%S" if span < 600 else "%H:%M" if span < 86400 else "%m-%d %H:%M"
    return time.strftime(fmt, time.gmtime(t))


def _grain_text(g: int) -> str:
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


def _y_axis(ymax: float, fmt: Any = _fmt_num) -> tuple[float, str]:
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
        f'text-anchor="middle">time (UTC), {_grain_text(grain)}</text>'
    )
    return "".join(parts)


def _legend(items: Iterable[tuple[str, str]]) -> str:
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


def _line_chart(
    starts: list[int],
    grain: int,
    series: list[tuple[str, str, list[float]]],
    label: str,
    ymax: float | None = None,
    fmt: Any = _fmt_num,
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


def _stacked_bars(starts: list[int], grain: int, vecs: list[list[int]], label: str) -> str:
    if not starts:
        return _no_data("no data")
    n = len(starts)
    pw, ph = _W - _ML - _MR, _H - _MT - _MB
    top, grid = _y_axis(max((sum(v[i] for _, _, i in _CLASSES) for v in vecs), default=1) or 1)
    bw = pw / n
    body = [grid]
    for j, vec in enumerate(vecs):
        y = float(_MT + ph)
        for _name, color, i in _CLASSES:
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


def _histogram(counts: list[int]) -> str:
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
    lo = _HIST_EDGES_MS[i]
    if i + 1 >= len(_HIST_EDGES_MS):
        return f"≥{_ms(lo)}"
    return f"{_ms(lo)}–{_ms(_HIST_EDGES_MS[i + 1])}"


def _hbars(rows: list[tuple[str, float, float | None]], label: str, fmt: Any, color: str) -> str:
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


# -- the page -------------------------------------------------------------------------------
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d232a;
background:#f5f7f9;margin:0;padding:20px 28px}
h1{font-size:22px;margin:0 0 2px}.sub{color:#5a6570;margin:0 0 16px}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin-bottom:16px}
.card{background:#fff;border:1px solid #dde3e8;border-radius:8px;padding:8px 14px;min-width:96px}
.card b{display:block;font-size:20px}.card span{color:#5a6570;font-size:12px}
.grid2{display:grid;grid-template-columns:repeat(auto-fill,minmax(520px,1fr));gap:14px}
section{background:#fff;border:1px solid #dde3e8;border-radius:8px;padding:10px 14px}
h2{font-size:15px;margin:0 0 4px}.note{color:#5a6570;font-size:12px;margin:0 0 4px}
svg.chart{width:100%;height:auto;display:block}
.grid{stroke:#e6eaee;stroke-width:1}.tick{font-size:11px;fill:#4a5560}
.axis{font-size:12px;fill:#4a5560}
.legend{font-size:12px;color:#4a5560}.legend span{margin-right:12px;white-space:nowrap}
.legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}
table{border-collapse:collapse;font-size:13px}td,th{padding:3px 10px 3px 0;text-align:left;
vertical-align:top}td.n{text-align:right;font-variant-numeric:tabular-nums}
th{color:#5a6570;font-weight:600}tr+tr td{border-top:1px solid #eef1f4}
.cols{columns:3 200px;font-size:12px}.cols div{break-inside:avoid}
.wide{grid-column:1/-1}
"""


def _section(title: str, note: str, inner: str, cls: str = "") -> str:
    return (
        (f'<section class="{cls}">' if cls else "<section>")
        + f"<h2>{escape(title)}</h2>"
        + (f'<p class="note">{note}</p>' if note else "")
        + inner
        + "</section>"
    )


def _summary_table(summary: dict[str, Any] | None) -> str:
    if summary is None:
        return (
            '<p class="note">No summary.json in this folder (the crawl may still be '
            "running, or was killed before it could write one).</p>"
        )
    rows = []
    for k, v in summary.items():
        if isinstance(v, dict):
            continue
        rows.append(
            f'<tr><td>{escape(k.replace("_", " "))}</td><td class="n">{escape(str(v))}</td></tr>'
        )
    for k, v in (summary.get("errors") or {}).items():
        rows.append(
            f'<tr><td>errors: {escape(str(k))}</td><td class="n">{escape(str(v))}</td></tr>'
        )
    return f"<table>{''.join(rows)}</table>"


def _counters(summary: dict[str, Any] | None, wide: bool) -> str:
    counters = (summary or {}).get("counters") or {}
    if not counters:
        return ""
    cols = "".join(
        f"<div>{escape(str(k))}: <b>{escape(str(v))}</b></div>" for k, v in counters.items()
    )
    return _section("All counters", "", f'<div class="cols">{cols}</div>', "wide" if wide else "")


def _cards(data: _Data, summary: dict[str, Any] | None) -> str:
    s = summary or {}
    span = (data.last - data.first) if data.first is not None and data.last is not None else 0
    items = [
        ("requests", data.total),
        ("pages fetched", s.get("pages_fetched", "–")),
        ("stored", s.get("stored", "–")),
        ("hosts", len(data.hosts)),
        ("errors", sum((s.get("errors") or {}).values()) if s else "–"),
        ("time span", _duration(span)),
    ]
    return (
        '<div class="cards">'
        + "".join(
            f"<div class=card><b>{escape(str(v))}</b><span>{escape(k)}</span></div>"
            for k, v in items
        )
        + "</div>"
    )


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h" if s < 172800 else f"{s / 86400:.1f} days"


def _charts(data: _Data) -> list[str]:
    starts, grain, vecs = data.requests.series()
    out = [
        _section(
            "Pages over time",
            f"page requests and pages stored, {_grain_text(grain)}",
            _legend([("page requests", "#3b7dd8"), ("stored", "#2e9d5b")])
            + _line_chart(
                starts,
                grain,
                [
                    ("page requests", "#3b7dd8", [v[_PAGES] for v in vecs]),
                    ("stored", "#2e9d5b", [v[_STORED] for v in vecs]),
                ],
                "pages over time",
            ),
        ),
        _section(
            "Status classes over time",
            f"all requests incl. robots.txt, {_grain_text(grain)}",
            _legend((n, c) for n, c, _ in _CLASSES)
            + _stacked_bars(starts, grain, vecs, "status classes over time"),
        ),
        _section("Response times", "requests that got a response", _histogram(data.hist)),
    ]
    top = sorted(data.hosts.items(), key=lambda kv: (-kv[1][0], kv[0]))[:_TOP_HOSTS]
    out.append(
        _section(
            "Delay applied per host",
            f"delay the crawler set after each request (s): mean, bar; "
            f"maximum, tick; the {len(top)} busiest hosts",
            _hbars(
                [(h, v[1] / v[0], v[2]) for h, v in top],
                "delays per host",
                lambda x: f"{x:.2f}",
                "#e08a2c",
            ),
        )
    )
    out.append(
        _section(
            "Top hosts by requests",
            f"the {len(top)} busiest of {len(data.hosts)} hosts",
            _hbars([(h, v[0], None) for h, v in top], "top hosts", _fmt_num, "#3b7dd8"),
        )
    )
    if data.scored_pages:
        hs, hg, hv = data.harvest.series()
        rate = [v[1] / v[0] if v[0] else 0.0 for v in hv]
        cum, tot, rel = [], 0, 0
        for v in hv:
            tot, rel = tot + v[0], rel + v[1]
            cum.append(rel / tot if tot else 0.0)
        out.append(
            _section(
                "Harvest rate",
                f"share of scored pages that were relevant "
                f"(relevance ≥ {_RELEVANT_AT}), {_grain_text(hg)}",
                _legend([("in bucket", "#8e44ad"), ("cumulative", "#2e9d5b")])
                + _line_chart(
                    hs,
                    hg,
                    [("in bucket", "#8e44ad", rate), ("cumulative", "#2e9d5b", cum)],
                    "harvest rate",
                    1.0,
                    lambda x: f"{100 * x:.0f}%",
                ),
            )
        )
    return out


def _harvest_note(data: _Data) -> str:
    """Said in one line under the cards, not in an empty chart-sized box."""
    if data.scored_pages:
        return ""
    return (
        '<p class="note">Harvest rate: not shown: no page in pages.jsonl carries a relevance '
        "score (a crawl without a relevance function).</p>"
    )


def render(out_dir: Path) -> str:
    """The report page for a crawl output folder."""
    data = _Data()
    _read_requests(out_dir, data)
    _read_pages(out_dir, data)
    summary_path = out_dir / "summary.json"
    try:
        summary: dict[str, Any] | None = json.loads(summary_path.read_text())
    except (FileNotFoundError, ValueError):
        summary = None
    span = ""
    if data.first is not None and data.last is not None:
        span = (
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(data.first))} – "
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(data.last))} UTC · "
        )
    generated = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    # two columns, no holes: the summary is a card, the counters fill the last gap or a row
    cards = [*_charts(data), _section("summary.json", "", _summary_table(summary))]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Crawl report: {escape(out_dir.name)}</title><style>{_CSS}</style></head>
<body>
<h1>Crawl report: {escape(out_dir.name)}</h1>
<p class="sub">{escape(span)}{data.total} requests logged · generated {generated}</p>
{_cards(data, summary)}
{_harvest_note(data)}
<div class="grid2">
{"".join(cards)}
{_counters(summary, wide=len(cards) % 2 == 0)}
</div>
</body></html>
"""


def write_report(out_dir: Path) -> Path:
    """Write ``out_dir/report.html`` (atomically) and return its path."""
    path = out_dir / "report.html"
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(render(out_dir), encoding="utf-8")
    tmp.replace(path)
    return path


def main_args(args: argparse.Namespace) -> int:
    """``politecrawl report DIR``: writes DIR/report.html and prints its path."""
    out_dir = Path(args.dir)
    if not (out_dir / "log").is_dir():
        raise ConfigError(f"{out_dir} is not a crawl output folder (no log/ in it)")
    print(write_report(out_dir))
    return 0
