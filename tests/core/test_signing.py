"""Web Bot Auth core: RFC 9421 vectors, round trips, a cross-check with http-message-signatures,
and every way a signature or a key is refused."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import http_sf
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from http_message_signatures import HTTPMessageVerifier, InvalidSignature, MappingKeyResolver, algorithms
from hypothesis import given, settings
from hypothesis import strategies as st

from synapsecrawl import signing
from synapsecrawl.errors import SigningError
from synapsecrawl.signing import (
    DIRECTORY_MEDIA_TYPE,
    DIRECTORY_PATH,
    SigningKey,
    VerifyResult,
    generate_private_key_pem,
    jwk_thumbprint,
    key_directory,
    load_private_key,
    public_jwk,
    sign,
    sign_directory_response,
    sign_request,
    signature_agent_header,
    verify_request,
)

# RFC 9421 Appendix B.1.4, test-key-ed25519
RFC9421_KEY_PEM = (
    b"-----BEGIN PRIVATE KEY-----\n"
    b"MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n"
    b"-----END PRIVATE KEY-----\n"
)
# its thumbprint, as the webbotauth drafts print it in their examples
RFC9421_KEYID = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"
AGENT = "https://omnisciente.dev"
URL = "https://example.com/docs/page?q=1"
CREATED = 1_700_000_000


@pytest.fixture(scope="module")
def key() -> SigningKey:
    return load_private_key(RFC9421_KEY_PEM)


@pytest.fixture(scope="module")
def other_key() -> SigningKey:
    return load_private_key(generate_private_key_pem())


def signed(key: SigningKey, **overrides: Any) -> dict[str, str]:
    options: dict[str, Any] = {"method": "GET", "url": URL, "signature_agent": AGENT, "created": CREATED}
    return sign_request(key, **{**options, **overrides})


def verify(headers: dict[str, str], key: SigningKey, **overrides: Any) -> VerifyResult:
    options: dict[str, Any] = {"method": "GET", "url": URL, "directory": key_directory([key]), "now": CREATED}
    return verify_request(headers=headers, **{**options, **overrides})


def hand_signed(key: SigningKey, covered: list[tuple[Any, str]], **headers: str) -> dict[str, str]:
    """Headers for a web-bot-auth signature over any `covered` components (to build bad requests)."""
    params = sign._params(key, CREATED, 300, None, "web-bot-auth")
    signature_input, signature = sign._signature_fields(key, covered, params)
    return {
        **headers,
        "Signature-Input": http_sf.ser({"sig1": signature_input}),
        "Signature": http_sf.ser({"sig1": signature}),
    }


# --- published vectors ---------------------------------------------------------------------------


def test_rfc9421_b26_ed25519_signature_byte_for_byte(key: SigningKey) -> None:
    """SER-SIGN, OMN-SIGN: RFC 9421 Appendix B.2.6 (Signing a Request Using ed25519) is
    reproduced exactly: the signature base, Signature-Input and Signature."""
    covered: list[Any] = [
        (("date", {}), "Tue, 20 Apr 2021 02:07:55 GMT"),
        (("@method", {}), "POST"),
        (("@path", {}), "/foo"),
        (("@authority", {}), "example.com"),
        (("content-type", {}), "application/json"),
        (("content-length", {}), "18"),
    ]
    params: dict[str, Any] = {"created": 1618884473, "keyid": "test-key-ed25519"}
    assert sign._signature_base(covered, params) == (
        b'"date": Tue, 20 Apr 2021 02:07:55 GMT\n'
        b'"@method": POST\n'
        b'"@path": /foo\n'
        b'"@authority": example.com\n'
        b'"content-type": application/json\n'
        b'"content-length": 18\n'
        b'"@signature-params": ("date" "@method" "@path" "@authority" "content-type" "content-length")'
        b';created=1618884473;keyid="test-key-ed25519"'
    )
    signature_input, signature = sign._signature_fields(key, covered, params)
    assert http_sf.ser({"sig-b26": signature_input}) == (
        'sig-b26=("date" "@method" "@path" "@authority" "content-type" "content-length")'
        ';created=1618884473;keyid="test-key-ed25519"'
    )
    assert http_sf.ser({"sig-b26": signature}) == (
        "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:"
    )


def test_rfc9421_test_key_has_the_drafts_keyid(key: SigningKey) -> None:
    """SER-SIGN: the keyid is the RFC 7638 thumbprint; for the RFC 9421 test key it is the one
    the webbotauth drafts print."""
    assert key.keyid == RFC9421_KEYID
    assert key.public_jwk() == {
        "kty": "OKP",
        "crv": "Ed25519",
        "x": "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs",
        "kid": RFC9421_KEYID,
    }


def test_rfc8037_a3_ed25519_thumbprint() -> None:
    """SER-SIGN: RFC 8037 Appendix A.3: the Ed25519 JWK thumbprint, from the JWK and from the
    A.1 private key."""
    jwk = {"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}
    assert jwk_thumbprint(jwk) == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
    d = base64.urlsafe_b64decode("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=")
    assert SigningKey(Ed25519PrivateKey.from_private_bytes(d)).keyid == jwk_thumbprint(jwk)


def test_rfc7638_31_rsa_thumbprint_ignores_optional_members() -> None:
    """SER-SIGN: RFC 7638 §3.1: only the required members enter the thumbprint."""
    jwk = {
        "kty": "RSA",
        "n": (
            "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJE"
            "CPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2Q"
            "vzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6"
            "WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw"
        ),
        "e": "AQAB",
        "alg": "RS256",
        "kid": "2011-04-29",
    }
    assert jwk_thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"


@pytest.mark.parametrize(
    ("jwk", "message"),
    [
        ({"kty": "oct", "k": "AA"}, "kty 'oct'"),
        ({"kty": "OKP", "crv": "Ed25519"}, "member 'x'"),
        ({}, "kty None"),
    ],
)
def test_thumbprint_of_an_unusable_jwk_is_refused(jwk: dict[str, str], message: str) -> None:
    """SER-SIGN: a JWK of unknown type or lacking a required member has no thumbprint."""
    with pytest.raises(SigningError, match=message):
        jwk_thumbprint(jwk)


def test_draft_vector_with_dictionary_signature_agent_verifies(key: SigningKey) -> None:
    """SER-SIGN, OMN-SIGN: the httpsig-protocol draft's example with a Signature-Agent dictionary
    (member `agent2`, label `sig2`) verifies: a key other than the label is followed."""
    headers = {
        "Signature-Agent": 'agent2="https://signature-agent.test"',
        "Signature-Input": 'sig2=("@authority" "signature-agent";key="agent2");created=1735689600'
        f';keyid="{RFC9421_KEYID}";alg="ed25519";expires=4889289600'
        ';nonce="n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA=="'
        ';tag="web-bot-auth"',
        "Signature": "sig2=:RdNFx5Bj6au3YgAMQL/RzmUlZE8QZLIaXGRpw985hWnwPfMxT228NMk6ehRS1PSl4e8PhbNZACSanGdhEwYCCg==:",
    }
    result = verify(headers, key, url="https://example.com/", now=1735689600)
    assert result == VerifyResult(True, "verified", RFC9421_KEYID)


def test_draft_vector_directory_response_signature(key: SigningKey) -> None:
    """SER-SIGN: the draft's signed directory response is reproduced: `"@authority";req` and
    `content-digest`, tag "http-message-signatures-directory", parameters in the draft's order."""
    covered: list[Any] = [
        (("@authority", {"req": True}), "signature-agent.test"),
        (("content-digest", {}), "sha-256=:CADMT2aBdV/rqQr/NIru64ERQkCobVvllA4V0fLFDu0=:"),
    ]
    lifetime = 4889289600 - 1735689600
    params = sign._params(key, 1735689600, lifetime, None, "http-message-signatures-directory")
    base = sign._signature_base(covered, params)
    assert base.endswith(
        b'"@signature-params": ("@authority";req "content-digest");created=1735689600'
        b';keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=4889289600'
        b';tag="http-message-signatures-directory"'
    )
    assert base64.b64encode(key.sign(base)).decode() == (
        "yiHq0TXrbpzbmlttAQMpYoAufitFJUWuNsakB7QQMoN0EHbo5o51bZRVR8az/ptTWCwllix9clrKXfGKwdPzBg=="
    )


