"""The one rule for numbers an operator or KB user types: finite, not negative unless signed."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from synapsecrawl.errors import ConfigError
from synapsecrawl.numbers import INTEGER_SETTINGS, check_numbers, read_flag, read_number
from tests.helpers import ROOT


@pytest.mark.parametrize(("raw", "options", "message"), [
    ("abc", {}, "X 'abc' is not a number"),
    ("nan", {}, "X 'nan' must be a number >= 0"),
    ("inf", {}, "X 'inf' must be a number >= 0"),
    ("-inf", {"signed": True}, "X '-inf' must be a finite number"),
    ("-5", {"positive": True}, "X '-5' must be a number above 0"),
    ("0", {"positive": True}, "X '0' must be a number above 0"),
    ("nan", {"positive": True}, "X 'nan' must be a number above 0"),
    ("1.5", {"whole": True}, "X '1.5' must be a whole number >= 0"),
    (-1, {}, "X -1 must be a number >= 0"),
])  # fmt: skip
def test_a_bad_number_says_what_it_must_be(raw: object, options: dict[str, bool], message: str) -> None:
    """The message says what is wrong with the value (not a number, not finite, negative,
    not above 0, not whole), in one line naming the setting."""
    with pytest.raises(ConfigError) as caught:
        read_number("X", raw, **options)
    assert str(caught.value) == message


@pytest.mark.parametrize(("raw", "options", "value"), [
    ("0", {}, 0.0), (" 2.5 ", {}, 2.5), (3, {"whole": True}, 3.0), ("-1", {"signed": True}, -1.0),
    ("0.1", {"positive": True}, 0.1),
])  # fmt: skip
def test_a_good_number_is_read(raw: object, options: dict[str, bool], value: float) -> None:
    """What is right is read as it was typed."""
    assert read_number("X", raw, **options) == value


def test_only_numeric_settings_are_checked_and_priorities_may_be_negative() -> None:
    """A setting whose default is a number must be a finite number >= 0, except a priority;
    True/False, text and unknown settings are left to their own checks."""
    defaults = {
        "CONCURRENT_REQUESTS": 16,
        "DOWNLOAD_DELAY": 0.0,
        "DEPTH_PRIORITY": 0,
        "RETRY_PRIORITY_ADJUST": -1,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "DEBUG",
    }
    check_numbers(
        {
            "CONCURRENT_REQUESTS": "8",
            "DEPTH_PRIORITY": "-1",
            "RETRY_PRIORITY_ADJUST": "-3",
            "ROBOTSTXT_OBEY": "yes",
            "LOG_LEVEL": "LOUD",
            "UNKNOWN": "-1",
        },
        defaults,
    )
    for name, value in (("CONCURRENT_REQUESTS", "-1"), ("DOWNLOAD_DELAY", "nan"), ("DEPTH_PRIORITY", "inf")):
        with pytest.raises(ConfigError, match=f"^{name} '{value}' must be"):
            check_numbers({name: value}, defaults)


@given(st.one_of(st.text(max_size=20), st.floats(), st.integers()))
def test_read_number_returns_a_finite_number_or_raises_config_error(raw: object) -> None:
    """Whatever is typed, the answer is a finite number >= 0 or one ConfigError line."""
    try:
        value = read_number("X", raw)
    except ConfigError as error:
        assert "\n" not in str(error)
    else:
        assert 0 <= value < float("inf")


@pytest.mark.parametrize("raw", ["1.5", "2.0", "1e3", 1.5])
def test_a_setting_scrapy_reads_as_an_integer_is_refused_unless_written_as_one(raw: object) -> None:
    """CONTRACT (one-line error): ``-s CONCURRENT_REQUESTS=1.5`` was a ValueError traceback inside Scrapy's
    getint, which reads int(value); it is one line naming the setting, as every other bad number."""
    with pytest.raises(ConfigError, match=r"^CONCURRENT_REQUESTS .* must be a whole number, written without"):
        check_numbers({"CONCURRENT_REQUESTS": raw}, {"CONCURRENT_REQUESTS": 16})


def test_integer_settings_are_read_as_given_and_float_settings_keep_their_fractions() -> None:
    """``-s CONCURRENT_REQUESTS=8``, ``-s DEPTH_PRIORITY=-1`` and a value set from code as 5.0 pass;
    DOWNLOAD_TIMEOUT (an integer default Scrapy reads as a float) keeps 7.5."""
    check_numbers(
        {"CONCURRENT_REQUESTS": "8", "DEPTH_PRIORITY": "-1", "DEPTH_LIMIT": 5.0, "DOWNLOAD_TIMEOUT": "7.5"},
        {"CONCURRENT_REQUESTS": 16, "DEPTH_PRIORITY": 0, "DEPTH_LIMIT": 0, "DOWNLOAD_TIMEOUT": 180},
    )


def test_every_setting_read_with_getint_is_known_as_an_integer_setting() -> None:
    """INTEGER_SETTINGS is the list of getint("NAME") calls in Scrapy's source and ours: a Scrapy upgrade that
    reads a new setting as an integer fails here, not as a traceback in an operator's crawl."""
    import re

    import scrapy

    roots = [
        Path(scrapy.__file__).parent,
        *(ROOT / name for name in ("synapsecrawl", "middlewares", "spiders", "pipelines")),
    ]
    read = {
        match.group(1)
        for root in roots
        for path in root.rglob("*.py")
        for match in re.finditer(r"getint\(\s*[\"']([A-Z_]+)[\"']", path.read_text())
    }
    assert "CONCURRENT_REQUESTS" in read  # the scan does find them
    assert sorted(read - INTEGER_SETTINGS) == []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(True, True), (None, False), (0, False), ("1", True), ("0", False), ("True", True), ("false", False)],
)
def test_a_flag_reads_as_scrapys_getbool_reads_it(raw: object, expected: bool) -> None:
    """A boolean setting is read as Scrapy's getbool reads it (a setting Scrapy may read too must not mean
    something else to it); a word Scrapy would refuse is one line naming the setting."""
    assert read_flag("X", raw) is expected
    with pytest.raises(ConfigError, match=r"^X 'yes' is neither True nor False$"):
        read_flag("X", "yes")


@pytest.mark.parametrize(
    ("raw", "expected"), [("yes", True), ("ON", True), (" no ", False), ("off", False), ("", False)]
)
def test_a_flag_only_we_read_may_be_a_word(raw: str, expected: bool) -> None:
    """A flag only synapsecrawl reads (JS_RENDERING, a worker's -a stay) also takes yes/no/on/off, in any
    case; anything else is one line."""
    assert read_flag("stay", raw, words=True) is expected
    with pytest.raises(ConfigError, match=r"^stay 'maybe' is neither True nor False$"):
        read_flag("stay", "maybe", words=True)
