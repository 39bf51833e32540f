"""Each bot's public page, written from its profile: every promise has its sentence,
every number comes from the profile, and a changed profile number changes the page."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from synapsecrawl.errors import SynapseError
from synapsecrawl.profiles.profile import PROFILE_NAMES, read_profile_data
from synapsecrawl.report.bot_templates import PREFIXES, Bot, bot_of, promise_ids
from synapsecrawl.report.botpage import promise_sentences, render, sentences
from tests.helpers import synapsecrawl

ROOT = Path(__file__).resolve().parents[2]
PROMISES_MD = ROOT.parent / "shared" / "PROMISES.md"
# Numbers of standards, not of a profile: RFC numbers, HTTP status codes and classes, the signature label.
STANDARD = {"9309", "9421", "304", "403", "404", "410", "429", "500", "503", "4xx", "5xx", "sig1"}


def page_ids() -> dict[str, set[str]]:
    """The promise ids of ../shared/PROMISES.md, per bot prefix (ALL for the shared ones)."""
    if not PROMISES_MD.is_file():
        pytest.skip(f"no {PROMISES_MD}")
    ids = re.findall(r"^\| ([A-Z]+-[A-Z0-9-]+) \|", PROMISES_MD.read_text("utf-8"), flags=re.MULTILINE)
    out: dict[str, set[str]] = {}
    for promise in ids:
        out.setdefault(promise.split("-", 1)[0], set()).add(promise)
    return out


def bot(name: str, data: dict[str, Any] | None = None) -> Bot:
    return bot_of(name, data if data is not None else read_profile_data(name))


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_every_promise_of_the_bot_has_its_sentence_on_the_page(name: str) -> None:
    """The promises of a bot's page (its own ids and the ALL-* ones of PROMISES.md) are
    exactly the ones the sentence table holds for it, and each one's sentence, filled from the profile,
    is on the Markdown page and marked with its id in the HTML page."""
    ids = page_ids()
    assert set(promise_ids(name)) == ids["ALL"] | ids[PREFIXES[name]]
    md, html = render(bot(name), "md"), render(bot(name), "html")
    marked = {p for _, section in sentences(bot(name)) for s in section for p in s.promise.split()}
    for promise in promise_ids(name):
        for sentence in promise_sentences(bot(name), promise):
            assert sentence.text in md, (promise, sentence.text)
        assert re.search(rf'data-promise="(?:[^"]* )?{promise}(?: [^"]*)?"', html), promise
    assert marked == set(promise_ids(name))


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_no_sentence_template_holds_a_number_of_its_own(name: str) -> None:
    """No sentence template holds a number but those of standards (RFC
    numbers, HTTP statuses, the signature label sig1), and with the sentences and the profile's User-Agents
    and page address taken out, no number is left on the page: every number on it is a profile value."""
    the_bot = bot(name)
    md = render(the_bot)
    for _, section in sentences(the_bot):
        for sentence in section:
            assert set(re.findall(r"\w*\d\w*", sentence.template)) <= STANDARD, sentence.template
            md = md.replace(sentence.text, "")
    for profile in the_bot.deployments.values():
        md = md.replace(profile.user_agent, "").replace(profile.robots_user_agent, "")
    assert re.findall(r"\d", md.replace(the_bot.url, "")) == []


def _numeric_leaves(data: object, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], float]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _numeric_leaves(value, (*path, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _numeric_leaves(value, (*path, i))
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        yield path, float(data)


def _set(data: dict[str, Any], path: tuple[Any, ...], value: float) -> dict[str, Any]:
    changed = copy.deepcopy(data)
    target: Any = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = type(target[path[-1]])(value)
    return changed


# The profile numbers each page states; any other number that changes a page must be one of these.
STATED: dict[str, set[str]] = {
    "ALL": {
        "reread_days",
        "robots.max_age",
        "robots.max_redirects",
        "robots.max_bytes",
        "redirects.max",
        "backoff.max_wait",
        "backoff.retry_after_max",
        "backoff.absent.first",
        "backoff.absent.factor",
        "backoff.absent.max",
        "backoff.absent.jitter",
        "backoff.retries",
        "backoff.retry_after_min",
        "backoff.forbidden.streak",
        "backoff.forbidden.pause",
        "backoff.feed.first",
        "backoff.feed.factor",
        "backoff.feed.max",
        "backoff.temporary_hold",
        "backoff.slow_hold",
        "backoff.gone_memory",
        "deployments.*.pages.default",
        "deployments.*.pages.cap",
        "deployments.*.depth.default",
        "deployments.*.depth.cap",
        "deployments.*.delay.floor",
        "concurrency",
        "crawl_delay_cap",
        "ondemand_min_refetch",
        "ondemand_size_bytes",
        "slow_factor",
        "backoff.retry_delays.*",
    },
}
STATED: dict[str, set[str]] = {
    "synapsebot": {
        "timeout",
        "size_bytes",
        "crawl_delay_cap",
        "concurrency",
        "reread_days",
        "deployments.self-hosted.delay.default",
        "deployments.self-hosted.delay.floor",
        "deployments.self-hosted.depth.default",
        "deployments.self-hosted.depth.cap",
        "deployments.self-hosted.pages.default",
        "deployments.self-hosted.pages.cap",
    },
    "snagabot": {
        "timeout",
        "size_bytes",
        "ondemand_size_bytes",
        "crawl_delay_cap",
        "slow_factor",
        "concurrency",
        "ondemand_min_refetch",
        "robots.max_age",
        "backoff.max_wait",
        "backoff.retry_after_max",
        "deployments.snaga.delay.default",
    },
    "serenereader": {
        "timeout",
        "size_bytes",
        "crawl_delay_cap",
        "backoff.retries",
        "backoff.retry_delays.*",
        "backoff.temporary_hold",
        "backoff.retry_after_max",
        "backoff.slow_hold",
        "backoff.gone_memory",
        "backoff.feed.first",
        "backoff.feed.factor",
        "backoff.feed.max",
        "deployments.serene.delay.default",
    },
    "omniscientebot": {
        "timeout",
        "size_bytes",
        "crawl_delay_cap",
        "concurrency",
        "robots.max_age",
        "robots.max_redirects",
        "robots.max_bytes",
        "backoff.absent.first",
        "backoff.absent.factor",
        "backoff.absent.max",
        "backoff.forbidden.streak",
        "backoff.forbidden.pause",
        "deployments.omnisciente.delay.default",
    },
    "yottabot": {
        "timeout",
        "size_bytes",
        "crawl_delay_cap",
        "robots.max_age",
        "robots.stale_after",
        "redirects.max",
        "backoff.retry_after_min",
        "backoff.retry_after_max",
        "backoff.absent.first",
        "deployments.yotta.delay.default",
    },
}


def _key(path: tuple[Any, ...]) -> str:
    return ".".join("*" if isinstance(p, int) else str(p) for p in path)


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_each_stated_profile_number_changes_the_page_when_changed(name: str) -> None:
    """Every profile number the page states (STATED) changes the Markdown page when it is
    changed in a copy of the profile, and shows up on it in its new value; every other number changes it
    only if it is one a page may state (the union of STATED), so no number sits on a page unlisted."""
    data = read_profile_data(name)
    before = render(bot(name, data))
    stated_anywhere = set().union(*STATED.values()) | {"deployments.*.delay.default"}
    checked = set()
    for path, value in _numeric_leaves(data):
        key = _key(path)
        new = value * 3 + 7 if value else 11.0
        try:
            after = render(bot(name, _set(data, path, new)))
        except (SynapseError, KeyError):
            continue  # the copy is not a valid profile (e.g. a delay below its floor): nothing to render
        generic = re.sub(r"^deployments\.[^.]+\.", "deployments.*.", key)
        if key in STATED[name] or generic in STATED[name]:
            assert after != before, f"{name}: {key} is not on the page"
            checked.add(key)
        elif after != before:
            assert key in stated_anywhere or generic in stated_anywhere, f"{name}: {key} is on the page, unlisted"
    assert checked == STATED[name]  # each stated number was changed once and seen


def test_a_changed_number_in_a_copy_of_a_profile_changes_the_rendered_page(tmp_path: Path) -> None:
    """`synapsecrawl botpage --toml COPY` with SynapseBot's timeout at 45 s and its size cap at
    7 MB states those, not the shipped 1 minute and 5 MB; nothing else on the page changes."""
    text = (ROOT / "synapsecrawl" / "profiles" / "synapsebot.toml").read_text("utf-8")
    copy_path = tmp_path / "synapsebot.toml"
    copy_path.write_text(
        text.replace("timeout = 60.0", "timeout = 45.0").replace("size_bytes = 5_000_000", "size_bytes = 7_000_000")
    )
    shipped = synapsecrawl("botpage", "--profile", "synapsebot")
    changed = synapsecrawl("botpage", "--profile", "synapsebot", "--toml", str(copy_path))
    assert shipped.returncode == changed.returncode == 0, changed.stderr
    assert "gives up after 1 minute" in shipped.stdout and "gives up after 45 seconds" in changed.stdout
    assert "up to 5 MB" in shipped.stdout and "up to 7 MB" in changed.stdout and "5 MB" not in changed.stdout
    differing = [
        (a, b) for a, b in zip(shipped.stdout.splitlines(), changed.stdout.splitlines(), strict=True) if a != b
    ]
    assert len(differing) == 3  # the timeout line, the size line and the "reads ... up to" line


def test_the_html_page_is_self_contained_and_escaped() -> None:
    """The HTML page loads nothing from elsewhere; code spans are <code>; markup in a User-Agent
    or a sentence is escaped."""
    html = render(bot("omniscientebot"), "html")
    assert "<script" not in html and "src=" not in html and "<link" not in html
    assert "<code>From: crawler@omnisciente.dev</code>" in html
    assert "&lt;meta&gt;" in html


def test_a_broken_profile_copy_is_one_line() -> None:
    """Bad input: an unreadable --toml is one line on stderr and exit 1."""
    out = synapsecrawl("botpage", "--profile", "snagabot", "--toml", "/nonexistent/snagabot.toml")
    assert out.returncode == 1 and out.stderr.count("\n") == 1 and "--toml" in out.stderr


BOT_PAGES = ROOT.parent / "shared" / "bot-pages"


def test_omniscientebots_page_says_what_it_keeps_as_its_public_page_does() -> None:
    """OMN-LABELS: the public page keeps pages ("Pages are stored and processed only to run
    Omnisciente's search: to index them, rank them and show links and short excerpts in results") and says
    it is the classification models that "output labels, not text"; the generated page says both, and no
    longer that the bot keeps labels, not text."""
    md = render(bot("omniscientebot"))
    seed = BOT_PAGES / "omniscientebot.txt"
    if seed.is_file():
        text = seed.read_text("utf-8")
        assert "to index them, rank them and show links and short excerpts in results" in text
        assert "These models output labels, not text." in text
    assert "It keeps labels, not text" not in md
    assert (
        "Pages are stored and processed only to run its search: to index them, rank them and show links and short "
        "excerpts in results." in md
    )
    assert "Its classifiers output labels, not text: the kind of each page (" in md


def test_serenereaders_page_promises_no_index() -> None:
    """ALL-NOINDEX, SER-NOCRAWL: SereneReader's public page says "We do not index sites or follow
    links from article pages", and its crawler reads an article page only for og:image; its generated page
    says so rather than promising that noindex keeps a page out of an index it does not have."""
    md = render(bot("serenereader"))
    assert "the index" not in md
    assert "It indexes no pages and follows no links" in md
    for name in ("synapsebot", "snagabot", "omniscientebot", "yottabot"):
        assert "keeps a page out of the index" in render(bot(name))


@pytest.mark.parametrize("name", PROFILE_NAMES)
def test_the_page_reads_crawl_delay_groups_as_the_matcher_does(name: str) -> None:
    """ALL-CD, ALL-RFC9309: under RFC 9309 §2.2.4 `User-agent: OtherBot` / `Crawl-delay: 5` /
    (blank line) / `User-agent: <token>` / `Disallow: /x` is one group, so its Crawl-delay applies to the bot:
    the page says so, promises nowhere that another crawler's Crawl-delay does not apply, and names the
    robots check command; that command, on that file, prints the 5."""
    the_bot = bot(name)
    md = render(the_bot)
    token = the_bot.profile.token
    assert "a blank line does not end a group" in md
    assert f"then `User-agent: {token}` and its rules are one group, and that Crawl-delay applies to {token} too" in md
    assert "does not apply to us" not in md and "another crawler does not apply" not in md
    check = f"synapsecrawl robots check --robots robots.txt --agent {token} --crawl-delay"
    assert f"`{check}`" in md
    robots = f"User-agent: OtherBot\nCrawl-delay: 5\n\nUser-agent: {token}\nDisallow: /x\n"
    out = synapsecrawl("robots", "check", "--robots", "-", "--agent", token, "--crawl-delay", stdin=robots.encode())
    assert out.returncode == 0 and out.stdout == "5\n", out.stderr


def test_yottabots_page_states_how_long_an_unreadable_site_keeps_its_pages() -> None:
    """YOT-STALE: the public page says blocked addresses leave pages "searchable for up to 30
    days"; the generated page states the profile's bound (stale_after) in those terms, and only YottaBot's
    page does (the other profiles keep a page whose robots.txt cannot be read, SYN-REMOVE)."""
    md = render(bot("yottabot"))
    assert (
        "A host whose robots.txt it cannot read (its addresses blocked, no answer, an error) keeps its pages in the "
        "index for at most 30 days after robots.txt was last read; by then they are removed." in md
    )
    assert bot("yottabot").profile.robots.stale_after == 30 * 86400
    assert all(bot(n).profile.robots.stale_after == 0 for n in PROFILE_NAMES if n != "yottabot")
