"""What the SQLite knowledge base keeps beside each page: its labels.

``page_labels`` and ``link_labels`` hold OmniscienteBot's labels and TDM policy (OMN-LABELS, OMN-FETCH), no text,
deleted with the page. A page's passages are cut by the search index beside the KB (synapsecrawl.search.index)
from the page's text; the KB keeps none. More: docs/architecture.md, "Inside the larger modules".
"""

from __future__ import annotations

__all__ = ["SCHEMA", "UNREAD_TRIGGERS"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS page_labels (
    kb TEXT NOT NULL,
    url TEXT NOT NULL,
    kind TEXT NOT NULL,
    tdm_reservation INTEGER,
    tdm_policy TEXT NOT NULL DEFAULT '',
    tdm_source TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (kb, url)
);
CREATE TABLE IF NOT EXISTS link_labels (
    kb TEXT NOT NULL,
    url TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    target TEXT NOT NULL,
    context TEXT NOT NULL,
    PRIMARY KEY (kb, url, ordinal)
);
CREATE TRIGGER IF NOT EXISTS pages_labels_ad AFTER DELETE ON pages BEGIN
    DELETE FROM page_labels WHERE kb = old.kb AND url = old.url;
    DELETE FROM link_labels WHERE kb = old.kb AND url = old.url;
END;
"""

# The trigger a KB made before (schema version 2 and older) deleted a page's passages and labels with: dropped on
# open with the passages table it writes to, once ``pages_labels_ad`` is there.
UNREAD_TRIGGERS = ("pages_content_ad",)