# --- signing --------------------------------------------------------------------------------------


def test_sign_request_headers(key: SigningKey) -> None:
    """SER-SIGN, OMN-SIGN: a request carries Signature-Agent `sig1="https://omnisciente.dev"` and a
    web-bot-auth signature over @authority, the agent member, @method and @path, valid 300 s;
    the Signature is Ed25519 over exactly this base."""
    headers = signed(key)
    assert headers["Signature-Agent"] == 'sig1="https://omnisciente.dev"'
    assert headers["Signature-Input"] == (
        'sig1=("@authority" "signature-agent";key="sig1" "@method" "@path");created=1700000000'
        f';keyid="{RFC9421_KEYID}";alg="ed25519";expires=1700000300;tag="web-bot-auth"'
    )
    base = (
        '"@authority": example.com\n'
        '"signature-agent";key="sig1": "https://omnisciente.dev"\n'
        '"@method": GET\n'
        '"@path": /docs/page\n'
        f'"@signature-params": {headers["Signature-Input"].removeprefix("sig1=")}'
    )
    signature = base64.b64decode(headers["Signature"].removeprefix("sig1=:").removesuffix(":"))
    key.private_key.public_key().verify(signature, base.encode())


def test_sign_request_with_nonce_label_and_window(key: SigningKey) -> None:
    """SER-SIGN: the label, the validity window and an optional nonce are the caller's."""
    nonce = base64.b64encode(bytes(range(64))).decode()
    headers = signed(key, label="bot", expires_in=60, nonce=nonce)
    assert headers["Signature-Agent"] == 'bot="https://omnisciente.dev"'
    assert '"signature-agent";key="bot"' in headers["Signature-Input"]
    assert f';expires=1700000060;nonce="{nonce}";tag="web-bot-auth"' in headers["Signature-Input"]
    assert verify(headers, key, now=CREATED + 60).ok
    assert verify(headers, key, now=CREATED + 61).reason == "expired"


