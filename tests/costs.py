"""Measured cost of each slow test file, so `make test` starts the longest files first (#15).

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

# From a run of `make test` on 2026-12-03 (2196 tests, 12 workers, 7.4 min). Refresh from a
# `pytest -n 12 --dist loadfile --durations=0` output with (then round, keep files over ~15 s):
#   awk '/slowest durations/{f=1} f && /s (call|setup|teardown) /{split($3,a,"::"); s[a[1]]+=$1}
#        END{for (k in s) print int(s[k]), k}' out.txt | sort -rn
COSTS: dict[str, int] = {
    "tests/e2e/test_shared_crawl.py": 250,
    "tests/e2e/test_signing_crawl.py": 230,
    "tests/e2e/test_feed_mode.py": 200,
    "tests/e2e/test_site_mode.py": 190,
    "tests/e2e/test_shared_crawl_failures.py": 180,
    "tests/e2e/test_backoff.py": 180,
    "tests/e2e/test_robots_txt.py": 160,
    "tests/e2e/test_serve.py": 150,
    "tests/e2e/test_download_faults.py": 150,
    "tests/e2e/test_profiles.py": 130,
    "tests/e2e/test_ondemand.py": 130,
    "tests/e2e/test_fetch_rules.py": 120,
    "tests/e2e/test_reread.py": 120,
    "tests/e2e/test_content.py": 110,
    "tests/e2e/test_scrapyd.py": 90,
    "tests/e2e/test_bad_input.py": 90,
    "tests/e2e/test_shared_crawl_scrapyd.py": 90,
    "tests/e2e/test_recrawl.py": 90,
    "tests/e2e/test_page_mode.py": 90,
    "tests/e2e/test_sitemap_mode.py": 80,
    "tests/e2e/test_publish.py": 80,
    "tests/e2e/test_hostile_pages.py": 80,
    "tests/e2e/test_resume.py": 70,
    "tests/e2e/test_js_rendering.py": 70,
    "tests/e2e/test_shared_pacing.py": 60,
    "tests/e2e/test_search.py": 50,
    "tests/e2e/test_limits.py": 50,
    "tests/e2e/test_report.py": 50,
    "tests/e2e/test_bad_settings.py": 50,
    "tests/adapters/test_startup_imports.py": 40,
    "tests/e2e/test_bad_urls.py": 40,
    "tests/e2e/test_ipv6_literals.py": 40,
    "tests/core/test_extract_pool.py": 30,
    "tests/e2e/test_ondemand_inputs.py": 30,
    "tests/core/test_bad_urls.py": 20,
    "tests/core/test_extract_quality.py": 20,
    "tests/core/test_sitemaps.py": 20,
    "tests/core/test_extract_bounds.py": 20,
    "tests/e2e/test_postgres.py": 20,
    "tests/e2e/test_foreign_kb.py": 20,
    "tests/core/test_store_backends.py": 20,
    "tests/core/test_docs.py": 20,
}

# A new e2e file not measured yet: assume a middling crawl-running file rather than a fast one,
# so it is not dealt last.
UNMEASURED_E2E = 200


def cost(path: str) -> int:
    """The measured cost of a test file (its path from the repository root, as in a node id)."""
    if path in COSTS:
        return COSTS[path]
    return UNMEASURED_E2E if path.startswith("tests/e2e/") else 0
