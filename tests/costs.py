"""Measured cost of each slow test file, so `make test` starts the longest files first (#15).

Under ``--dist loadfile`` a file is one unit of work and a worker takes the next unit when it is
nearly idle; units that start last finish last, so a long file dealt late runs alone at the end.
tests/conftest.py orders the collection by these figures, longest first, and the Makefile passes
``--no-loadscope-reorder`` so xdist keeps that order (by default it sorts units by test count,
which puts the few-test, slow e2e files last). Figures are seconds summed over a file's tests in
one run (--durations=0, under a load of ~20, so only their ratios matter), rounded to 10 s. A file
missing here runs after them all, or in the middle if it is under tests/e2e/ (see ``cost``).
"""

from __future__ import annotations

__all__ = ["COSTS", "cost"]

# From the run in the #15 brief (2022 tests, 6 workers, 43 min at load ~20). Refresh from a
# `pytest -n 6 --dist loadfile --durations=0` output with (then round, keep files over ~60 s):
#   awk '/slowest durations/{f=1} f && /s (call|setup|teardown) /{split($3,a,"::"); s[a[1]]+=$1}
#        END{for (k in s) print int(s[k]), k}' out.txt | sort -rn
COSTS: dict[str, int] = {
    "tests/e2e/test_shared_crawl.py": 1110,
    "tests/e2e/test_serve.py": 770,
    "tests/e2e/test_robots_txt.py": 760,
    "tests/e2e/test_content.py": 750,
    "tests/e2e/test_sitemap_mode.py": 730,
    "tests/e2e/test_page_mode.py": 700,
    "tests/e2e/test_profiles.py": 660,
    "tests/e2e/test_hostile_pages.py": 600,
    "tests/e2e/test_feed_mode.py": 570,
    "tests/e2e/test_recrawl.py": 530,
    "tests/e2e/test_reread.py": 510,
    "tests/e2e/test_publish.py": 510,
    "tests/e2e/test_js_rendering.py": 510,
    "tests/e2e/test_resume.py": 480,
    "tests/e2e/test_signing_crawl.py": 480,
    "tests/e2e/test_report.py": 400,
    "tests/e2e/test_backoff.py": 400,
    "tests/e2e/test_ipv6_literals.py": 390,
    "tests/e2e/test_shared_crawl_failures.py": 380,
    "tests/e2e/test_foreign_kb.py": 370,
    "tests/e2e/test_site_mode.py": 330,
    "tests/e2e/test_fetch_rules.py": 320,
    "tests/e2e/test_search.py": 290,
    "tests/e2e/test_ondemand_inputs.py": 190,
    "tests/core/test_cli.py": 190,
    "tests/e2e/test_download_faults.py": 180,
    "tests/e2e/test_bad_input.py": 170,
    "tests/e2e/test_ondemand.py": 160,
    "tests/e2e/test_shared_pacing.py": 130,
    "tests/e2e/test_scrapyd.py": 120,
    "tests/e2e/test_shared_crawl_scrapyd.py": 120,
    "tests/e2e/test_bad_settings.py": 120,
    "tests/e2e/test_limits.py": 100,
    "tests/core/test_layout.py": 90,
    "tests/e2e/test_bad_urls.py": 90,
    "tests/e2e/test_process_lifetime.py": 60,
    "tests/e2e/test_postgres.py": 60,
    "tests/e2e/test_deferred.py": 60,
}

# A new e2e file not measured yet: assume a middling crawl-running file rather than a fast one,
# so it is not dealt last.
UNMEASURED_E2E = 200


def cost(path: str) -> int:
    """The measured cost of a test file (its path from the repository root, as in a node id)."""
    if path in COSTS:
        return COSTS[path]
    return UNMEASURED_E2E if path.startswith("tests/e2e/") else 0
