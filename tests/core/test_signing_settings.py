"""Web Bot Auth settings: the Signature-Agent forms, and signing settings refused before a crawl."""

from __future__ import annotations

from pathlib import Path

import pytest

from synapsecrawl.crawl.config import check_config
from synapsecrawl.errors import ConfigError, SigningError
from synapsecrawl.signing import generate_private_key_pem, signature_agent_url

DIRECTORY_URL = "https://omnisciente.dev/.well-known/http-message-signatures-directory"


@pytest.mark.parametrize(
    ("agent", "form", "sent"),
    [
        ("https://omnisciente.dev", "origin", "https://omnisciente.dev"),
        ("https://omnisciente.dev", "directory", DIRECTORY_URL),
        ("https://omnisciente.dev/", "directory", DIRECTORY_URL),
        (
            "https://omnisciente.dev:8443",
            "directory",
            "https://omnisciente.dev:8443/.well-known/http-message-signatures-directory",
        ),
        ("https://keys.example/bot/jwks.json", "directory", "https://keys.example/bot/jwks.json"),
        ("https://keys.example/bot/jwks.json", "origin", "https://keys.example/bot/jwks.json"),
    ],
)
def test_signature_agent_forms(agent: str, form: str, sent: str) -> None:
    """OMN-SIGN: the origin form (-00 drafts, as OmniscienteBot's page shows) sends the origin; the
    directory form (httpsig-protocol-01) sends the key set URL; a URL with a path is sent as given."""
    assert signature_agent_url(agent, form) == sent


@pytest.mark.parametrize(
    ("agent", "form", "message"),
    [
        ("http://omnisciente.dev", "origin", "must be an https URL"),
        ("omnisciente.dev", "origin", "must be an https URL"),
        ("https://omnisciente.dev", "jwks", "form must be one of origin, directory"),
    ],
)
def test_signature_agent_refusals(agent: str, form: str, message: str) -> None:
    """OMN-SIGN: Signature-Agent is https only (draft-ietf-webbotauth-httpsig-protocol), in a known form."""
    with pytest.raises(SigningError, match=message):
        signature_agent_url(agent, form)


@pytest.fixture
def key_file(tmp_path: Path) -> Path:
    path = tmp_path / "key.pem"
    path.write_bytes(generate_private_key_pem())
    return path


def test_signing_profiles_need_a_key() -> None:
    """SER-SIGN, OMN-SIGN: a signing profile without SIGNING_KEY is refused in one line saying how to make one."""
    for profile in ("serenereader", "omniscientebot"):
        with pytest.raises(ConfigError, match=f"^{profile} signs every request .*synapsecrawl keys generate"):
            check_config({"BOT_PROFILE": profile}, {})
    assert check_config({"BOT_PROFILE": "synapsebot"}, {}).signing_key == ""


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"SIGNING_KEY": "{public}"}, "SIGNING_KEY: signing key .*holds no private key"),
        ({"SIGNING_KEY": "{garbage}"}, "SIGNING_KEY: signing key .*not a PEM file"),
        ({"SIGNATURE_AGENT": "http://omnisciente.dev"}, "SIGNATURE_AGENT 'http://omnisciente.dev' is not an https URL"),
        ({"SIGNATURE_AGENT_FORM": "jwks"}, "SIGNATURE_AGENT_FORM 'jwks' is neither 'origin' nor 'directory'"),
        ({"SIGNING_EXPIRES": "soon"}, "SIGNING_EXPIRES 'soon' is not a whole number of seconds"),
        ({"SIGNING_EXPIRES": "0"}, "SIGNING_EXPIRES 0 is outside 1 to 3600 s"),
        ({"SIGNING_EXPIRES": 86400}, "SIGNING_EXPIRES 86400 is outside 1 to 3600 s"),
        ({"BOT_PROFILE": "synapsebot"}, "SIGNATURE_AGENT must be set for synapsebot to sign"),
    ],
)
def test_unusable_signing_settings_are_refused_in_one_line(
    key_file: Path, tmp_path: Path, settings: dict[str, object], message: str
) -> None:
    """SER-SIGN, OMN-SIGN: a key that is not an Ed25519 private key, a Signature-Agent that is not
    https, an unknown form, a validity window outside 1 s to an hour, or a non-signing profile
    given a key but no Signature-Agent: refused before the crawl, in one line naming the setting."""
    (tmp_path / "public.pem").write_text("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")
    (tmp_path / "garbage.pem").write_text("hello\n")
    operator: dict[str, object] = {"BOT_PROFILE": "omniscientebot", "SIGNING_KEY": str(key_file), **settings}
    if str(operator["SIGNING_KEY"]).startswith("{"):
        operator["SIGNING_KEY"] = str(tmp_path / f"{str(operator['SIGNING_KEY']).strip('{}')}.pem")
    with pytest.raises(ConfigError, match=message) as raised:
        check_config(operator, {})
    assert "\n" not in str(raised.value)


def test_usable_signing_settings_pass(key_file: Path) -> None:
    """SER-SIGN: a key with the profile's agent, or an operator's agent in either form, passes."""
    for extra in (
        {},
        {"SIGNATURE_AGENT": "https://bots.example", "SIGNATURE_AGENT_FORM": "directory", "SIGNING_EXPIRES": "3600"},
    ):
        config = check_config({"BOT_PROFILE": "serenereader", "SIGNING_KEY": str(key_file), **extra}, {})
        assert config.signing_key == str(key_file)
