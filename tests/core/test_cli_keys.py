"""The key and verify commands: ``synapsecrawl keys generate``, ``keys directory`` and ``verify``.

Run in-process through ``synapsecrawl.cli.main``; verification time is passed with
``--now``, so nothing here depends on the wall clock.
"""

from __future__ import annotations

import base64
import hashlib
import json
import stat
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from http_message_signatures import HTTPMessageVerifier, InvalidSignature, MappingKeyResolver, algorithms

from synapsecrawl.cli.keys import parse_request_head
from synapsecrawl.cli.main import main
from synapsecrawl.signing import (
    DIRECTORY_MEDIA_TYPE,
    DIRECTORY_PATH,
    SigningKey,
    jwk_thumbprint,
    load_private_key,
    sign_request,
)
from tests.site.server import Reply, TestServer

CREATED = 1_700_000_000
URL = "https://docs.example.com:8443/guide/start.html?lang=en"
AGENT = "https://omnisciente.dev"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def key_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "bot.pem"
    assert run(capsys, "keys", "generate", "--out", str(path))[0] == 0
    return path


@pytest.fixture
def directory_path(tmp_path: Path, key_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    code, out, _ = run(capsys, "keys", "directory", "--key", str(key_path))
    assert code == 0
    path = tmp_path / "directory.json"
    path.write_text(out)
    return path


def signed_headers(key: SigningKey, url: str = URL) -> dict[str, str]:
    headers = sign_request(key, method="GET", url=url, signature_agent=AGENT, created=CREATED, nonce="bm9uY2U=")
    return {"User-Agent": "OmniscienteBot/0.1", **headers}


def header_args(headers: dict[str, str]) -> list[str]:
    return [arg for name, value in headers.items() for arg in ("--header", f"{name}: {value}")]


# --- keys generate --------------------------------------------------------------------------------


def test_generate_writes_an_ed25519_pkcs8_key_readable_only_by_its_owner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SER-SIGN, OMN-SIGN: `keys generate` writes an unencrypted Ed25519 PKCS#8 PEM with mode 600
    and names its keyid, the RFC 7638 thumbprint the directory will list."""
    path = tmp_path / "bot.pem"
    code, out, err = run(capsys, "keys", "generate", "--out", str(path))
    assert (code, err) == (0, "")
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    key = load_private_key(path)
    assert isinstance(key.private_key, Ed25519PrivateKey)
    assert out == f"wrote {path} (Ed25519, keyid {key.keyid})\n"
    assert [p.name for p in tmp_path.iterdir()] == ["bot.pem"]  # no temporary file left behind


def test_generate_refuses_to_overwrite_unless_forced(key_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SER-SIGN: an existing key is never replaced by accident; --force replaces it, still mode 600."""
    before = key_path.read_bytes()
    key_path.chmod(0o644)
    code, out, err = run(capsys, "keys", "generate", "--out", str(key_path))
    assert (code, out) == (1, "")
    assert err == f"synapsecrawl: {key_path} exists; pass --force to replace it\n"
    assert key_path.read_bytes() == before
    assert run(capsys, "keys", "generate", "--out", str(key_path), "--force")[0] == 0
    assert key_path.read_bytes() != before
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert len(list(key_path.parent.iterdir())) == 1


def test_generate_into_a_missing_directory_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SER-SIGN: an unwritable destination is one line and exit 1."""
    code, _, err = run(capsys, "keys", "generate", "--out", str(tmp_path / "no" / "such" / "bot.pem"))
    assert code == 1
    assert err.startswith("synapsecrawl: cannot write ") and err.count("\n") == 1


# --- keys directory -------------------------------------------------------------------------------


def test_directory_lists_each_key_once_with_its_thumbprint(
    tmp_path: Path, key_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SER-SIGN, OMN-SIGN: the JWKS names each key by kid = its RFC 7638 thumbprint, once each,
    in the order given, holding only public members."""
    second = tmp_path / "next.pem"
    run(capsys, "keys", "generate", "--out", str(second))
    code, out, _ = run(
        capsys, "keys", "directory", "--key", str(key_path), "--key", str(second), "--key", str(key_path)
    )
    assert code == 0
    jwks = json.loads(out)
    kids = [load_private_key(key_path).keyid, load_private_key(second).keyid]
    assert [jwk["kid"] for jwk in jwks["keys"]] == kids
    for jwk in jwks["keys"]:
        assert set(jwk) == {"kty", "crv", "x", "kid"}
        assert (jwk["kty"], jwk["crv"]) == ("OKP", "Ed25519")
        assert jwk_thumbprint(jwk) == jwk["kid"]


def test_directory_of_an_unusable_key_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SER-SIGN: a file that is not an Ed25519 private key is refused in one line naming it."""
    bad = tmp_path / "bad.pem"
    bad.write_text("not a key\n")
    code, out, err = run(capsys, "keys", "directory", "--key", str(bad))
    assert (code, out) == (1, "")
    assert err == f"synapsecrawl: signing key {bad}: not a PEM file (expected an Ed25519 PKCS#8 private key)\n"


@dataclass
class _Request:
    method: str
    url: str
    headers: dict[str, str]


@dataclass
class _Response:
    status_code: int
    headers: dict[str, str]
    request: _Request = field(default_factory=lambda: _Request("GET", "https://x/", {}))


def test_directory_with_authority_prints_the_signed_response(
    server: TestServer, key_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SER-SIGN, OMN-SIGN: with --authority, the exact body and the headers that sign it
    ("@authority";req and content-digest, tag="http-message-signatures-directory"); served
    as printed, the response verifies with http-message-signatures, body digest included."""
    authority = f"127.0.0.1:{server.port}"
    code, out, _ = run(capsys, "keys", "directory", "--key", str(key_path), "--authority", authority)
    assert code == 0
    printed = json.loads(out)
    body = printed["body"].encode()
    headers = printed["headers"]
    assert json.loads(body)["keys"][0]["kid"] == load_private_key(key_path).keyid
    assert headers["Content-Type"] == DIRECTORY_MEDIA_TYPE
    assert headers["Content-Digest"] == f"sha-256=:{base64.b64encode(hashlib.sha256(body).digest()).decode()}:"
    assert 'tag="http-message-signatures-directory"' in headers["Signature-Input"]
    server.add("127.0.0.1", {DIRECTORY_PATH: Reply(body, headers=headers)})
    with urllib.request.urlopen(f"http://{authority}{DIRECTORY_PATH}", timeout=10) as response:
        served_headers, served_body = dict(response.headers.items()), response.read()
    public = {load_private_key(key_path).keyid: load_private_key(key_path).private_key.public_key()}
    verifier = HTTPMessageVerifier(
        signature_algorithm=algorithms.ED25519, key_resolver=MappingKeyResolver(public_keys=public, private_keys={})
    )
    request = _Request("GET", f"https://{authority}{DIRECTORY_PATH}", {})
    [result] = verifier.verify(
        _Response(200, served_headers, request), expect_tag="http-message-signatures-directory", body=served_body
    )
    assert result.parameters["expires"] - result.parameters["created"] == 86400
    with pytest.raises(InvalidSignature):
        verifier.verify(
            _Response(200, served_headers, _Request("GET", "https://elsewhere.example/", {})),
            expect_tag="http-message-signatures-directory",
            body=served_body,
        )


# --- verify ---------------------------------------------------------------------------------------


def test_verify_a_signed_request(key_path: Path, directory_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """SER-SIGN, OMN-SIGN: a site owner's check of a request we signed says `verified` and the keyid."""
    key = load_private_key(key_path)
    code, out, err = run(
        capsys,
        "verify",
        "--directory",
        str(directory_path),
        "--url",
        URL,
        *header_args(signed_headers(key)),
        "--now",
        str(CREATED + 10),
    )
    assert (code, out, err) == (0, f"verified keyid={key.keyid}\n", "")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"--now": str(CREATED + 301)}, "expired"),
        ({"--now": "2023-11-14T22:18:21Z"}, "expired"),  # CREATED + 301, as ISO 8601
        ({"--now": str(CREATED - 60)}, "not yet valid"),
        ({"--url": "https://docs.example.org:8443/guide/start.html"}, "bad signature"),
        ({"--url": "https://docs.example.com/guide/start.html"}, "bad signature"),
        ({"--url": "https://docs.example.com:8443/guide/other.html"}, "bad signature"),
        ({"--method": "HEAD"}, "bad signature"),
        ({"drop": "Signature"}, "missing Signature header"),
        ({"drop": "Signature-Input"}, "missing Signature-Input"),
        ({"drop": "Signature-Agent"}, "header missing: signature-agent"),
        ({"Signature-Agent": 'sig1="https://impostor.example"'}, "bad signature"),
    ],
)
def test_verify_says_why_a_request_is_refused(
    key_path: Path, directory_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, str], reason: str
) -> None:
    """SER-SIGN, OMN-SIGN: expired, not yet valid, a tampered authority, path or method, a missing
    header or a swapped Signature-Agent: `not verified: REASON` and exit 1."""
    headers = signed_headers(load_private_key(key_path))
    options = {"--url": URL, "--now": str(CREATED + 10)}
    for name, value in change.items():
        if name == "drop":
            del headers[value]
        elif name.startswith("--"):
            options[name] = value
        else:
            headers[name] = value
    argv = ["verify", "--directory", str(directory_path), *header_args(headers)]
    argv += [arg for pair in options.items() for arg in pair]
    code, out, err = run(capsys, *argv)
    assert (code, out, err) == (1, f"not verified: {reason}\n", "")