def test_signatures_are_deterministic(key: SigningKey) -> None:
    """SER-SIGN: Ed25519 is deterministic: the same request at the same time signs the same."""
    assert signed(key) == signed(key)
    assert signed(key)["Signature"] != signed(key, created=CREATED + 1)["Signature"]


@pytest.mark.parametrize(
    "agent", ["http://omnisciente.dev", "omnisciente.dev", "ftp://omnisciente.dev", "https://", "https:///x"]
)
def test_non_https_signature_agent_is_refused(key: SigningKey, agent: str) -> None:
    """SER-SIGN, OMN-SIGN: the Signature-Agent must be an https URL."""
    with pytest.raises(SigningError, match="https URL"):
        signature_agent_header(agent)
    with pytest.raises(SigningError, match="https URL"):
        signed(key, signature_agent=agent)


def test_signature_agent_may_be_the_directory_url_itself() -> None:
    """SER-SIGN: the agent value is carried as given: an origin (-00 drafts) or the key-set URL (-01)."""
    assert signature_agent_header(f"{AGENT}{DIRECTORY_PATH}", "sig2") == (
        'sig2="https://omnisciente.dev/.well-known/http-message-signatures-directory"'
    )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"url": "ftp://example.com/"}, "not an http"),
        ({"url": "https://example.com/café"}, "cannot sign"),
        ({"expires_in": 0}, "valid for some seconds"),
        ({"label": "Sig1"}, "as 'Sig1'"),
    ],
)
def test_unsignable_requests_raise_one_line(key: SigningKey, overrides: dict[str, Any], message: str) -> None:
    """SER-SIGN: what cannot be signed raises SigningError in one line, never sends a bad signature."""
    with pytest.raises(SigningError, match=message) as raised:
        signed(key, **overrides)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("url", "authority", "path"),
    [
        ("https://Example.COM", "example.com", "/"),
        ("https://example.com:443/a/b?x=1", "example.com", "/a/b"),
        ("http://example.com:80/%7Efoo", "example.com", "/%7Efoo"),
        ("http://example.com:443/", "example.com:443", "/"),
        ("https://example.com:8443/", "example.com:8443", "/"),
        ("https://[2001:DB8::1]:8443/", "[2001:db8::1]:8443", "/"),
        ("https://user:pw@example.com/", "example.com", "/"),
        ("https://bücher.example/", "xn--bcher-kva.example", "/"),
    ],
)
def test_authority_and_path_components(url: str, authority: str, path: str) -> None:
    """SER-SIGN: @authority is host[:port] lowercased without the default port (RFC 9421 §2.2.3);
    @path is the absolute path, "/" when empty, without the query (§2.2.6)."""
    assert sign._derived("@authority", "GET", url) == authority
    assert sign._derived("@path", "GET", url) == path


