"""Scrapyd's ``schedule.json``, as ``recrawl`` uses it: one POST per job (SYN-REREAD).

The URL may carry credentials (``http://user:pass@host:6800``): they go out
as HTTP Basic and never in the printed address. A Scrapyd that cannot be
reached, or answers no JSON, raises ``ScrapydUnreachable``, whose message is
the one line ``recrawl`` prints.
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any

from synapsecrawl.errors import ConfigError, SynapseError
from synapsecrawl.kb.records import Source

__all__ = ["ScrapydUnreachable", "schedule", "schedule_form"]


class ScrapydUnreachable(SynapseError):
    """Scrapyd did not take the job: no connection, or an answer that is no JSON."""


def schedule_form(
    project: str, source: Source, args: Sequence[tuple[str, str]], settings: Sequence[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The form fields of Scrapyd's ``schedule.json`` for one re-read."""
    return [("project", project), ("spider", source.mode), *(("setting", f"{k}={v}") for k, v in settings), *args]


def schedule(scrapyd: str, form: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """POST ``form`` to ``scrapyd``'s ``schedule.json``; Scrapyd's JSON answer (``status``, ``jobid``)."""
    parts = urllib.parse.urlsplit(scrapyd)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"--scrapyd {scrapyd!r} is not an http(s) URL")
    netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
    endpoint = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + "/schedule.json", "", ""))
    request = urllib.request.Request(endpoint, data=urllib.parse.urlencode(form).encode(), method="POST")  # noqa: S310
    if parts.username:
        token = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(token.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 (scheme checked above)
            answer: dict[str, Any] = json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ScrapydUnreachable(f"Scrapyd at {netloc} did not schedule it: {reason}") from None
    return answer
