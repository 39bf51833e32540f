"""A shared crawl's worker's arguments (synapsecrawl.crawl.request.WorkerRequest): checked once, read one way."""

from __future__ import annotations

import pytest

from synapsecrawl.crawl.request import WorkerRequest
from synapsecrawl.errors import ConfigError


@pytest.mark.parametrize(("stay", "expected"), [(None, False), ("1", True), ("yes", True), ("on", True), ("0", False)])
def test_the_workers_arguments_are_its_crawl_and_whether_it_stays(stay: str | None, expected: bool) -> None:
    """The crawl command's check and the worker spider read ``-a stay`` the same way: ``on`` stays, as
    ``1`` and ``yes`` do (the spider used to read it as false); Scrapyd's job id is not an argument."""
    given = {"stay": stay} if stay is not None else {}
    assert WorkerRequest.from_args(crawl="docs-1", _job="abc", **given) == WorkerRequest("docs-1", expected)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "the worker joins a shared crawl: give -a crawl=NAME"),
        ({"crawl": "docs", "depth": "2"}, "unknown spider argument(s): depth (worker takes crawl, stay)"),
        ({"crawl": "a b"}, "crawl name 'a b' may hold only letters"),
        ({"crawl": "docs", "stay": "maybe"}, "stay 'maybe' is neither True nor False"),
    ],
)
def test_a_workers_bad_argument_is_one_line(arguments: dict[str, str], message: str) -> None:
    """A bad worker argument stops it with one line, the same from the command and from the spider."""
    with pytest.raises(ConfigError) as refused:
        WorkerRequest.from_args(**arguments)
    assert str(refused.value).startswith(message)
