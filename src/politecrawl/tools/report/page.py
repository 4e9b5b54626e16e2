"""``report.html``: one self-contained page of charts about a crawl, readable offline.

Inline SVG drawn here (no plotting dependency, no scripts, no external assets), so the file can
be mailed or archived with the crawl. The request log is read once (rotated files included)
into time buckets that coarsen as they grow, so a month of logs needs little memory.

Harvest rate comes from ``log/pages.jsonl`` (or ``pages.jsonl`` in the output folder, rotated
files included) when its records carry ``time`` (ISO 8601 or epoch seconds) and either
``relevance`` (a number; >= 0.5 counts as relevant) or ``relevant`` (a bool); otherwise the
chart is replaced by a note.

The logs are read by ``reportdata`` and the charts drawn by ``reportcharts``; this module
lays out the page and writes it.
"""

from __future__ import annotations

import argparse
import json
import time
from html import escape
from pathlib import Path
from typing import Any

from politecrawl.errors import ConfigError
from politecrawl.tools.report.charts import (
    fmt_num,
    grain_text,
    hbars,
    histogram,
    legend,
    line_chart,
    stacked_bars,
)
from politecrawl.tools.report.data import (
    CLASSES,
    PAGES,
    RELEVANT_AT,
    STORED,
    ReportData,
    read_pages,
    read_requests,
)
from politecrawl.tools.textout import printable, warn

__all__ = ["main_args", "write_report"]

_TOP_HOSTS = 20


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


def _summary_table(summary: dict[str, Any] | None, problem: str | None) -> str:
    if summary is None:
        why = (
            f"summary.json is {escape(problem)}"
            if problem
            else "No summary.json in this folder (the crawl may still be running, or was "
            "killed before it could write one)"
        )
        return f'<p class="note">{why}: the figures above are counted from the log.</p>'
    rows = []
    for k, v in summary.items():
        if isinstance(v, dict | list) or v == 0:  # a zero says nothing the counters don't
            continue
        rows.append(
            f'<tr><td>{escape(k.replace("_", " "))}</td><td class="n">{escape(str(v))}</td></tr>'
        )
    for k, v in _dict(summary.get("errors")).items():
        rows.append(
            f'<tr><td>errors: {escape(str(k))}</td><td class="n">{escape(str(v))}</td></tr>'
        )
    lost = [s for s in _list(summary.get("sites_lost")) if isinstance(s, dict)]  # one row
    if lost:
        names = ", ".join(str(s.get("site", "")) for s in lost[:5]) + (", ..." if lost[5:] else "")
        why = "; ".join(
            f"{s.get('site', '')}: {s.get('state', '')}, {s.get('urls_left')} URLs left "
            f"({s.get('reason', '')})"
            for s in lost
        )
        rows.append(
            f'<tr><td title="{escape(why)}">sites lost: {escape(names)}</td>'
            f'<td class="n">{len(lost)}</td></tr>'
        )
    return f"<table>{''.join(rows)}</table>"


def _counters(summary: dict[str, Any] | None, wide: bool) -> str:
    counters = _dict((summary or {}).get("counters"))
    if not counters:
        return ""
    cols = "".join(
        f"<div>{escape(str(k))}: <b>{escape(str(v))}</b></div>" for k, v in counters.items()
    )
    return _section("All counters", "", f'<div class="cols">{cols}</div>', "wide" if wide else "")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _summary_figures(summary: dict[str, Any] | None) -> dict[str, int | None]:
    """The figures summary.json shares with the log (None: not there, or not a count)."""
    s = summary or {}
    errors = _dict(s.get("errors")).values()
    figures = {
        "requests": s.get("requests"),
        "pages fetched": s.get("pages_fetched"),
        "stored": s.get("stored"),
        "errors": sum(errors) if summary and all(_is_count(v) for v in errors) else None,
    }
    return {k: v if _is_count(v) else None for k, v in figures.items()}


def _is_count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _logged_figures(data: ReportData) -> dict[str, int]:
    return {
        "requests": data.total,
        "pages fetched": data.fetched,
        "stored": data.stored,
        "errors": data.errors,
    }


def _figures(data: ReportData, summary: dict[str, Any] | None) -> list[tuple[str, Any, str]]:
    """Each card's figure and where it comes from: summary.json's where it has it (the
    crawl's own count), else the log's."""
    logged, told = _logged_figures(data), _summary_figures(summary)
    span = (data.last - data.first) if data.first is not None and data.last is not None else 0

    def card(k: str) -> tuple[str, Any, str]:
        return (k, told[k], "summary.json") if told[k] is not None else (k, logged[k], "log")

    return [
        card("requests"),
        card("pages fetched"),
        card("stored"),
        ("hosts", len(data.hosts), "log"),
        card("errors"),
        ("time span", _duration(span), "log"),
    ]


def _cards(data: ReportData, summary: dict[str, Any] | None) -> str:
    return (
        '<div class="cards">'
        + "".join(
            f"<div class=card><b>{escape(str(v))}</b><span>{escape(k)} · {src}</span></div>"
            for k, v, src in _figures(data, summary)
        )
        + "</div>"
    )


