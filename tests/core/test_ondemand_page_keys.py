"""One page, one key for on-demand asks, and personal data kept out of every stored field."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.crawl.ondemand import page_address
from synapsecrawl.extract.page import Page
from synapsecrawl.kb.indexing import make_item
from synapsecrawl.profiles import load_profile

EMAIL = "jane.doe" + chr(64) + "example.org"


@pytest.mark.parametrize(
    ("asked", "key"),
    [
        ("http://a.test/p.html#one", "http://a.test/p.html"),
        ("http://a.test/p.html#", "http://a.test/p.html"),
        ("HTTP://A.Test:8080/P.html?Q=1#x", "http://a.test:8080/P.html?Q=1"),
        ("https://a.test", "https://a.test/"),
        ("http://User:Pw@A.TEST/x", "http://User:Pw@a.test/x"),
        ("http://a.test/café/a b.html?q=ü", "http://a.test/caf%C3%A9/a%20b.html?q=%C3%BC"),
        ("http://a.test/x?b=2&a=1", "http://a.test/x?b=2&a=1"),
    ],
)
def test_page_address_names_the_page_a_request_fetches(asked: str, key: str) -> None:
    """SNA-ONDEMAND: addresses differing only in the fragment (never sent) or the case of scheme and host
    are one page, so asked within 15 minutes it is fetched once; path and query stay as asked."""
    assert page_address(asked) == key


@given(st.sampled_from(["http://a.test", "https://B.test:81"]), st.text(max_size=30), st.text(max_size=10))
def test_page_address_is_idempotent(origin: str, path: str, fragment: str) -> None:
    """SNA-ONDEMAND: a key is its own key, and never carries a fragment."""
    key = page_address(f"{origin}/{path}#{fragment}")
    assert page_address(key) == key and "#" not in key


def test_snagabot_stores_title_and_description_scrubbed() -> None:
    """SNA-PRIVACY: "Stored text has e-mail addresses and phone numbers removed": the title and the
    description a result shows are scrubbed like the text; other profiles keep them as written."""
    page = Page(
        url="http://a.test/",
        content_type="text/html",
        title=f"Contact {EMAIL}",
        text="Bicycles repaired.",
        description=f"Call +1 415 555 0132 or {EMAIL}.",
        scrubbed=True,
    )
    item = make_item(page, kb="k", profile=load_profile("snagabot"), site="a.test", status=200)
    assert (item["title"], item["description"]) == ("Contact [email]", "Call [phone] or [email].")
    kept = make_item(page, kb="k", profile=load_profile("synapsebot"), site="a.test", status=200)
    assert (kept["title"], kept["description"]) == (page.title, page.description)