# --- verifying ------------------------------------------------------------------------------------


def test_round_trip_verifies(key: SigningKey) -> None:
    """SER-SIGN, OMN-SIGN: what we sign, we verify, naming the key."""
    assert verify(signed(key), key) == VerifyResult(True, "verified", RFC9421_KEYID)


def test_header_names_are_case_insensitive(key: SigningKey) -> None:
    """SER-SIGN: header names are matched regardless of case."""
    headers = {name.lower(): value for name, value in signed(key).items()}
    assert verify(headers, key).ok


def tamper(headers: dict[str, str], name: str, old: str, new: str) -> dict[str, str]:
    assert old in headers[name]
    return {**headers, name: headers[name].replace(old, new)}


@pytest.mark.parametrize(
    ("case", "reason"),
    [
        ({"now": CREATED + 300}, "verified"),
        ({"now": CREATED + 301}, "expired"),
        ({"now": CREATED + 305, "max_skew": 5}, "verified"),
        ({"now": CREATED - 1}, "not yet valid"),
        ({"now": CREATED - 5, "max_skew": 5}, "verified"),
        ({"url": "https://other.example/docs/page?q=1"}, "bad signature"),
        ({"url": "https://example.com:8443/docs/page?q=1"}, "bad signature"),
        ({"url": "https://example.com/docs/other?q=1"}, "bad signature"),
        ({"url": "https://example.com/docs/page?q=2"}, "verified"),  # @query is not covered
        ({"method": "POST"}, "bad signature"),
        ({"url": "mailto:bot@example.com"}, "malformed request: not an http(s) URL"),
    ],
)
def test_verify_checks_time_and_request(key: SigningKey, case: dict[str, Any], reason: str) -> None:
    """SER-SIGN: the window [created, expires] holds (with an optional skew); a changed host, port,
    path or method breaks the signature."""
    assert verify(signed(key), key, **case).reason.startswith(reason)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (("Signature-Input", 'tag="web-bot-auth"', 'tag="other"'), "no web-bot-auth signature"),
        (("Signature-Input", 'alg="ed25519"', 'alg="rsa-pss-sha512"'), "unsupported alg rsa-pss-sha512"),
        (("Signature-Input", ";expires=1700000300", ""), "missing parameter: expires"),
        (("Signature-Input", ";created=1700000000", ""), "missing parameter: created"),
        (("Signature-Input", f';keyid="{RFC9421_KEYID}"', ""), "missing parameter: keyid"),
        (("Signature-Input", ";expires=1700000300", ";expires=1700000400"), "bad signature"),
        (("Signature-Input", "sig1=(", "sig1=)("), "malformed Signature-Input"),
        (("Signature", "sig1=:", "sig2=:"), "malformed Signature: no byte sequence"),
        (("Signature", "sig1=:", 'sig1="'), "malformed Signature"),
        (("Signature-Agent", AGENT, "https://evil.example"), "bad signature"),
        (("Signature-Agent", "https://", "http://"), "signature-agent mismatch"),
        (("Signature-Agent", "sig1=", "other="), "signature-agent mismatch"),
    ],
)
def test_verify_refuses_edited_headers(key: SigningKey, edit: tuple[str, str, str], reason: str) -> None:
    """SER-SIGN, OMN-SIGN: a wrong tag, alg or agent, a missing parameter or a tampered header is
    refused with its reason."""
    assert verify(tamper(signed(key), *edit), key).reason.startswith(reason)


