"""The crawl report as static HTML: an index of sites, and one page of detail per site.

Written by hand (strings and plain SVG) because the page must open offline,
from a file, with nothing fetched: no plot library's script or CDN. The index
stays small for thousands of sites (one table row each); a site's requests,
gap chart and timeline are on its own page, the request table cut at
``MAX_ROWS`` (the JSON keeps every request).
"""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["MAX_ROWS", "index_page", "site_file", "site_page"]

MAX_ROWS = 1000
_W, _H, _PAD = 900, 260, 48

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1100px;color:#1d1d1f;padding:0 1em}
table{border-collapse:collapse;margin:.5em 0 1.2em}th,td{padding:.25em .6em;border-bottom:1px solid #ddd;
text-align:left;vertical-align:top}th{background:#f4f4f6;cursor:default}td.n{text-align:right;
font-variant-numeric:tabular-nums}#sites th{cursor:pointer}h1{font-size:1.6em}h2{margin-top:1.6em}
.warn{color:#a4262c}.ok{color:#1b6e3a}svg{background:#fbfbfd;border:1px solid #ddd}code{font-size:.95em}
input{padding:.3em .5em;width:20em}.legend span{margin-right:1.2em}.muted{color:#666}
"""

_SCRIPT = """
(function () {
  var table = document.getElementById("sites"), filter = document.getElementById("filter");
  var rows = Array.prototype.slice.call(table.tBodies[0].rows);
  filter.addEventListener("input", function () {
    var q = filter.value.toLowerCase();
    rows.forEach(function (r) { r.hidden = r.dataset.site.toLowerCase().indexOf(q) < 0; });
  });
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
    th.addEventListener("click", function () {
      var num = th.dataset.num === "1", dir = th.dataset.dir === "1" ? -1 : 1;
      th.dataset.dir = dir === 1 ? "1" : "0";
      rows.sort(function (a, b) {
        var x = a.cells[i].dataset.v || a.cells[i].textContent, y = b.cells[i].dataset.v || b.cells[i].textContent;
        return dir * (num ? parseFloat(x) - parseFloat(y) : x.localeCompare(y));
      });
      rows.forEach(function (r) { table.tBodies[0].appendChild(r); });
    });
  });
})();
"""


def _page(title: str, body: str, script: str = "") -> str:
    tail = f"<script>{script}</script>" if script else ""
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{_STYLE}</style></head>'
        f"<body>{body}{tail}</body></html>\n"
    )


def _s(seconds: float | None) -> str:
    return "none" if seconds is None else f"{seconds:.3g} s" if seconds < 10 else f"{seconds:,.0f} s"


def _bytes(n: int) -> str:
    for unit, size in (("MB", 1_000_000), ("kB", 1_000)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def site_file(number: int) -> str:
    """The path of a site's page, relative to the index."""
    return f"sites/{number:05d}.html"


def _robots_summary(site: dict[str, Any]) -> str:
    if not site["robots"]:
        return "not read"
    last = site["robots"][-1]
    verdict = (
        "allows all"
        if last["allows_all"] and last["outcome"] != "parsed"
        else ("disallows all" if not last["allows_all"] else "rules")
    )
    return f"{last['status'] or 'no answer'} {last['outcome']} ({verdict})"


def _num(value: float | None, text: str | None = None) -> str:
    shown = text if text is not None else ("" if value is None else str(value))
    return f'<td class="n" data-v="{"" if value is None else value}">{escape(shown)}</td>'