def _sources_said(
    data: ReportData, summary: dict[str, Any] | None, summary_problem: str | None
) -> list[str]:
    """Where the figures came from when it is not the usual: no summary.json, or one that
    disagrees with the log (damaged, expired past --log-retention-days, or still growing)."""
    if summary is None:
        why = summary_problem or "there is none (the crawl is running, or was killed)"
        return [f"summary.json: {why}: the figures are counted from the log"]
    told, logged = _summary_figures(summary), _logged_figures(data)
    differ = [f"{k} {logged[k]} / {v}" for k, v in told.items() if v is not None and v != logged[k]]
    if not differ:
        return []
    why = (
        "the log is damaged (said above)"
        if data.damage
        else "the log may be cut by --log-retention-days, or the crawl still running"
    )
    return [
        f"the log and summary.json differ ({', '.join(differ)}: log / summary.json); the "
        f"cards show summary.json's figures, the charts the log's; {why}"
    ]


def _duration(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h" if s < 172800 else f"{s / 86400:.1f} days"


def _charts(data: ReportData) -> list[str]:
    starts, grain, vecs = data.requests.series()
    out = [
        _section(
            "Pages over time",
            f"page requests and pages stored, {grain_text(grain)}",
            legend([("page requests", "#3b7dd8"), ("stored", "#2e9d5b")])
            + line_chart(
                starts,
                grain,
                [
                    ("page requests", "#3b7dd8", [v[PAGES] for v in vecs]),
                    ("stored", "#2e9d5b", [v[STORED] for v in vecs]),
                ],
                "pages over time",
            ),
        ),
        _section(
            "Status classes over time",
            f"all requests incl. robots.txt, {grain_text(grain)}",
            legend((n, c) for n, c, _ in CLASSES)
            + stacked_bars(starts, grain, vecs, "status classes over time"),
        ),
        _section("Response times", "requests that got a response", histogram(data.hist)),
    ]
    top = sorted(data.hosts.items(), key=lambda kv: (-kv[1][0], kv[0]))[:_TOP_HOSTS]
    out.append(
        _section(
            "Delay applied per host",
            f"delay the crawler set after each request (s): mean, bar; "
            f"maximum, tick; the {len(top)} busiest hosts",
            hbars(
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
            hbars([(h, v[0], None) for h, v in top], "top hosts", fmt_num, "#3b7dd8"),
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
                f"(relevance ≥ {RELEVANT_AT}), {grain_text(hg)}",
                legend([("in bucket", "#8e44ad"), ("cumulative", "#2e9d5b")])
                + line_chart(
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


def _harvest_note(data: ReportData) -> str:
    """Said in one line under the cards, not in an empty chart-sized box."""
    if data.scored_pages:
        return ""
    return (
        '<p class="note">Harvest rate: not shown: no page in pages.jsonl carries a relevance '
        "score (a crawl without a relevance function).</p>"
    )


def read_summary(out_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """summary.json, or None and why it could not be read (None, None: there is none)."""
    try:
        summary = json.loads((out_dir / "summary.json").read_bytes())
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or exc})"
    except (ValueError, RecursionError):
        return None, "damaged (not JSON)"
    if not isinstance(summary, dict):
        return None, "damaged (not a JSON object)"
    return summary, None


def render(out_dir: Path) -> str:
    """The report page for a crawl output folder."""
    page, _ = _render(out_dir)
    return page


def _render(out_dir: Path) -> tuple[str, list[str]]:
    """The page, and what it says about its sources (for stderr too)."""
    data = ReportData()
    read_requests(out_dir, data)
    read_pages(out_dir, data)
    summary, problem = read_summary(out_dir)
    said = _sources_said(data, summary, problem)
    notes = [*data.damage.lines(out_dir), *said]
    span = ""
    if data.first is not None and data.last is not None:
        span = (
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(data.first))} – "
            f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(data.last))} UTC · "
        )
    generated = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    # two columns, no holes: the summary is a card, the counters fill the last gap or a row
    cards = [*_charts(data), _section("summary.json", "", _summary_table(summary, problem))]
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Crawl report: {escape(out_dir.name)}</title><style>{_CSS}</style></head>
<body>
<h1>Crawl report: {escape(out_dir.name)}</h1>
<p class="sub">{escape(span)}{data.total} requests logged · generated {generated}</p>
{_cards(data, summary)}
{"".join(f'<p class="note">{escape(printable(n))}</p>' for n in notes)}
{_harvest_note(data)}
<div class="grid2">
{"".join(cards)}
{_counters(summary, wide=len(cards) % 2 == 0)}
</div>
</body></html>
"""
    return page, notes


def write_report(out_dir: Path) -> Path:
    """Write ``out_dir/report.html`` (atomically) and return its path."""
    return _write(out_dir)[0]


def _write(out_dir: Path) -> tuple[Path, list[str]]:
    page, notes = _render(out_dir)
    path = out_dir / "report.html"
    tmp = path.with_suffix(".html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path, notes


def main_args(args: argparse.Namespace) -> int:
    """``politecrawl report DIR``: writes DIR/report.html and prints its path."""
    out_dir = Path(args.dir)
    if not (out_dir / "log").is_dir():
        raise ConfigError(f"{out_dir} is not a crawl output folder (no log/ in it)")
    path, notes = _write(out_dir)
    warn(notes)  # damaged logs, figures from the log: said on the page and here
    print(path)
    return 0
