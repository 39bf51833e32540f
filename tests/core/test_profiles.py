"""Profiles as data: every number a bot page states, and the rules for raising and lowering them."""

from __future__ import annotations

import pytest

from synapsecrawl.crawl.config import check_config
from synapsecrawl.errors import ConfigError, ProfileError
from synapsecrawl.profiles import PROFILE_NAMES, load_profile, resolve_limits


@pytest.mark.parametrize(
    ("name", "token", "user_agent"),
    [
        ("synapsebot", "SynapseBot", "Mozilla/5.0 (compatible; SynapseBot/1.0; +https://synapseorch.com/bot/)"),
        ("snagabot", "SnagaBot", "Mozilla/5.0 (compatible; SnagaBot/0.1.0; +https://snaga.ai/bot)"),
        ("serenereader", "SereneReader", "SereneReader/1.0 (+https://serenereader.com/bot)"),
        (
            "omniscientebot",
            "OmniscienteBot",
            "OmniscienteBot/0.1 (+https://omnisciente.dev/bot; crawler@omnisciente.dev)",
        ),
        (
            "yottabot",
            "YottaBot-SearchBot",
            "Mozilla/5.0 (compatible; YottaBot-SearchBot/1.0; +https://yotta.bot/searchbot)",
        ),
    ],
)
def test_identity_is_exactly_the_published_one(name: str, token: str, user_agent: str) -> None:
    """SYN-UA, SNA-UA, SER-UA, OMN-UA, YOT-UA: the exact User-Agent and product token."""
    profile = load_profile(name)
    assert profile.user_agent == user_agent
    assert profile.token == token


def test_yotta_variants_and_alias() -> None:
    """YOT-UA, YOT-TOKEN: robots.txt requests add `robots.txt;`, a customer installation adds
    `customer;`, and the earlier name YottaSearch is an alias."""
    yotta = load_profile("yottabot")
    assert (
        yotta.robots_user_agent
        == "Mozilla/5.0 (compatible; YottaBot-SearchBot/1.0; robots.txt; +https://yotta.bot/searchbot)"
    )
    assert yotta.tokens == ("YottaBot-SearchBot", "YottaSearch")
    customer = load_profile("yottabot", "customer")
    assert (
        customer.user_agent
        == "Mozilla/5.0 (compatible; YottaBot-SearchBot/1.0; customer; +https://yotta.bot/searchbot)"
    )
    assert "customer; robots.txt;" in customer.robots_user_agent


@pytest.mark.parametrize(
    ("name", "spacing", "concurrency", "cd_cap", "timeout", "size", "site"),
    [
        ("synapsebot", 1.0, 1, 30.0, 60.0, 5_000_000, "host"),            # SYN-RATE, SYN-CD, SYN-TIMEOUT, SYN-DOCS
        ("snagabot", 1.0, 1, 3600.0, 30.0, 2_000_000, "host"),            # SNA-RATE, SNA-SIZE
        ("serenereader", 1.0, 1, 60.0, 30.0, 1_000_000, "host"),          # SER-ROBOTS-FEEDS, SER-OGIMAGE
        ("omniscientebot", 5.0, 2, 86400.0, 15.0, 32_000_000, "registrable_domain"),  # OMN-SITE, OMN-CAPS
        ("yottabot", 1.0, 1, 30.0, 30.0, 10_000_000, "host"),             # YOT-RATE
    ],
)  # fmt: skip
def test_pacing_and_caps_as_published(
    name: str, spacing: float, concurrency: int, cd_cap: float, timeout: float, size: int, site: str
) -> None:
    """Per-site spacing and concurrency, Crawl-delay cap, timeout, size cap and what a site is."""
    profile = load_profile(name)
    assert (profile.delay.default, profile.concurrency, profile.crawl_delay_cap) == (spacing, concurrency, cd_cap)
    assert (profile.timeout, profile.size_bytes, profile.site) == (timeout, size, site)


@pytest.mark.parametrize(
    ("name", "on_404", "on_403", "on_5xx", "on_none"),
    [
        ("synapsebot", "allow", "allow", "disallow", "disallow"),  # SYN-ROBOTS-4XX, SYN-ROBOTS-5XX
        ("snagabot", "allow", "allow", "disallow", "disallow"),  # SNA-ROBOTS
        ("serenereader", "allow", "allow", "allow", "allow"),  # SER-ROBOTS-5XX
        ("omniscientebot", "allow", "allow", "disallow", "disallow"),  # OMN-ROBOTS
        ("yottabot", "allow", "disallow", "disallow", "disallow"),  # YOT-ROBOTS
    ],
)
def test_robots_outcomes_per_profile(name: str, on_404: str, on_403: str, on_5xx: str, on_none: str) -> None:
    """Each page's robots.txt failure semantics, as data."""
    robots = load_profile(name).robots
    assert (robots.on_404_410, robots.on_4xx, robots.on_5xx, robots.on_unreachable) == (on_404, on_403, on_5xx, on_none)
    assert robots.max_redirects == 5 and robots.max_bytes >= 500 * 1024  # ALL-RFC9309


def test_robots_cache_rules() -> None:
    """SYN-ROBOTS-ONCE: once per crawl; SNA-ROBOTS, OMN-ROBOTS, YOT-ROBOTS: at most a day."""
    assert load_profile("synapsebot").robots.once_per_crawl
    for name in ("snagabot", "omniscientebot", "yottabot", "serenereader"):
        robots = load_profile(name).robots
        assert not robots.once_per_crawl and robots.max_age == 86400