@pytest.mark.parametrize("name", ["Signature", "Signature-Input"])
def test_verify_refuses_missing_headers(key: SigningKey, name: str) -> None:
    """SER-SIGN: without both signature headers there is nothing to verify."""
    headers = {k: v for k, v in signed(key).items() if k != name}
    expected = "missing Signature header" if name == "Signature" else "missing Signature-Input"
    assert verify(headers, key) == VerifyResult(False, expected)


def test_unknown_key_is_refused(key: SigningKey, other_key: SigningKey) -> None:
    """SER-SIGN: a keyid absent from the agent's directory is named in the reason."""
    expected = VerifyResult(False, f"unknown key {RFC9421_KEYID}", RFC9421_KEYID)
    assert verify(signed(key), other_key) == expected


def test_wrong_key_under_a_listed_keyid_is_refused(key: SigningKey, other_key: SigningKey) -> None:
    """SER-SIGN: a signature made with another key but claiming a listed keyid does not verify."""
    forged = tamper(signed(other_key), "Signature-Input", other_key.keyid, key.keyid)
    assert verify(forged, key).reason == "bad signature"


def test_directory_kid_is_not_trusted_over_the_key(key: SigningKey, other_key: SigningKey) -> None:
    """SER-SIGN: keys are matched by their computed thumbprint, not by the kid a directory claims."""
    directory = {"keys": [{**other_key.public_jwk(), "kid": key.keyid}]}
    assert verify(signed(key), key, directory=directory).reason == f"unknown key {RFC9421_KEYID}"


AUTH: Any = (("@authority", {}), "example.com")


@pytest.mark.parametrize(
    ("covered", "headers", "reason"),
    [
        ([(("@method", {}), "GET"), (("@path", {}), "/docs/page")], {}, "component missing: @authority"),
        ([AUTH], {"Signature-Agent": f'sig1="{AGENT}"'}, "component missing: signature-agent"),
        ([AUTH], {}, "verified"),
        ([AUTH, (("content-type", {}), "text/html")], {}, "header missing: content-type"),
        ([AUTH, (("@status", {}), "200")], {}, "unsupported component @status"),
        ([AUTH, (("accept", {"bs": True}), "x")], {"Accept": "x"}, "unsupported component"),
        ([AUTH, (("accept", {}), "text/html")], {"Accept": " text/html "}, "verified"),
    ],
)  # fmt: skip
def test_verify_requires_the_profiles_components(
    key: SigningKey, covered: list[tuple[Any, str]], headers: dict[str, str], reason: str
) -> None:
    """SER-SIGN: a web-bot-auth signature must cover @authority, and Signature-Agent when one is
    sent; covered headers must be present and supported."""
    assert verify(hand_signed(key, covered, **headers), key).reason.startswith(reason)


def test_one_good_signature_among_others_is_enough(key: SigningKey) -> None:
    """SER-SIGN: other applications' signatures beside ours are ignored."""
    ours = signed(key)
    headers = {
        **ours,
        "Signature-Input": f'other=("@method");created=1;keyid="x", {ours["Signature-Input"]}',
        "Signature": f"other=:AAAA:, {ours['Signature']}",
    }
    assert verify(headers, key).ok


