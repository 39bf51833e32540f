"""The Web Bot Auth commands: make a key, publish its directory, check a captured request.

    synapsecrawl keys generate --out PATH [--force]
    synapsecrawl keys directory --key PATH [--key PATH ...] [--authority HOST[:PORT]] [--expires S]
    synapsecrawl verify --directory FILE_OR_URL (--url URL [--method M] [--header 'N: v' ...]
                        | --request FILE [--scheme http|https]) [--now TIME] [--max-skew S]

``keys directory`` prints the JWKS to serve at DIRECTORY_PATH; with
``--authority`` it prints ``{"headers": {...}, "body": "..."}``: the exact body
and the headers that sign that response (draft-ietf-webbotauth-httpsig-protocol).
``verify`` prints ``verified keyid=...`` (exit 0) or ``not verified: REASON``
(exit 1). It fetches a directory URL only where it is pointed, without redirects.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import urlsplit

from synapsecrawl.errors import SynapseError
from synapsecrawl.signing import (
    DIRECTORY_MEDIA_TYPE,
    DIRECTORY_PATH,
    generate_private_key_pem,
    key_directory,
    load_private_key,
    sign_directory_response,
    verify_request,
)

__all__ = ["directory_body", "parse_request_head", "register"]

_DIRECTORY_MAX_BYTES = 1_000_000
_FETCH_TIMEOUT = 15.0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``keys generate``, ``keys directory`` and ``verify`` to the ``synapsecrawl`` parser."""
    keys = commands.add_parser("keys", help="make and publish Web Bot Auth keys")
    sub = keys.add_subparsers(dest="keys_command", required=True)

    generate = sub.add_parser("generate", help="write a new Ed25519 private key (PEM, PKCS#8, mode 600)")
    generate.add_argument("--out", required=True, help="where to write the key")
    generate.add_argument("--force", action="store_true", help="replace an existing file")
    generate.set_defaults(handler=_generate)

    directory = sub.add_parser("directory", help=f"print the JWKS to serve at {DIRECTORY_PATH}")
    directory.add_argument("--key", action="append", required=True, help="a private key file (repeatable)")
    directory.add_argument("--authority", help="HOST[:PORT] serving the directory: also print signed headers")
    directory.add_argument(
        "--expires", type=int, default=86400, help="seconds the directory signature stays valid (default: %(default)s)"
    )
    directory.set_defaults(handler=_directory)

    verify = commands.add_parser("verify", help="check a captured request's Web Bot Auth signature")
    verify.add_argument("--directory", required=True, help="key directory: a JSON file, '-' or an http(s) URL")
    verify.add_argument("--request", help="a raw HTTP request head (request line, then header lines)")
    verify.add_argument("--url", help="the full URL requested (overrides the request line and Host)")
    verify.add_argument("--method", help="the request method (default: the request line's, else GET)")
    verify.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a request header (repeatable; added to --request's)",
    )
    verify.add_argument(
        "--scheme",
        choices=("https", "http"),
        default="https",
        help="scheme of a --request without --url (default: %(default)s)",
    )
    verify.add_argument("--now", help="check as of this time: unix seconds or ISO 8601 (default: now)")
    verify.add_argument("--max-skew", type=int, default=0, help="seconds of clock skew allowed (default: 0)")
    verify.set_defaults(handler=_verify)


