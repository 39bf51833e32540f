"""``synapsecrawl kb reindex``: rebuild a KB's search index from the store (``synapsecrawl.search.index``).

    synapsecrawl kb reindex --uri KB_URI [--kb NAME]

Without ``--kb`` the whole index is built anew in a fresh directory and swapped
in; with it, that KB's pages are indexed again in place. A process that keeps
the index (``synapsecrawl serve``) holds its writer role: then it is refused in
one line, since that process already follows every change of the KB.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from synapsecrawl.kb import DEFAULT_KB_URI, open_store

__all__ = ["register"]


def register(kb: Any) -> None:
    """Add ``reindex`` to the ``synapsecrawl kb`` subcommands."""
    sub = kb.add_parser("reindex", help="rebuild the search index from the stored pages")
    sub.add_argument("--uri", default=DEFAULT_KB_URI, help="KB_URI (default: %(default)s)")
    sub.add_argument("--kb", default=None, help="one knowledge base (default: all)")
    sub.set_defaults(handler=_reindex)


def _reindex(args: argparse.Namespace) -> int:
    from synapsecrawl.search.index import SearchIndex, index_path

    store = open_store(args.uri)
    try:
        index = SearchIndex(store, index_path(args.uri))
        try:
            if not index.try_writer():
                index.rebuild(args.kb)  # raises IndexBusy, in one line
            count = index.rebuild(args.kb)
        finally:
            index.close()
    finally:
        store.close()
    sys.stderr.write(f"synapsecrawl kb reindex: {count} pages indexed in {index.path}\n")
    return 0
