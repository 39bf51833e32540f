"""Each bot's public page, written from its profile.

The sentences come from ``report.bot_templates`` (one template per promise);
here they are filled, placed in their sections once each (a sentence that
states several promises names them all) and written as Markdown or HTML. The
words around a bot (its name, what it is for, its contact) are the profile's
``[page]`` table.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any

from synapsecrawl.report.bot_templates import PROMISES, SECTIONS, Bot, promise_ids
from synapsecrawl.report.words import Words

__all__ = ["Sentence", "promise_sentences", "render", "sentences"]


@dataclass(frozen=True)
class Sentence:
    """One sentence of a page: the promise it keeps, its template and the profile values in it."""

    promise: str  # the promise id(s) it states, space-separated
    template: str
    values: dict[str, Any]

    @property
    def text(self) -> str:
        """The sentence as the page shows it."""
        return Words().format(self.template, **self.values)


# A promise another sentence of the same page already states in full: it is kept by that sentence.
_KEPT_BY: dict[str, dict[str, str]] = {
    "synapsebot": {"SYN-CD": "ALL-CD", "ALL-TIMEOUT": "SYN-TIMEOUT"},
    "snagabot": {"ALL-SIZE": "SNA-SIZE"},
    "omniscientebot": {"OMN-CD": "ALL-CD", "ALL-SIZE": "OMN-CAPS", "ALL-TIMEOUT": "OMN-CAPS"},
}


def promise_sentences(bot: Bot, promise: str) -> list[Sentence]:
    """The sentence(s) of ``bot``'s page that state ``promise``."""
    made = PROMISES[_KEPT_BY.get(bot.profile.name, {}).get(promise, promise)](bot)
    return [
        Sentence(promise, template, values(bot)) for template, values in (made if isinstance(made, list) else [made])
    ]


def sentences(bot: Bot) -> list[tuple[str, list[Sentence]]]:
    """The page's sections, each a list of its sentences; a sentence stating several promises names them all."""
    ids = set(promise_ids(bot.profile.name))
    placed: dict[str, tuple[int, int]] = {}  # sentence text -> (section, position)
    out: list[tuple[str, list[Sentence]]] = []
    for heading, section in SECTIONS:
        said: list[Sentence] = []
        out.append((heading, said))
        for promise in (p for p in section if p in ids):
            for sentence in promise_sentences(bot, promise):
                if sentence.text in placed:
                    where, at = placed[sentence.text]
                    first = out[where][1][at]
                    if promise not in first.promise.split():
                        out[where][1][at] = Sentence(f"{first.promise} {promise}", first.template, first.values)
                    continue
                placed[sentence.text] = (len(out) - 1, len(said))
                said.append(sentence)
    return [(heading, said) for heading, said in out if said]


def _inline(text: str) -> str:
    parts = escape(text).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def render(bot: Bot, fmt: str = "md") -> str:
    """The bot's page, as Markdown (``md``) or a self-contained HTML page (``html``)."""
    title = str(bot.page.get("title", bot.profile.token))
    about = str(bot.page.get("about", ""))
    deployments = bot.page.get("deployments") or {}
    who = [
        f"{desc}: {Words().format('{ua:code}', ua=bot.deployments[d].user_agent)}."
        for d, desc in deployments.items()
        if d in bot.deployments
    ]
    contact = str(bot.page.get("contact", ""))
    sections = sentences(bot)
    tail = [f"Questions about its traffic: {contact}."] if contact else []
    if fmt == "md":
        lines = [f"# {title}", "", about, "", f"This page: {bot.url}", ""]
        if who:
            lines += ["## Who runs it", "", *(f"- {w[0].upper()}{w[1:]}" for w in who), ""]
        for heading, said in sections:
            lines += [f"## {heading}", "", *(f"- {s.text}" for s in said), ""]
        if tail:
            lines += ["## Contact", "", *tail, ""]
        return "\n".join(lines)
    body = [
        f"<h1>{escape(title)}</h1>",
        f"<p>{escape(about)}</p>",
        f'<p>This page: <a href="{escape(bot.url)}">{escape(bot.url)}</a></p>',
    ]
    if who:
        body += ["<h2>Who runs it</h2><ul>", *(f"<li>{_inline(w[0].upper() + w[1:])}</li>" for w in who), "</ul>"]
    for heading, said in sections:
        body += [
            f"<h2>{escape(heading)}</h2><ul>",
            *(f'<li data-promise="{s.promise}">{_inline(s.text)}</li>' for s in said),
            "</ul>",
        ]
    if tail:
        body += ["<h2>Contact</h2>", *(f"<p>{escape(t)}</p>" for t in tail)]
    style = (
        "body{font:16px/1.5 system-ui,sans-serif;max-width:46em;margin:2em auto;padding:0 1em;color:#1d1d1f}"
        "code{font-size:.9em;background:#f4f4f6;padding:0 .2em}"
    )
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{style}</style></head>'
        f"<body>{''.join(body)}</body></html>\n"
    )
