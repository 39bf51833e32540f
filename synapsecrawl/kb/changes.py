"""The change log a search index follows: which pages changed, in the order their transactions wrote them.

A trigger on ``pages`` writes one row ``(seq, kb, url)`` to ``search_changes`` in the
same transaction as the page's insert, delete, or update of its title, text or
snippet text (a page read again unchanged writes none), so every writer of pages
is logged, on both back-ends, and a crash leaves log and pages alike. A follower
(``synapsecrawl.search.index``) reads the rows after the last it applied and
looks each page up in the store: there, it is indexed again; gone, it leaves
the index. The log says which page, not what happened: the store is the truth.

Each index records in ``search_followers`` the seq up to which it applied the log (its name: host and
path); the rows every follower seen in the last ``FOLLOWER_DAYS`` days has applied are deleted, but for the
newest of them (``kb.rows.SharedTables.trim_search_changes``). The row named '' holds the seq below which
rows were deleted: an index whose record is older (a follower gone longer than that, a restored copy)
is rebuilt, since changes it never applied may be gone.

SQLite's ``seq`` (AUTOINCREMENT) rises in commit order. PostgreSQL's (a sequence)
is taken at insert time, so a transaction still open may commit a smaller seq
after a larger one: the follower keeps reading past such a gap for a while.
"""

from __future__ import annotations

__all__ = ["FOLLOWERS", "FOLLOWER_DAYS", "POSTGRES_SCHEMA", "POSTGRES_TRIGGER", "SQLITE_SCHEMA", "TABLE", "TRIMMED"]

TABLE = "search_changes"
FOLLOWERS = "search_followers"
TRIMMED = ""  # the follower name of the row that holds the seq below which the log was trimmed
FOLLOWER_DAYS = 7.0  # a follower not heard from for longer holds the log back no more

SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS search_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kb TEXT NOT NULL,
    url TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS search_followers (
    name TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    seen REAL NOT NULL
);
CREATE TRIGGER IF NOT EXISTS search_changes_ai AFTER INSERT ON pages BEGIN
    INSERT INTO search_changes (kb, url) VALUES (new.kb, new.url);
END;
CREATE TRIGGER IF NOT EXISTS search_changes_au AFTER UPDATE ON pages
WHEN old.title IS NOT new.title OR old.text IS NOT new.text OR old.snippet_text IS NOT new.snippet_text
    OR old.kb IS NOT new.kb OR old.url IS NOT new.url BEGIN
    INSERT INTO search_changes (kb, url) VALUES (old.kb, old.url), (new.kb, new.url);
END;
CREATE TRIGGER IF NOT EXISTS search_changes_ad AFTER DELETE ON pages BEGIN
    INSERT INTO search_changes (kb, url) VALUES (old.kb, old.url);
END;
"""

POSTGRES_SCHEMA = """
CREATE TABLE IF NOT EXISTS search_changes (
    seq BIGSERIAL PRIMARY KEY,
    kb TEXT COLLATE "C" NOT NULL,
    url TEXT COLLATE "C" NOT NULL
);
CREATE TABLE IF NOT EXISTS search_followers (
    name TEXT PRIMARY KEY,
    seq BIGINT NOT NULL,
    seen DOUBLE PRECISION NOT NULL
);
CREATE OR REPLACE FUNCTION search_changes_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.kb = NEW.kb AND OLD.url = NEW.url AND OLD.title = NEW.title
        AND OLD.text = NEW.text AND OLD.snippet_text = NEW.snippet_text THEN
        RETURN NEW;
    END IF;
    IF TG_OP <> 'INSERT' THEN
        INSERT INTO search_changes (kb, url) VALUES (OLD.kb, OLD.url);
    END IF;
    IF TG_OP <> 'DELETE' THEN
        INSERT INTO search_changes (kb, url) VALUES (NEW.kb, NEW.url);
    END IF;
    RETURN NULL;
END $$;
"""

# Created only when missing (CREATE TRIGGER locks the table against writes).
POSTGRES_TRIGGER = (
    "CREATE TRIGGER search_changes_note AFTER INSERT OR DELETE OR UPDATE ON pages "
    "FOR EACH ROW EXECUTE FUNCTION search_changes_note()"
)
