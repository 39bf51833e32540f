"""The crawl report, from a real crawl: what the server saw is what the report shows, and it
renders in headless Chromium without a script error."""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import synapsecrawl
from tests.site.pages import TEXT, page
from tests.site.server import Reply, TestServer

pytestmark = pytest.mark.e2e


html = partial(page, say="{title}: a page of plain words for the knowledge base.")


def busy_once() -> Any:
    calls = iter(range(10**6))

    def route(_: object) -> Reply:
        if next(calls) == 0:
            return Reply("busy", status=503, headers={**TEXT, "Retry-After": "2"})
        return html("Busy")

    return route


def serve_site(server: TestServer, host: str) -> None:
    links = "".join(f'<a href="{p}">{p}</a> ' for p in ("/a.html", "/busy.html", "/hidden.html", "/private/x.html"))
    server.add(
        host,
        {
            "/robots.txt": Reply("User-agent: *\nCrawl-delay: 1.5\nDisallow: /private/\n", headers=TEXT),
            "/": html("Home", after=links),
            "/a.html": html("A"),
            "/busy.html": busy_once(),
            "/hidden.html": html("Hidden", head='<meta name="robots" content="noindex">'),
            "/private/x.html": html("Private"),
        },
    )


def crawl_dir(reports: Path) -> Path:
    found = sorted(reports.glob("*/requests.jsonl"))
    assert len(found) == 1, found
    return found[0].parent


@pytest.fixture
def reported(server: TestServer, host: str, crawl, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    serve_site(server, host)
    run = crawl("site", args={"url": server.url(host, "/")}, settings={"REPORT_DIR": str(tmp_path / "reports")})
    assert run.returncode == 0, run.stderr
    directory = crawl_dir(tmp_path / "reports")
    assert f"crawl report: {directory / 'index.html'}" in run.stderr
    return directory, json.loads((directory / "report.json").read_text())


def test_report_json_matches_what_the_server_saw(
    reported: tuple[Path, dict[str, Any]], server: TestServer, host: str
) -> None:
    """ALL-CD, the design card's 429/503 backoff, ALL-NOINDEX, ALL-RFC9309: the report's
    site holds every request the server logged, in order, with its status; the Crawl-delay read from
    robots.txt and the spacing it set; the 503 as a pause with its Retry-After; robots.txt read once
    and parsed; /hidden.html skipped for noindex and /private/x.html for robots; the rest stored."""
    _, data = reported
    hits = server.log(host)
    [site] = [s for s in data["sites"] if s["site"] == host]
    assert [r["url"].split(f":{server.port}", 1)[1] for r in site["requests"]] == [h.path for h in hits]
    statuses = {r["url"].rsplit("/", 1)[1]: r["status"] for r in site["requests"] if "busy" not in r["url"]}
    assert statuses == {"robots.txt": 200, "": 200, "a.html": 200, "hidden.html": 200}
    assert [r["status"] for r in site["requests"] if r["url"].endswith("/busy.html")] == [503, 200]
    assert site["crawl_delay"] == 1.5 and site["spacing"] == 1.5 and site["profile_spacing"] == 1.0
    assert [(p["status"], p["retry_after"]) for p in site["pauses"]] == [(503, "2")]
    [robots] = site["robots"]
    assert (robots["status"], robots["outcome"], robots["crawl_delay"]) == (200, "parsed", 1.5)
    assert site["skipped"] == {
        "noindex": [server.url(host, "/hidden.html")],
        "robots": [server.url(host, "/private/x.html")],
    }
    assert sorted(site["stored"]) == sorted(server.url(host, p) for p in ("/", "/a.html", "/busy.html"))
    assert len(site["gaps"]) == len(hits) - 1
    assert data["totals"]["requests"] == len(hits) and data["totals"]["stored"] == 3
    assert data["crawl"]["profile"] == "synapsebot" and data["stats"]["summary/skipped/noindex"] == 1
    assert all(r["bytes"] > 0 for r in site["requests"])


def test_report_renders_in_chromium_with_its_key_elements(
    reported: tuple[Path, dict[str, Any]], server: TestServer, host: str, tmp_path: Path
) -> None:
    """The index and the site's page load from the disk in headless Chromium with no console
    error or page error; the site's row shows the request count the server logged and its skip reasons;
    its page draws the gap chart with the Crawl-delay line at 1.5 s, one gap point per gap, and a pause
    marker for the 503 with Retry-After 2; the filter script hides other rows. Screenshots are kept."""
    if not os.access("/usr/bin/chromium", os.X_OK):
        pytest.skip("no /usr/bin/chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    directory, _ = reported
    hits = server.log(host)
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, chromium_sandbox=os.geteuid() != 0
        )
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto((directory / "index.html").as_uri())
            row = page.locator(f'tr.site-row[data-site="{host}"]')
            assert row.count() == 1
            cells = row.locator("td").all_inner_texts()
            assert cells[0] == host and cells[1] == str(len(hits))
            assert "noindex 1" in cells[3] and "robots 1" in cells[3] and cells[4] == "1"  # one pause
            assert page.locator('#totals tr[data-total="requests"] td').inner_text() == str(len(hits))
            page.screenshot(path=str(tmp_path / "report-index.png"), full_page=True)
            page.fill("#filter", "no-such-site")
            assert not row.is_visible()
            page.fill("#filter", "")
            row.locator("a").click()
            page.wait_for_selector("#gap-chart")
            assert page.locator("#site").inner_text() == host
            assert page.locator("#gap-chart .crawl-delay-line").get_attribute("data-seconds") == "1.5"
            assert page.locator("#gap-chart circle.gap").count() == len(hits) - 1
            marker = page.locator('#gap-chart .pause-marker[data-status="503"]')
            assert marker.count() == 1 and marker.get_attribute("data-retry-after") == "2"
            assert "503 Retry-After 2" in marker.inner_html()
            skips = {r.get_attribute("data-reason"): r.inner_text() for r in page.locator("tr.skip").all()}
            assert set(skips) == {"noindex", "robots"}
            assert "/hidden.html" in skips["noindex"] and "/private/x.html" in skips["robots"]
            assert page.locator("tr.robots-read").get_attribute("data-outcome") == "parsed"
            assert page.locator("#timeline rect.req").count() == len(hits)
            page.screenshot(path=str(tmp_path / "report-site.png"), full_page=True)
        finally:
            browser.close()
    assert errors == []
    assert (tmp_path / "report-index.png").stat().st_size > 0 and (tmp_path / "report-site.png").stat().st_size > 0


def test_report_command_rebuilds_the_same_report(reported: tuple[Path, dict[str, Any]]) -> None:
    """`synapsecrawl report REPORT_DIR` rebuilds the latest crawl's report from its request
    log and stats alone: the same report.json, and a request log with a garbled line loses only that
    line (counted), never the report."""
    directory, data = reported
    (directory / "index.html").unlink()
    out = synapsecrawl("report", str(directory.parent))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(directory / "index.html")
    assert json.loads((directory / "report.json").read_text()) == data
    with (directory / "requests.jsonl").open("a") as log:
        log.write('{"event": "request", "oops"\nnot json\n')
    out = synapsecrawl("report", str(directory))
    assert out.returncode == 0, out.stderr
    rebuilt = json.loads((directory / "report.json").read_text())
    assert rebuilt["unreadable_log_lines"] == 2 and rebuilt["sites"] == data["sites"]
    assert "2 unreadable lines" in (directory / "index.html").read_text()
    missing = synapsecrawl("report", str(directory / "nothing"))
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "no crawl report here" in missing.stderr