def _generate(args: argparse.Namespace) -> int:
    path = Path(args.out)
    if path.exists() and not args.force:
        raise SynapseError(f"{path} exists; pass --force to replace it")
    pem = generate_private_key_pem()
    # written beside the target with mode 600, then renamed over it: never world-readable
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    except OSError as error:
        raise SynapseError(f"cannot write {path}: {error.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(pem)
        os.chmod(temporary, 0o600)  # mkstemp's mode already; stated for the reader
        if args.force:
            os.replace(temporary, path)
        else:
            os.link(temporary, path)  # fails if the path appeared meanwhile: never overwrite
    except FileExistsError:
        raise SynapseError(f"{path} exists; pass --force to replace it") from None
    except OSError as error:
        raise SynapseError(f"cannot write {path}: {error.strerror}") from None
    finally:
        Path(temporary).unlink(missing_ok=True)
    keyid = load_private_key(pem).keyid
    sys.stdout.write(f"wrote {path} (Ed25519, keyid {keyid})\n")
    return 0


def directory_body(key_paths: list[str]) -> str:
    """The JWKS of the public halves of the private keys at ``key_paths``, as served at DIRECTORY_PATH."""
    return json.dumps(key_directory([load_private_key(path) for path in key_paths]), indent=2) + "\n"


def _directory(args: argparse.Namespace) -> int:
    keys = [load_private_key(path) for path in args.key]
    body = directory_body(args.key)
    if not args.authority:
        sys.stdout.write(body)
        return 0
    if args.expires <= 0:
        raise SynapseError(f"--expires must be a positive number of seconds, not {args.expires}")
    signed = sign_directory_response(
        keys,
        authority=args.authority,
        body=body.encode("utf-8"),
        created=int(time.time()),
        expires_in=args.expires,
    )
    headers = {"Content-Type": DIRECTORY_MEDIA_TYPE, **signed}
    sys.stdout.write(json.dumps({"headers": headers, "body": body}, indent=2) + "\n")
    return 0


def parse_request_head(text: str) -> tuple[str, str, dict[str, str]]:
    """The method, request target and headers of a raw HTTP/1.x request head.

    Repeated fields are joined with ", " (RFC 9110 §5.3); obsolete line folding is
    unfolded; parsing stops at the first empty line.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    while lines and not lines[0].strip():
        lines.pop(0)
    if not lines:
        raise SynapseError("--request is empty: expected a request line such as 'GET /path HTTP/1.1'")
    parts = lines[0].split()
    if len(parts) not in (2, 3):
        raise SynapseError(f"--request: not a request line: {lines[0][:80]!r}")
    headers: dict[str, str] = {}
    last = ""
    for line in lines[1:]:
        if not line.strip():
            break
        if line[0] in " \t" and last:  # RFC 9112 §5.2 obs-fold
            headers[last] += " " + line.strip()
            continue
        _add_header(headers, line, "--request")
        last = next(reversed(headers))
    return parts[0], parts[1], headers


def _add_header(headers: dict[str, str], line: str, source: str) -> None:
    name, colon, value = line.partition(":")
    if not colon or not name.strip() or name != name.strip():
        raise SynapseError(f"{source}: not a header line 'Name: value': {line[:80]!r}")
    existing = next((key for key in headers if key.lower() == name.lower()), None)
    if existing is None:
        headers[name] = value.strip()
    else:
        headers[existing] += ", " + value.strip()


def _request_of(args: argparse.Namespace) -> tuple[str, str, dict[str, str]]:
    method, target, headers = "GET", "", dict[str, str]()
    if args.request:
        method, target, headers = parse_request_head(_read_text(args.request, "--request"))
    for line in args.header:
        _add_header(headers, line, "--header")
    url = args.url
    if not url:
        if target.startswith(("http://", "https://")):  # absolute-form, RFC 9112 §3.2.2
            url = target
        else:
            host = next((value for name, value in headers.items() if name.lower() == "host"), None)
            if not target or host is None:
                raise SynapseError("verify needs --url, or --request with a request line and a Host header")
            url = f"{args.scheme}://{host}{target}"
    if urlsplit(url).scheme not in ("http", "https"):
        raise SynapseError(f"--url {url}: not an http(s) URL")
    return (args.method or method).upper(), url, headers


def _read_text(path: str, option: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise SynapseError(f"{option} {path}: {error.strerror or error}") from None


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(  # noqa: PLR0917 - urllib's signature
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> NoReturn:
        raise SynapseError(f"--directory {req.full_url} redirects to {newurl}; a key directory is served as is")


def _fetch_directory(url: str) -> bytes:
    opener = urllib.request.build_opener(_NoRedirects)
    accept = {"Accept": f"{DIRECTORY_MEDIA_TYPE}, application/json"}
    request = urllib.request.Request(url, headers=accept)  # noqa: S310 - the caller checked http(s)
    try:
        with opener.open(request, timeout=_FETCH_TIMEOUT) as response:
            data: bytes = response.read(_DIRECTORY_MAX_BYTES + 1)
    except urllib.error.HTTPError as error:
        raise SynapseError(f"--directory {url}: HTTP {error.code}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", None) or error
        raise SynapseError(f"--directory {url}: {reason}") from None
    if len(data) > _DIRECTORY_MAX_BYTES:
        raise SynapseError(f"--directory {url}: larger than {_DIRECTORY_MAX_BYTES} bytes")
    return data


def _load_directory(source: str) -> Mapping[str, object]:
    if urlsplit(source).scheme in ("http", "https"):
        data = _fetch_directory(source)
    elif source == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(source).read_bytes()
        except OSError as error:
            raise SynapseError(f"--directory {source}: {error.strerror or error}") from None
    try:
        directory = json.loads(data)
    except (ValueError, UnicodeError):
        raise SynapseError(f"--directory {source}: not JSON") from None
    if not isinstance(directory, dict) or not isinstance(directory.get("keys"), list):
        raise SynapseError(f'--directory {source}: not a JWKS (no "keys" list)')
    return directory


def _unix_time(value: str | None) -> int:
    if value is None:
        return int(time.time())
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        moment = dt.datetime.fromisoformat(value)
    except ValueError:
        raise SynapseError(f"--now {value!r}: not unix seconds or an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise SynapseError(f"--now {value!r}: give a time zone (e.g. Z)")
    return int(moment.timestamp())


def _verify(args: argparse.Namespace) -> int:
    method, url, headers = _request_of(args)
    directory = _load_directory(args.directory)
    result = verify_request(
        method=method,
        url=url,
        headers=headers,
        directory=directory,
        now=_unix_time(args.now),
        max_skew=args.max_skew,
    )
    if result.ok:
        sys.stdout.write(f"verified keyid={result.keyid}\n")
        return 0
    sys.stdout.write(f"not verified: {result.reason}\n")
    return 1