def index_page(data: dict[str, Any]) -> str:
    """The report's front page: the crawl, its totals, one row per site linking to its detail."""
    crawl, totals = data["crawl"], data["totals"]
    facts = [
        ("crawl", crawl.get("crawl_id", "")),
        ("profile", f"{crawl.get('profile', '')} ({crawl.get('deployment', '')})"),
        ("user agent", crawl.get("user_agent", "")),
        ("spider", crawl.get("spider", "")),
        ("started", crawl.get("started_at", "")),
        ("finished", crawl.get("finished_at", "")),
        ("finish reason", crawl.get("finish_reason", "")),
        ("knowledge base", crawl.get("kb_uri", "")),
        ("profile spacing", _s(crawl.get("delay"))),
        ("Crawl-delay honoured up to", _s(crawl.get("crawl_delay_cap"))),
    ]
    skipped = ", ".join(f"{r} {n}" for r, n in totals["skipped_by_reason"].items()) or "none"
    total_rows = [
        ("sites", totals["sites"]),
        ("requests", totals["requests"]),
        ("pages fetched", totals["pages"]),
        ("bytes received", _bytes(totals["bytes"])),
        ("stored", totals["stored"]),
        ("skipped", f"{totals['skipped']} ({skipped})"),
        ("cut at the size cap", totals["truncated"]),
        ("pauses (403/429/503)", totals["pauses"]),
        ("errors (5xx but 503, no answer)", totals["errors"]),
    ]
    head = (
        "site",
        "requests",
        "stored",
        "skipped",
        "pauses",
        "errors",
        "robots.txt",
        "Crawl-delay",
        "spacing",
        "smallest gap",
        "bytes",
    )
    numeric = {"requests", "stored", "skipped", "pauses", "errors", "Crawl-delay", "spacing", "smallest gap", "bytes"}
    rows = []
    for number, site in enumerate(data["sites"], 1):
        t = site["totals"]
        reasons = ", ".join(f"{r} {len(u)}" for r, u in site["skipped"].items())
        under = site["min_gap"] is not None and site["min_gap"] < site["spacing"] * 0.95
        rows.append(
            f'<tr class="site-row" id="site-{number}" data-site="{escape(site["site"])}">'
            f'<td><a href="{site_file(number)}">{escape(site["site"])}</a></td>'
            + _num(t["requests"])
            + _num(t["stored"])
            + f'<td class="n" data-v="{t["skipped"]}" title="{escape(reasons)}">{t["skipped"]}'
            + (f' <span class="muted">({escape(reasons)})</span>' if reasons else "")
            + "</td>"
            + _num(t["pauses"])
            + _num(t["errors"])
            + f"<td>{escape(_robots_summary(site))}</td>"
            + _num(site["crawl_delay"], _s(site["crawl_delay"]))
            + _num(site["spacing"], _s(site["spacing"]))
            + _num(site["min_gap"], _s(site["min_gap"]) if site["min_gap"] is not None else "").replace(
                '"n"', '"n warn"' if under else '"n"', 1
            )
            + _num(t["bytes"], _bytes(t["bytes"]))
            + "</tr>"
        )
    th = "".join(f'<th data-num="{1 if h in numeric else 0}">{escape(h)}</th>' for h in head)
    bad = data.get("unreadable_log_lines", 0)
    body = (
        f'<h1>Crawl report <span class="muted">{escape(str(crawl.get("crawl_id", "")))}</span></h1>'
        + '<table id="facts">'
        + "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in facts)
        + '</table><h2>Totals</h2><table id="totals">'
        + "".join(
            f'<tr data-total="{escape(k)}"><th>{escape(k)}</th><td class="n">{escape(str(v))}</td></tr>'
            for k, v in total_rows
        )
        + "</table>"
        + (f'<p class="warn">{bad} unreadable lines of the request log were left out.</p>' if bad else "")
        + '<h2>Sites</h2><p><input id="filter" type="search" placeholder="filter sites by name" aria-label="filter">'
        + ' <span class="muted">Click a site for its requests, gaps and pauses; click a heading to sort.</span></p>'
        + f'<table id="sites"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    return _page(f"Crawl report {crawl.get('crawl_id', '')}", body, _SCRIPT)


def _x(t: float, span: float) -> float:
    return round(_PAD + (_W - 2 * _PAD) * (t / span if span else 0.0), 1)


def _gap_chart(site: dict[str, Any], span: float) -> str:
    gaps, pauses = site["gaps"], site["pauses"]
    lines = [
        ("spacing-line", "profile spacing", site["profile_spacing"], "#555", "6 4"),
        ("effective-spacing-line", "spacing used", site["spacing"], "#1b6e3a", "2 3"),
    ]
    if site["crawl_delay"] is not None:
        lines.append(("crawl-delay-line", "Crawl-delay", site["crawl_delay"], "#c25e00", ""))
    top = float(max([g["gap"] for g in gaps] + [v for _, _, v, _, _ in lines] + [0.001])) * 1.15

    def y(v: float) -> float:
        return round(_H - _PAD - (_H - 2 * _PAD) * min(v, top) / top, 1)

    parts = [
        (
            f'<svg id="gap-chart" xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
            f'viewBox="0 0 {_W} {_H}" role="img" aria-label="gaps between request starts">'
        ),
        f'<line x1="{_PAD}" y1="{_H - _PAD}" x2="{_W - _PAD}" y2="{_H - _PAD}" stroke="#999"/>',
        f'<text x="{_PAD}" y="{_H - 12}" font-size="11">0 s</text>',
        (f'<text x="{_W - _PAD}" y="{_H - 12}" font-size="11" text-anchor="end">{span:.1f} s into the crawl</text>'),
        f'<text x="4" y="{_PAD - 8}" font-size="11">gap {top:.3g} s</text>',
    ]
    for cls, label, value, colour, dash in lines:
        parts.append(
            f'<line class="{cls}" data-seconds="{value}" x1="{_PAD}" y1="{y(value)}" x2="{_W - _PAD}" '
            f'y2="{y(value)}" stroke="{colour}" stroke-dasharray="{dash}">'
            f"<title>{label} {value:g} s</title></line>"
        )
        if cls != "effective-spacing-line" or value not in (site["profile_spacing"], site["crawl_delay"]):
            parts.append(
                f'<text class="line-label" x="{_W - _PAD}" y="{y(value) - 3}" font-size="10" '
                f'text-anchor="end" fill="{colour}">{label} {value:g} s</text>'
            )
    label_ends = [0.0, 0.0, 0.0]  # where the last label of each of three rows ends: labels never overlap
    for pause in pauses:
        x = _x(pause["start"], span)
        label = f"{pause['status']} Retry-After {pause['retry_after'] or 'none'}"
        row = next((i for i, end in enumerate(label_ends) if x > end), None)
        text = ""
        if row is not None:  # no free row: the marker keeps its label as a tooltip only
            label_ends[row] = x + 6.5 * len(label) + 8
            text = f'<text x="{x + 3}" y="{_PAD - 24 + 11 * row}" font-size="10" fill="#a4262c">{escape(label)}</text>'
        parts.append(
            f'<g class="pause-marker" data-status="{pause["status"]}" data-retry-after="'
            f'{escape(pause["retry_after"])}"><line x1="{x}" y1="{_PAD - 34 + 11 * (row or 0)}" x2="{x}" '
            f'y2="{_H - _PAD}" stroke="#a4262c" stroke-width="2"/>{text}<title>{escape(label)} at '
            f"{pause['start']:.2f} s: {escape(pause['url'])}</title></g>"
        )
    if gaps:
        points = " ".join(f"{_x(g['start'], span)},{y(g['gap'])}" for g in gaps)
        parts.append(f'<polyline class="gaps" points="{points}" fill="none" stroke="#2a5db0" stroke-width="1"/>')
        parts.extend(
            f'<circle class="gap" data-gap="{g["gap"]}" cx="{_x(g["start"], span)}" cy="{y(g["gap"])}" '
            f'r="2.5" fill="#2a5db0"><title>{g["gap"]:.3f} s before {escape(g["url"])}</title></circle>'
            for g in gaps[:MAX_ROWS]
        )
    parts.append("</svg>")
    return "".join(parts)


def _colour(status: int | None) -> str:
    if status is None or status >= 500:
        return "#a4262c"
    if status in (403, 429):
        return "#c25e00"
    return "#2a5db0" if status < 300 else "#6b4fbb" if status < 400 else "#8a8a8a"


def _timeline(site: dict[str, Any], span: float) -> str:
    rows = {"robots": 0, "page": 1}
    height = 3 * 26 + 50
    parts = [
        (
            f'<svg id="timeline" xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
            f'viewBox="0 0 {_W} {height}" role="img" aria-label="request timeline">'
        )
    ]
    for label, row in (("robots.txt", 0), ("pages", 1), ("other", 2)):
        parts.append(f'<text x="2" y="{30 + 26 * row}" font-size="11">{label}</text>')
    for r in site["requests"][: MAX_ROWS * 5]:
        row = rows.get(r["kind"], 2)
        x = _x(r["start"], span)
        width = max(1.5, _x(r["start"] + r["duration"], span) - x)
        parts.append(
            f'<rect class="req" x="{x}" y="{18 + 26 * row}" width="{width:.1f}" height="16" '
            f'fill="{_colour(r["status"])}"><title>{r["start"]:.2f} s +{r["duration"]:.3f} s '
            f"{r['status'] or 'no answer'} {r['bytes']} B {escape(r['url'])}</title></rect>"
        )
    parts.append(
        f'<text x="{_PAD}" y="{height - 8}" font-size="11">0 s</text><text x="{_W - _PAD}" '
        f'y="{height - 8}" font-size="11" text-anchor="end">{span:.1f} s</text></svg>'
    )
    return "".join(parts)


def _table(table_id: str, head: tuple[str, ...], rows: list[str]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f'<table id="{table_id}"><thead><tr>{th}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def site_page(site: dict[str, Any], crawl: dict[str, Any]) -> str:
    """One site's detail: its numbers, robots.txt reads, gap chart, pauses, timeline, skips and requests."""
    t = site["totals"]
    span = max([r["start"] + r["duration"] for r in site["requests"]] + [1.0])
    facts = [
        ("requests", t["requests"]),
        ("pages fetched", t["pages"]),
        ("bytes received", _bytes(t["bytes"])),
        ("stored", t["stored"]),
        ("skipped", t["skipped"]),
        ("pauses", t["pauses"]),
        ("errors", t["errors"]),
        ("profile spacing", _s(site["profile_spacing"])),
        ("Crawl-delay", _s(site["crawl_delay"])),
        ("spacing used", _s(site["spacing"])),
        ("smallest gap", _s(site["min_gap"]) if site["min_gap"] is not None else "one request only"),
    ]
    robots = [
        f'<tr class="robots-read" data-status="{r["status"] or ""}" data-outcome="{escape(r["outcome"])}">'
        f'<td class="n">{r["start"]:.2f} s</td><td>{escape(r["url"])}</td><td>{r["status"] or "no answer"}</td>'
        f"<td>{escape(r['outcome'])}</td><td>{'yes' if r['allows_all'] else 'no'}</td>"
        f"<td>{_s(r['crawl_delay'])}</td></tr>"
        for r in site["robots"]
    ]
    pauses = [
        f'<tr class="pause" data-status="{p["status"]}"><td class="n">{p["start"]:.2f} s</td>'
        f"<td>{p['status']}</td><td>{escape(p['retry_after'] or 'none')}</td><td>{escape(p['url'])}</td></tr>"
        for p in site["pauses"]
    ]
    skips = [
        f'<tr class="skip" data-reason="{escape(reason)}"><td>{escape(reason)}</td>'
        f"<td>{escape(url or '(no URL)')}</td></tr>"
        for reason, urls in site["skipped"].items()
        for url in urls[:MAX_ROWS]
    ]
    stored = [f'<tr class="stored"><td>{escape(url)}</td></tr>' for url in site["stored"][:MAX_ROWS]]
    requests = [
        f'<tr class="request" data-status="{r["status"] or ""}"><td class="n">{r["start"]:.3f}</td>'
        f'<td class="n">{r["duration"]:.3f}</td><td>{r["status"] or "no answer"}</td>'
        f'<td class="n">{r["bytes"]}</td>'
        f"<td>{escape(r['kind'])}</td><td>{escape(r['url'])}</td><td>{escape(r['retry_after'])}</td></tr>"
        for r in site["requests"][:MAX_ROWS]
    ]
    cut = (
        f'<p class="muted">The first {MAX_ROWS} of {t["requests"]} requests; report.json has them all.</p>'
        if t["requests"] > MAX_ROWS
        else ""
    )
    body = (
        f'<p><a href="../index.html">&larr; all sites</a> · crawl {escape(str(crawl.get("crawl_id", "")))} · '
        f'{escape(str(crawl.get("profile", "")))}</p><h1 id="site">{escape(site["site"])}</h1>'
        + '<table id="site-facts">'
        + "".join(f'<tr data-fact="{escape(k)}"><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>' for k, v in facts)
        + "</table><h2>robots.txt</h2>"
        + (
            _table("robots-reads", ("at", "URL", "status", "outcome", "allows /", "Crawl-delay"), robots)
            if robots
            else "<p>Not fetched in this crawl (a copy the knowledge base kept may have been used).</p>"
        )
        + '<h2>Gaps between requests</h2><p class="legend"><span>● gap before each request</span>'
        + "<span>- - profile spacing</span><span>··· spacing used</span><span>&mdash; Crawl-delay</span>"
        + '<span class="warn">| pause (403/429/503)</span></p>'
        + _gap_chart(site, span)
        + "<h2>Pauses</h2>"
        + (_table("pauses", ("at", "status", "Retry-After", "URL"), pauses) if pauses else "<p>None.</p>")
        + "<h2>Timeline</h2>"
        + _timeline(site, span)
        + "<h2>Skipped, or cut at the size cap</h2>"
        + (_table("skipped", ("why", "URL"), skips) if skips else "<p>Nothing skipped.</p>")
        + "<h2>Stored</h2>"
        + (_table("stored", ("URL",), stored) if stored else "<p>Nothing stored.</p>")
        + "<h2>Requests</h2>"
        + cut
        + _table("requests", ("start (s)", "took (s)", "status", "bytes", "kind", "URL", "Retry-After"), requests)
    )
    return _page(f"{site['site']}: crawl report", body)
