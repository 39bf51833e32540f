"""Measured cost of each slow test file, so `make test` starts the longest files first.

Under ``--dist loadfile`` a file is one unit of work and a worker takes the next unit when it is
nearly idle; units that start last finish last, so a long file dealt late runs alone at the end.
tests/conftest.py orders the collection by these figures, longest first, and the Makefile passes
``--no-loadscope-reorder`` so xdist keeps that order (by default it sorts units by test count,
which puts the few-test, slow e2e files last). Figures are seconds summed over a file's tests in
one run (12 workers on 2 cores, so only their ratios matter), rounded to 10 s. A file
missing here runs after them all, or in the middle if it is under tests/e2e/ (see ``cost``).
"""

from __future__ import annotations

__all__ = ["COSTS", "cost"]

# From a run of `make test` on 2026-12-03 (2206 tests, 12 workers, 4.2 min). Refresh from a
# `pytest -n 12 --dist loadfile --durations=0` output with (then round, keep files over ~8 s):
#   awk '/slowest durations/{f=1} f && /s (call|setup|teardown) /{split($3,a,"::"); s[a[1]]+=$1}
#        END{for (k in s) print int(s[k]), k}' out.txt | sort -rn
COSTS: dict[str, int] = {
    "tests/e2e/test_shared_crawl.py": 200,  # 150, and 3 of its tests again on a Redis Cluster (#37)
    "tests/e2e/test_backoff.py": 140,
    "tests/e2e/test_shared_crawl_failures.py": 130,
    "tests/e2e/test_signing_crawl.py": 130,
    "tests/e2e/test_ondemand.py": 120,
    "tests/e2e/test_robots_txt.py": 120,
    "tests/e2e/test_site_mode.py": 110,
    "tests/e2e/test_feed_mode.py": 100,
    "tests/e2e/test_fetch_rules.py": 90,
    "tests/e2e/test_resume.py": 70,
    "tests/e2e/test_shared_crawl_scrapyd.py": 70,
    "tests/e2e/test_profiles.py": 70,
    "tests/e2e/test_shared_pacing.py": 60,
    "tests/e2e/test_shared_crawl_cluster.py": 40,  # measured alone, not in a `make test` run
    "tests/e2e/test_sitemap_mode.py": 60,
    "tests/e2e/test_bad_input.py": 50,
    "tests/e2e/test_download_faults.py": 50,
    "tests/e2e/test_report.py": 40,
    "tests/e2e/test_content.py": 40,
    "tests/e2e/test_serve.py": 40,
    "tests/e2e/test_js_rendering.py": 40,
    "tests/core/test_extract_pool.py": 30,
    "tests/core/test_bad_urls.py": 30,
    "tests/core/test_extract_html.py": 30,
    "tests/e2e/test_ondemand_inputs.py": 30,
    "tests/core/test_extract_quality.py": 30,
    "tests/core/test_extract_bounds.py": 30,
    "tests/e2e/test_hostile_pages.py": 30,
    "tests/e2e/test_reread.py": 20,
    "tests/e2e/test_page_mode.py": 20,
    "tests/e2e/test_ipv6_literals.py": 20,
    "tests/core/test_docs.py": 20,
    "tests/core/test_zygote.py": 20,
    "tests/core/test_store_backends.py": 20,
    "tests/core/test_extract_sitemaps.py": 20,
    "tests/core/test_robots.py": 20,
    "tests/e2e/test_deferred.py": 20,
    "tests/e2e/test_scrapyd.py": 14,
    "tests/e2e/test_recrawl.py": 13,
    "tests/e2e/test_search.py": 12,
    "tests/e2e/test_publish.py": 12,
    "tests/e2e/test_bad_urls.py": 12,
    "tests/core/test_layout.py": 12,
    "tests/e2e/test_process_lifetime.py": 11,
    "tests/e2e/test_bad_settings.py": 11,
    "tests/e2e/test_limits.py": 11,
    "tests/core/test_extract_pdf.py": 10,
    "tests/core/test_requestlog.py": 10,
    "tests/adapters/test_backoff_middleware.py": 10,
    "tests/core/test_extract_directives.py": 9,
    "tests/adapters/test_startup_imports.py": 9,
    "tests/core/test_signing.py": 8,
    "tests/adapters/test_robots_middleware.py": 8,
}

# A new e2e file not measured yet: assume a middling crawl-running file rather than a fast one,
# so it is not dealt last.
UNMEASURED_E2E = 200


def cost(path: str) -> int:
    """The measured cost of a test file (its path from the repository root, as in a node id)."""
    if path in COSTS:
        return COSTS[path]
    return UNMEASURED_E2E if path.startswith("tests/e2e/") else 0