def test_only_signing_profiles_sign() -> None:
    """SER-SIGN, OMN-SIGN: SereneReader and OmniscienteBot sign; the others do not by default."""
    assert {n for n in PROFILE_NAMES if load_profile(n).signs} == {"serenereader", "omniscientebot"}
    assert load_profile("omniscientebot").signature_agent == "https://omnisciente.dev"


def test_content_types() -> None:
    """SNA-HTML, OMN-FETCH: HTML only; YOT-HTTPS: HTML or plain text over HTTPS; SYN-DOCS: PDFs too."""
    assert load_profile("snagabot").accepts_type("text/html; charset=utf-8")
    assert not load_profile("snagabot").accepts_type("application/pdf")
    assert not load_profile("omniscientebot").accepts_type("text/plain")
    assert load_profile("yottabot").accepts_type("text/plain") and load_profile("yottabot").schemes == {"https"}
    assert load_profile("synapsebot").accepts_type("application/pdf")


def test_limits_defaults_and_deployments() -> None:
    """SYN-LIMITS: 3 deep and 500 pages by default; self-hosted may raise to 5 deep and 0.1 s;
    SynapseOrch Cloud's caps equal its defaults."""
    self_hosted, cloud = load_profile("synapsebot"), load_profile("synapsebot", "cloud")
    assert resolve_limits(self_hosted, {}, {}) == resolve_limits(cloud, {}, {})
    limits = resolve_limits(self_hosted, {"DEPTH_LIMIT": "5", "DOWNLOAD_DELAY": "0.1"}, {})
    assert (limits.depth, limits.delay, limits.pages) == (5, 0.1, 500)
    with pytest.raises(ConfigError, match="DEPTH_LIMIT 4 is beyond synapsebot \\(cloud\\)'s cap 3"):
        resolve_limits(cloud, {"DEPTH_LIMIT": 4}, {})


@pytest.mark.parametrize(
    ("settings", "arguments", "expected"),
    [
        ({}, {"depth": "2"}, (2, 500)),
        ({}, {"max_pages": "10"}, (3, 10)),
        ({"DEPTH_LIMIT": "5"}, {"depth": "4"}, (4, 500)),
        ({"CLOSESPIDER_PAGECOUNT": "100"}, {"max_pages": "50"}, (3, 50)),
    ],
)
def test_arguments_only_lower(settings: dict[str, str], arguments: dict[str, str], expected: tuple[int, int]) -> None:
    """SYN-LIMITS (CONTRACT): spider arguments may lower a limit."""
    limits = resolve_limits(load_profile("synapsebot"), settings, arguments)
    assert (limits.depth, limits.pages) == expected


@pytest.mark.parametrize(
    ("settings", "arguments", "message"),
    [
        ({}, {"depth": "4"}, "-a depth=4 cannot raise the depth limit 3"),
        ({"DEPTH_LIMIT": "4"}, {"depth": "5"}, "-a depth=5 cannot raise the depth limit 4"),
        ({}, {"max_pages": "600"}, "-a max_pages=600 must be between 1 and the page limit 500"),
        ({}, {"depth": "two"}, "depth 'two' is not a number"),
        ({}, {"depth": "1.5"}, "depth '1.5' must be a whole number >= 0"),
        ({"DOWNLOAD_DELAY": "nan"}, {}, "DOWNLOAD_DELAY 'nan' must be a number >= 0"),
        ({"DOWNLOAD_DELAY": "-1"}, {}, "DOWNLOAD_DELAY '-1' must be a number >= 0"),
        ({"DEPTH_LIMIT": "0"}, {}, "DEPTH_LIMIT 0 is beyond synapsebot (self-hosted)'s cap 5"),
    ],
)
def test_bad_values_are_one_line_errors(settings: dict[str, str], arguments: dict[str, str], message: str) -> None:
    """CONTRACT: a value beyond a cap, or no value at all, is one line naming the setting."""
    with pytest.raises(ConfigError) as error:
        resolve_limits(load_profile("synapsebot"), settings, arguments)
    assert str(error.value) == message
    assert "\n" not in str(error.value)


def test_unknown_profile_and_deployment() -> None:
    """BOT_PROFILE and BOT_DEPLOYMENT name what exists, or say what does."""
    with pytest.raises(ProfileError, match="BOT_PROFILE 'googlebot' is not one of"):
        load_profile("googlebot")
    with pytest.raises(ConfigError, match="BOT_DEPLOYMENT 'moon' is not one of synapsebot's: cloud, self-hosted"):
        load_profile("synapsebot", "moon")


def test_config_checks_identity_and_signing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """ALL-UA: an operator USER_AGENT must keep the product token; SER-SIGN/OMN-SIGN: a signing
    profile without a key refuses to start; a key path must exist."""
    with pytest.raises(ConfigError, match="USER_AGENT must name synapsebot's product token SynapseBot"):
        check_config({"USER_AGENT": "curl/8"}, {})
    assert check_config({"USER_AGENT": "SynapseBot/1.0 (+ops)"}, {}).profile.name == "synapsebot"
    with pytest.raises(ConfigError, match="serenereader signs every request"):
        check_config({"BOT_PROFILE": "serenereader"}, {})
    with pytest.raises(ConfigError, match=r"SIGNING_KEY .* is not a readable file"):
        check_config({"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(tmp_path / "none.pem")}, {})
    with pytest.raises(ConfigError, match="DOWNLOAD_TIMEOUT 16 is beyond omniscientebot's cap 15 s"):
        key = tmp_path / "k.pem"
        key.write_text("x")
        check_config({"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(key), "DOWNLOAD_TIMEOUT": "16"}, {})
