"""The request kind: one row per kind, read from one meta key, set by every request we build."""

from __future__ import annotations

import ast
import json
import pickle
from pathlib import Path

import pytest

from synapsecrawl.crawl.kinds import KIND, KINDS, KindRules, RequestKind, kind_of

ROOT = Path(__file__).resolve().parents[2]
# Requests built without a kind literal, and why they need none.
_UNKINDED = {
    ("spiders/worker.py", "request_for"): "rebuilt from a frontier entry, whose meta carries the kind it was sent with",
    ("spiders/worker.py", "_start_source"): "a lease token handed to scheduler.done(), never fetched",
}


def test_every_kind_has_one_row() -> None:
    """The table has a row for every kind and no other."""
    assert set(KINDS) == set(RequestKind)
    assert all(isinstance(row, KindRules) for row in KINDS.values())
    assert all(kind.rules is KINDS[kind] for kind in RequestKind)


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({}, RequestKind.PAGE),
        ({"depth": 2}, RequestKind.PAGE),
        ({KIND: RequestKind.FEED}, RequestKind.FEED),
        ({KIND: "robots"}, RequestKind.ROBOTS),  # as a shared crawl's JSON entry brings it back
        ({KIND: "a-kind-of-a-later-version"}, RequestKind.PAGE),
        ({KIND: None}, RequestKind.PAGE),
    ],
)
def test_a_request_without_a_known_kind_is_a_page(meta: dict[str, object], expected: RequestKind) -> None:
    """No kind, or one this version does not know, is a page: the kind every rule applies to."""
    assert kind_of(meta) is expected


def test_a_kind_travels_as_json_and_comes_back() -> None:
    """A shared crawl's entry holds meta as JSON; the kind goes as its value and reads back as the kind."""
    for kind in RequestKind:
        assert kind_of(json.loads(json.dumps({KIND: kind}))) is kind


def test_side_fetches_are_no_pages() -> None:
    """OMN-FETCH, SYN-LIMITS: robots.txt, tdmrep.json and render subresources spend no page of the budget,
    are no page in the summary or the report, and are never retried or held as pages."""
    for kind in (RequestKind.ROBOTS, RequestKind.TDMREP, RequestKind.SUBRESOURCE):
        row = kind.rules
        assert not (row.budget or row.summarised or row.rendered or row.reread)
        assert row.backoff == "side" and row.logged_as != "page"


def _request_calls() -> list[tuple[str, str, ast.Call]]:
    """Every ``Request(...)``/``scrapy.Request(...)`` in spiders/ and middlewares/, with its file and function."""
    found = []
    for path in sorted([*ROOT.glob("spiders/*.py"), *ROOT.glob("middlewares/*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call):
                    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                    if name == "Request":
                        found.append((path.relative_to(ROOT).as_posix(), function.name, node))
    return found


def _sets_kind(call: ast.Call) -> bool:
    meta = next((k.value for k in call.keywords if k.arg == "meta"), None)
    return isinstance(meta, ast.Dict) and any(isinstance(key, ast.Name) and key.id == "KIND" for key in meta.keys)


def test_every_request_we_build_sets_its_kind() -> None:
    """Each request a spider or middleware builds names its kind in its meta literal, so no side
    fetch is a page by accident (a new one fails here until it picks its row)."""
    calls = _request_calls()
    assert len(calls) >= 10  # the scan sees the spiders' and middlewares' requests
    missing = [
        f"{path}:{call.lineno} in {function}"
        for path, function, call in calls
        if not _sets_kind(call) and (path, function) not in _UNKINDED
    ]
    assert missing == []
    assert {(path, function) for path, function, _ in calls} >= set(_UNKINDED)  # no stale exemption


def test_every_kind_we_set_is_its_plain_value() -> None:
    """A request's kind goes into its meta as the kind's value, a str: a JOBDIR pickles its pending requests,
    and a pickled enum member names its class's module, so a JOBDIR written before that module moved would not
    load; the value needs no module, and kind_of() reads it back as the kind."""
    calls = _request_calls()
    kinds = [
        (path, call.lineno, ast.unparse(value))
        for path, _, call in calls
        for keyword in call.keywords
        if keyword.arg == "meta" and isinstance(keyword.value, ast.Dict)
        for key, value in zip(keyword.value.keys, keyword.value.values, strict=True)
        if isinstance(key, ast.Name) and key.id == "KIND"
    ]
    assert len(kinds) >= 10
    assert [kind for kind in kinds if not kind[2].endswith(".value")] == []
    assert all(b"synapsecrawl.crawl" not in pickle.dumps({KIND: kind.value}) for kind in RequestKind)
    assert b"synapsecrawl.crawl" in pickle.dumps({KIND: RequestKind.PAGE})  # as it was before
    held = [pickle.loads(pickle.dumps({KIND: kind.value})) for kind in RequestKind]  # noqa: S301 - our own bytes
    assert [kind_of(meta) for meta in held] == list(RequestKind)
