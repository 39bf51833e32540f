"""The search service's decisions: which searches are asked right, and where it may listen."""

from __future__ import annotations

import pickle

import pytest

from synapsecrawl.crawl.ondemand import FetchError, http_status
from synapsecrawl.errors import ConfigError
from synapsecrawl.search import api as searchapi
from synapsecrawl.search.api import SearchArgs, check_bind, check_search_args, is_loopback


def test_exported_members() -> None:
    """The public surface of searchapi is its __all__."""
    assert all(hasattr(searchapi, name) for name in searchapi.__all__)


@pytest.mark.parametrize(
    ("params", "args"),
    [
        ({"query": "kettle"}, SearchArgs("kettle")),
        (
            {"query": "  boil   water ", "kb": "docs", "limit": "5", "offset": "10"},
            SearchArgs("boil water", "docs", 5, 10),
        ),
        ({"query": "kettle", "kb": "", "limit": 50, "offset": 0}, SearchArgs("kettle", None, 50, 0)),
        ({"query": "kettle", "limit": None}, SearchArgs("kettle")),
    ],
)
def test_a_search_is_read_from_strings_or_json_values(params: dict[str, object], args: SearchArgs) -> None:
    """YOT-RESULTS: a query string's text and a JSON body's numbers ask for the same search."""
    assert check_search_args(params) == args


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({}, "give a query"),
        ({"query": 7}, "give a query"),
        ({"query": "..."}, "has no word to search for"),
        ({"query": "x" * 501}, "at most 500"),
        ({"query": "k", "q": "k"}, "unknown parameter 'q'"),
        ({"query": "k", "limit": True}, "limit must be a whole number"),
        ({"query": "k", "limit": 1.5}, "limit must be a whole number"),
        ({"query": "k", "limit": 51}, "limit must be from 1 to 50, not 51"),
        ({"query": "k", "offset": 951}, "offset must be from 0 to 950"),
        ({"query": "k", "kb": "a b"}, "is not a knowledge base name"),
        ({"query": "k", "kb": ["a"]}, "is not a knowledge base name"),
    ],
)
def test_a_wrong_search_is_one_bad_request(params: dict[str, object], message: str) -> None:
    """Anything wrong in a search is one line naming it, answered with a 400."""
    with pytest.raises(FetchError) as raised:
        check_search_args(params)
    assert raised.value.code == "bad_request" and http_status(raised.value.code) == 400
    assert message in raised.value.message and "\n" not in raised.value.message


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.4", False),
        ("search.example", False),
    ],
)
def test_only_loopback_addresses_count_as_private(host: str, loopback: bool) -> None:
    """Safe by default: a name is taken as reachable from other machines (fail toward safety)."""
    assert is_loopback(host) is loopback


def test_a_public_bind_needs_a_token() -> None:
    """Serving beyond loopback without SEARCH_TOKEN is refused in one line; with one, or on loopback, not."""
    check_bind("127.0.0.1", "")
    check_bind("0.0.0.0", "token")
    with pytest.raises(ConfigError, match=r"^serve --host 0.0.0.0 is reachable from other machines: set SEARCH_TOKEN"):
        check_bind("0.0.0.0", "")


def test_a_fetch_error_crosses_a_process_boundary_whole() -> None:
    """A search process's FetchError reaches the server with its code and message (pickled, as the pool sends it),
    so its 404 unknown_kb and 503 unavailable are the server's answers."""
    for code in ("unknown_kb", "unavailable"):
        back = pickle.loads(pickle.dumps(FetchError(code, f"why {code}")))  # noqa: S301 (our own bytes)
        assert isinstance(back, FetchError) and (back.code, back.message, str(back)) == (
            code,
            f"why {code}",
            f"why {code}",
        )
        assert back.as_json() == {"error": {"code": code, "message": f"why {code}"}}


def test_a_body_is_what_starlettes_json_response_renders() -> None:
    """/api/search's body, encoded in the search process, is byte for byte what JSONResponse would send."""
    from starlette.responses import JSONResponse

    content = {"query": "café «x»", "kb": None, "offset": 0, "results": [{"score": 1.5, "passages": []}]}
    assert searchapi.json_body(content) == JSONResponse(content).body
