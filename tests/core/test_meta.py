"""The request meta keys (synapsecrawl.crawl.meta): one table, the lists derived from it, every key in it."""

from __future__ import annotations

import ast
from pathlib import Path

from synapsecrawl.crawl.meta import (
    LEASE,
    LEFT_OUT_OF_ENTRY,
    META,
    ORIGIN,
    PER_DOWNLOAD,
    TURN,
    drop_per_download,
)
from synapsecrawl.shared.entries import is_plain_json

ROOT = Path(__file__).resolve().parents[2]
_TREES = ("synapsecrawl", "middlewares", "spiders", "pipelines")


def _is_request_meta(node: ast.expr, path: str) -> bool:
    """``x.meta`` anywhere, or a name ``meta`` in the adapters (the core's ``meta`` names are HTML meta tags
    and feed fields, never a request's)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "meta"
    return isinstance(node, ast.Name) and node.id == "meta" and not path.startswith("synapsecrawl/")


def _meta_keys() -> list[tuple[str, int, ast.expr]]:
    """Every key written or read as ``meta[...]``, ``meta.get/pop/setdefault(...)``, ``... in meta`` or in a
    ``meta={...}`` argument, with where it is."""
    found: list[tuple[str, int, ast.expr]] = []
    for tree in _TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                keys: list[ast.expr] = []
                if isinstance(node, ast.Subscript) and _is_request_meta(node.value, name):
                    keys = [node.slice]
                elif isinstance(node, ast.Call):
                    func = node.func
                    if (
                        isinstance(func, ast.Attribute)
                        and func.attr in ("get", "pop", "setdefault")
                        and _is_request_meta(func.value, name)
                        and node.args
                    ):
                        keys = [node.args[0]]
                    for keyword in node.keywords:
                        if keyword.arg == "meta" and isinstance(keyword.value, ast.Dict):
                            keys += [key for key in keyword.value.keys if key is not None]
                elif (
                    isinstance(node, ast.Compare)
                    and isinstance(node.ops[0], ast.In | ast.NotIn)
                    and _is_request_meta(node.comparators[0], name)
                ):
                    keys = [node.left]
                found += [(name, node.lineno, key) for key in keys]
    return found


def test_every_literal_meta_key_in_the_code_is_in_the_table() -> None:
    """Every string used as a request meta key in synapsecrawl/, middlewares/, spiders/ and pipelines/ is a
    row of META, so whether it follows a retry or travels to Redis is decided once, not by a forgotten list."""
    keys = _meta_keys()
    literals = [(path, line, key.value) for path, line, key in keys if isinstance(key, ast.Constant)]
    assert len(literals) >= 40  # the scan sees the adapters' meta keys
    assert [f"{path}:{line}: {key!r}" for path, line, key in literals if key not in META] == []


def test_every_named_meta_key_comes_from_the_table() -> None:
    """A meta key given by name (``request.meta[TURN]``) is one of the table's constants (or the kind's key,
    or Scrapy's ``DOWNLOAD_SLOT``), never a module's own copy of a key's string."""
    import synapsecrawl.crawl.meta as table

    constants = {name for name in table.__all__ if isinstance(getattr(table, name), str)} | {"KIND", "_LEASE", "_STATE"}
    names = {ast.unparse(key) for _, _, key in _meta_keys() if isinstance(key, ast.Name | ast.Attribute)} - {
        "self.DOWNLOAD_SLOT",
        "attr",
        "key",
    }
    assert names <= constants, names - constants
    for path in ("middlewares/engine/downloader.py", "middlewares/render.py"):  # their private aliases
        source = (ROOT / path).read_text(encoding="utf-8")
        assert "from synapsecrawl.crawl.meta import" in source


def test_the_lists_of_one_downloads_keys_are_the_tables() -> None:
    """A retry and a request sent back by the pacing gate drop exactly the per-download keys; a shared crawl
    leaves those out of Redis, and the keys its entry carries in fields of their own (lease, origin)."""
    assert {TURN, "download_latency", "backoff_judged", "gate_refused_type", "size_truncated"} <= PER_DOWNLOAD
    assert PER_DOWNLOAD | {LEASE, ORIGIN} == LEFT_OUT_OF_ENTRY
    assert LEASE not in PER_DOWNLOAD and ORIGIN not in PER_DOWNLOAD  # a retry keeps its lease and its source
    meta = {TURN: True, "download_latency": 0.2, LEASE: ["a.test", "1-0"], "backoff_retries": 1}
    assert drop_per_download(meta) == {LEASE: ["a.test", "1-0"], "backoff_retries": 1}


def test_a_key_set_to_a_tuple_is_marked_as_not_travelling() -> None:
    """A key that a ``meta={...}`` argument or a ``meta[...] =`` assignment sets to a tuple (not JSON: it would
    come back from Redis a list) is marked ``travels=False``, so its request stays in its worker, as
    ``plain_meta`` found by the value before; the feed's article and icon requests are two."""
    tupled: set[str] = set()
    for tree in _TREES:
        for path in sorted((ROOT / tree).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    for keyword in node.keywords:
                        if keyword.arg == "meta" and isinstance(keyword.value, ast.Dict):
                            tupled |= {
                                key.value
                                for key, value in zip(keyword.value.keys, keyword.value.values, strict=True)
                                if isinstance(key, ast.Constant) and isinstance(value, ast.Tuple)
                            }
    assert {"feed_entry", "site_icon"} <= tupled
    assert [key for key in sorted(tupled) if META[key].travels] == []
    assert not is_plain_json(("a", 1))