def test_verify_with_the_wrong_key_names_the_unknown_keyid(
    tmp_path: Path, key_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SER-SIGN, OMN-SIGN: a directory that does not list the signing key says which keyid is unknown."""
    other = tmp_path / "other.pem"
    run(capsys, "keys", "generate", "--out", str(other))
    other_directory = tmp_path / "other.json"
    other_directory.write_text(run(capsys, "keys", "directory", "--key", str(other))[1])
    key = load_private_key(key_path)
    code, out, _ = run(
        capsys,
        "verify",
        "--directory",
        str(other_directory),
        "--url",
        URL,
        *header_args(signed_headers(key)),
        "--now",
        str(CREATED),
    )
    assert (code, out) == (1, f"not verified: unknown key {key.keyid}\n")


def test_verify_reads_a_raw_request_head(
    tmp_path: Path, key_path: Path, directory_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SER-SIGN: a request head pasted from a server's log verifies, @authority taken from its
    Host header; the same head with another Host does not."""
    key = load_private_key(key_path)
    signed = signed_headers(key, "http://shop.test:8080/a.html?x=1")
    argv = ["verify", "--directory", str(directory_path), "--now", str(CREATED), "--scheme", "http"]
    for host, expected in (
        ("shop.test:8080", (0, f"verified keyid={key.keyid}\n")),
        ("shop.test:8081", (1, "not verified: bad signature\n")),
    ):
        lines = ["GET /a.html?x=1 HTTP/1.1", f"Host: {host}", *(f"{n}: {v}" for n, v in signed.items())]
        head = tmp_path / "request.txt"
        head.write_text("\r\n".join(lines) + "\r\n\r\n")
        assert run(capsys, *argv, "--request", str(head))[:2] == expected


def test_parse_request_head_joins_repeated_fields_and_unfolds_lines() -> None:
    """SER-SIGN: repeated header lines join with ", " (RFC 9110 §5.3), folded lines unfold, and
    the head ends at the first empty line."""
    method, target, headers = parse_request_head(
        "\r\nGET /x HTTP/1.1\r\nHost: a.test\r\nSignature: sig1=:AA==:\r\nsignature: sig2=:AQ==:\r\n"
        "X-Long: one\r\n  two\r\n\r\nBody: not a header\r\n"
    )
    assert (method, target) == ("GET", "/x")
    assert headers == {"Host": "a.test", "Signature": "sig1=:AA==:, sig2=:AQ==:", "X-Long": "one two"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--url", URL, "--directory", "missing.json"], "--directory missing.json: No such file or directory"),
        (["--url", URL, "--directory", "{bad}"], "not JSON"),
        (["--url", URL, "--directory", "{list}"], 'not a JWKS (no "keys" list)'),
        (["--directory", "{dir}"], "verify needs --url, or --request with a request line and a Host header"),
        (["--url", "ftp://x/", "--directory", "{dir}"], "--url ftp://x/: not an http(s) URL"),
        (["--url", URL, "--directory", "{dir}", "--header", "no colon"], "--header: not a header line"),
        (["--url", URL, "--directory", "{dir}", "--now", "yesterday"], "--now 'yesterday': not unix seconds"),
        (["--url", URL, "--directory", "{dir}", "--now", "2024-01-01T00:00"], "give a time zone"),
        (["--request", "{head}", "--directory", "{dir}"], "--request: not a request line"),
        (["--request", "missing.txt", "--directory", "{dir}"], "--request missing.txt: No such file"),
    ],
)
def test_verify_usage_errors_are_one_line(
    tmp_path: Path, directory_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """SER-SIGN: an unreadable directory or request is one line on stderr and exit 1, never a traceback."""
    (tmp_path / "bad").write_text("{ not json")
    (tmp_path / "list").write_text("[]")
    (tmp_path / "head").write_text("hello\nHost: x\n")
    names = {name: str(tmp_path / name.strip("{}")) for name in ("{bad}", "{list}", "{head}")}
    names["{dir}"] = str(directory_path)
    code, out, err = run(capsys, "verify", *[names.get(arg, arg) for arg in argv])
    assert (code, out) == (1, "")
    assert err.startswith("synapsecrawl: ") and message in err and err.count("\n") == 1, err


def test_verify_fetches_a_directory_url_without_following_redirects(
    server: TestServer, key_path: Path, directory_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SER-SIGN, OMN-SIGN: a directory URL is fetched where the user points it, once; a redirect is
    refused, since a key directory is served without redirects."""
    key = load_private_key(key_path)
    base = f"http://127.0.0.1:{server.port}"
    server.add("127.0.0.1", {
        "/keys/good.json": Reply(directory_path.read_text(), headers={"Content-Type": DIRECTORY_MEDIA_TYPE}),
        "/keys/moved.json": Reply("", status=302, headers={"Location": f"{base}/keys/good.json"}),
        "/keys/gone.json": Reply("gone", status=404, headers={"Content-Type": "text/plain"}),
    })  # fmt: skip
    argv = ["verify", "--url", URL, *header_args(signed_headers(key)), "--now", str(CREATED)]
    before = len(server.log("127.0.0.1"))
    assert run(capsys, *argv, "--directory", f"{base}/keys/good.json")[:2] == (0, f"verified keyid={key.keyid}\n")
    code, _, err = run(capsys, *argv, "--directory", f"{base}/keys/moved.json")
    assert code == 1
    assert err == (
        f"synapsecrawl: --directory {base}/keys/moved.json redirects to {base}/keys/good.json; "
        "a key directory is served as is\n"
    )
    code, _, err = run(capsys, *argv, "--directory", f"{base}/keys/gone.json")
    assert (code, err) == (1, f"synapsecrawl: --directory {base}/keys/gone.json: HTTP 404\n")
    paths = [hit.path for hit in server.log("127.0.0.1")[before:]]
    assert paths[:2] == ["/keys/good.json", "/keys/moved.json"]  # the redirect was not followed