@settings(max_examples=300, deadline=None)
@given(
    signature_input=st.text(max_size=200) | st.just('sig1=("@authority");tag="web-bot-auth";keyid="k"'),
    signature=st.text(max_size=100),
    agent=st.text(max_size=60),
    jwks=st.lists(st.dictionaries(st.sampled_from(["kty", "crv", "x"]), st.text(max_size=50)), max_size=3),
    now=st.integers(min_value=-(2**63), max_value=2**63),
)
def test_verify_never_raises_on_content(
    signature_input: str, signature: str, agent: str, jwks: list[dict[str, str]], now: int
) -> None:
    """SER-SIGN: verify_request turns any header or directory content into a VerifyResult."""
    headers = {"Signature-Input": signature_input, "Signature": signature, "Signature-Agent": agent}
    result = verify_request(method="GET", url=URL, headers=headers, directory={"keys": jwks}, now=now)
    assert isinstance(result, VerifyResult)
    assert not result.ok


# --- cross-check with http-message-signatures -----------------------------------------------------


@dataclass
class Request:
    method: str
    url: str
    headers: dict[str, str]


@dataclass
class Response:
    status_code: int
    headers: dict[str, str]
    request: Request = field(default_factory=lambda: Request("GET", f"{AGENT}{DIRECTORY_PATH}", {}))


class TimelessVerifier(HTTPMessageVerifier):  # type: ignore[misc]
    """The library's verifier, less its wall-clock window: our time checks are tested above."""

    def validate_created_and_expires(self, sig_input: Any, max_age: Any = None) -> None:
        pass


def library_verifier(*keys: SigningKey) -> TimelessVerifier:
    public = {key.keyid: key.private_key.public_key() for key in keys}
    return TimelessVerifier(
        signature_algorithm=algorithms.ED25519,
        key_resolver=MappingKeyResolver(public_keys=public, private_keys={}),
    )


def test_http_message_signatures_verifies_our_request(key: SigningKey) -> None:
    """SER-SIGN, OMN-SIGN: an independent RFC 9421 implementation verifies what we send."""
    request = Request("GET", URL, signed(key, nonce="bm9uY2U="))
    [result] = library_verifier(key).verify(
        request, expect_tag="web-bot-auth", require_components=("@authority", '"signature-agent";key="sig1"')
    )
    assert result.parameters["keyid"] == RFC9421_KEYID
    tampered = Request("GET", "https://example.com/elsewhere", request.headers)
    with pytest.raises(InvalidSignature):
        library_verifier(key).verify(tampered, expect_tag="web-bot-auth")


def test_http_message_signatures_verifies_our_directory(key: SigningKey, other_key: SigningKey) -> None:
    """SER-SIGN: the directory response is signed once per key over "@authority";req and
    content-digest, and an independent implementation checks both signatures and the body."""
    body = json.dumps(key_directory([key, other_key])).encode()
    keys = [key, other_key]
    headers = sign_directory_response(keys, authority="Omnisciente.dev:443", body=body, created=CREATED)
    digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
    assert headers["Content-Digest"] == f"sha-256=:{digest}:"
    assert headers["Signature-Input"].startswith('sig1=("@authority";req "content-digest");created=17')
    assert ', sig2=("@authority";req "content-digest")' in headers["Signature-Input"]
    assert headers["Signature-Input"].count('tag="http-message-signatures-directory"') == 2
    results = library_verifier(key, other_key).verify(
        Response(200, headers), expect_tag="http-message-signatures-directory", body=body
    )
    assert {result.parameters["keyid"] for result in results} == {key.keyid, other_key.keyid}
    with pytest.raises(InvalidSignature):
        library_verifier(key, other_key).verify(
            Response(200, headers), expect_tag="http-message-signatures-directory", body=body + b" "
        )


@pytest.mark.parametrize(
    ("count", "authority", "message"),
    [(0, "omnisciente.dev", "at least one key"), (1, "https://x/", "authority"), (1, "", "authority")],
)
def test_unsignable_directory_responses(key: SigningKey, count: int, authority: str, message: str) -> None:
    """SER-SIGN: a directory response needs a key and a host[:port] authority."""
    with pytest.raises(SigningError, match=message):
        sign_directory_response([key] * count, authority=authority, body=b"{}", created=CREATED)


# --- the key directory ----------------------------------------------------------------------------


def test_key_directory_lists_each_key_once_by_thumbprint(key: SigningKey, other_key: SigningKey) -> None:
    """SER-SIGN: the JWKS at /.well-known/http-message-signatures-directory lists each public key
    once, its kid the thumbprint, and no private material."""
    directory = key_directory([key, other_key, key])
    assert [jwk["kid"] for jwk in directory["keys"]] == [key.keyid, other_key.keyid]
    for jwk in directory["keys"]:
        assert set(jwk) == {"kty", "crv", "x", "kid"}
        assert jwk_thumbprint(jwk) == jwk["kid"]
    assert json.loads(json.dumps(directory)) == directory
    assert public_jwk(key.private_key.public_key()) == public_jwk(key) == key.public_jwk()
    assert DIRECTORY_PATH == "/.well-known/http-message-signatures-directory"
    assert DIRECTORY_MEDIA_TYPE == "application/http-message-signatures-directory+json"


# --- keys -----------------------------------------------------------------------------------------


def test_generated_key_loads_from_path_text_or_bytes(tmp_path: Path) -> None:
    """SER-SIGN: `keys generate` writes Ed25519 PKCS#8 PEM that loads from a path, str or bytes."""
    pem = generate_private_key_pem()
    assert pem.startswith(b"-----BEGIN PRIVATE KEY-----")
    path = tmp_path / "bot.pem"
    path.write_bytes(pem)
    loaded = {load_private_key(source) for source in (path, str(path), pem, pem.decode())}
    assert len(loaded) == 1
    assert len(loaded.pop().keyid) == 43


def test_signing_key_repr_hides_the_private_key(key: SigningKey) -> None:
    """SER-SIGN: a logged SigningKey shows its keyid, never its private key."""
    assert repr(key) == f"SigningKey(keyid='{RFC9421_KEYID}')"


def pem_of(private_key: Any, encryption: Any = None) -> bytes:
    return private_key.private_bytes(  # type: ignore[no-any-return]
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        encryption or serialization.NoEncryption(),
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"hello", "not a PEM file"),
        (b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "not a readable PEM private key"),
        (
            Ed25519PrivateKey.generate()
            .public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo),
            "holds no private key",
        ),
        (pem_of(ec.generate_private_key(ec.SECP256R1())), "not an Ed25519 key"),
        (pem_of(Ed25519PrivateKey.generate(), serialization.BestAvailableEncryption(b"pw")), "is encrypted"),
        ("directory", "cannot read it"),
    ],
)
def test_unusable_key_files_raise_one_line_naming_the_path(
    tmp_path: Path, content: bytes | str | None, message: str
) -> None:
    """SER-SIGN: SIGNING_KEY problems (missing, not PEM, not Ed25519, encrypted) stop the crawl
    with one line that names the file."""
    path = tmp_path / "key.pem"
    if content == "directory":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    with pytest.raises(SigningError, match=message) as raised:
        load_private_key(path)
    assert str(path) in str(raised.value)
    assert "\n" not in str(raised.value)


def test_public_surface() -> None:
    """SER-SIGN: __all__ is the public surface others code against."""
    assert set(signing.__all__) == {
        "SigningKey", "load_private_key", "generate_private_key_pem", "jwk_thumbprint", "public_jwk",
        "key_directory", "sign_request", "verify_request", "VerifyResult", "signature_agent_header",
        "DIRECTORY_MEDIA_TYPE", "DIRECTORY_PATH", "sign_directory_response", "signature_agent_url",
    }  # fmt: skip
    assert all(hasattr(signing, name) for name in signing.__all__)
