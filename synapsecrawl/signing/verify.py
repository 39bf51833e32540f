"""Web Bot Auth: check a request's signature against a key directory (RFC 9421 §3.2).

Used by ``synapsecrawl verify`` (``cli/keys.py``) and the tests, never by the crawl. Time is passed in
as unix seconds; a failure is a ``VerifyResult`` naming the reason, never an exception.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from http_sf.types import ItemOrInnerListType, ItemType

from synapsecrawl.signing.keys import _ALG, _okp_jwk, jwk_thumbprint
from synapsecrawl.signing.sign import (
    _TAG,
    _Component,
    _derived,
    _field,
    _Params,
    _parse_dictionary,
    _signature_base,
    _Unsupported,
)

__all__ = [
    "VerifyResult",
    "verify_request",
]


@dataclass(frozen=True)
class VerifyResult:
    """Whether a request carries a valid Web Bot Auth signature, and why not."""

    ok: bool
    reason: str
    keyid: str | None = None


class _Rejected(Exception):
    """A signature fails a check; its one argument is the reason."""


def _directory_keys(directory: Mapping[str, object]) -> dict[str, Ed25519PublicKey]:
    keys: dict[str, Ed25519PublicKey] = {}
    entries = directory.get("keys")
    for jwk in entries if isinstance(entries, list) else []:
        if not isinstance(jwk, Mapping) or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
            continue
        try:
            x = str(jwk.get("x"))
            public_key = Ed25519PublicKey.from_public_bytes(
                base64.b64decode(x + "=" * (-len(x) % 4), altchars=b"-_", validate=True)
            )
        except (ValueError, binascii.Error):
            continue
        keys[jwk_thumbprint(_okp_jwk(public_key))] = public_key
    return keys


def verify_request(
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    directory: Mapping[str, object],
    now: int,
    max_skew: int = 0,
) -> VerifyResult:
    """Check the request's ``tag="web-bot-auth"`` signatures against the JWKS `directory` at `now`.

    Never raises on content. The first signature that verifies wins; failing
    that, the first one's failure is the reason.
    """
    fields = {name.lower(): value for name, value in headers.items()}
    if "signature" not in fields:
        return VerifyResult(False, "missing Signature header")
    if "signature-input" not in fields:
        return VerifyResult(False, "missing Signature-Input")
    parsed: list[dict[str, ItemOrInnerListType]] = []
    for name in ("Signature-Input", "Signature"):
        try:
            parsed.append(_parse_dictionary(fields[name.lower()]))
        except (ValueError, UnicodeError) as error:
            return VerifyResult(False, f"malformed {name}: {error}")
    inputs, signatures = parsed
    failures: list[VerifyResult] = []
    for label, member in inputs.items():
        if not (isinstance(member, tuple) and isinstance(member[0], list) and member[1].get("tag") == _TAG):
            continue
        keyid = member[1].get("keyid")
        result = VerifyResult(True, "verified", keyid if isinstance(keyid, str) else None)
        try:
            _check_time(member[1], now, max_skew)
            _check_signature(member, signatures.get(label), method=method, url=url, fields=fields, directory=directory)
        except _Rejected as rejection:
            result = VerifyResult(False, str(rejection), result.keyid)
        if result.ok:
            return result
        failures.append(result)
    return failures[0] if failures else VerifyResult(False, "no web-bot-auth signature")


def _check_time(params: _Params, now: int, max_skew: int) -> None:
    created, expires = params.get("created"), params.get("expires")
    if not isinstance(created, int) or isinstance(created, bool):
        raise _Rejected("missing parameter: created")
    if not isinstance(expires, int) or isinstance(expires, bool):
        raise _Rejected("missing parameter: expires")
    if now > expires + max_skew:  # RFC 9421 §2.3: not valid after `expires`
        raise _Rejected("expired")
    if created > now + max_skew:
        raise _Rejected("not yet valid")


def _check_signature(
    signature_input: tuple[list[ItemType], _Params],
    signature: ItemOrInnerListType | None,
    *,
    method: str,
    url: str,
    fields: Mapping[str, str],
    directory: Mapping[str, object],
) -> None:
    items, params = signature_input
    keyid = params.get("keyid")
    if not isinstance(keyid, str):
        raise _Rejected("missing parameter: keyid")
    if params.get("alg", _ALG) != _ALG:
        raise _Rejected(f"unsupported alg {params['alg']!s}")
    if not (isinstance(signature, tuple) and isinstance(signature[0], bytes)):
        raise _Rejected("malformed Signature: no byte sequence under the Signature-Input label")
    components = _covered_components(items, fields)
    public_key = _directory_keys(directory).get(keyid)
    if public_key is None:
        raise _Rejected(f"unknown key {keyid}")
    try:
        covered = [
            ((name, p), _derived(name, method, url) if name[0] == "@" and not p else _field(name, p, fields))
            for name, p in components
        ]
        base = _signature_base(covered, params)
    except LookupError as error:
        raise _Rejected(f"header missing: {error.args[0]}") from None
    except _Unsupported as error:
        raise _Rejected(str(error)) from None
    except ValueError as error:  # includes UnicodeError: a signature base is ASCII
        raise _Rejected(f"malformed request: {error}") from None
    try:
        public_key.verify(signature[0], base)
    except InvalidSignature:
        raise _Rejected("bad signature") from None


def _covered_components(items: Sequence[object], fields: Mapping[str, str]) -> list[_Component]:
    """The covered components, once the profile's required ones are known to be there."""
    components: list[_Component] = []
    for item in items:
        if not (isinstance(item, tuple) and isinstance(item[0], str) and isinstance(item[1], dict)):
            raise _Rejected("malformed Signature-Input: a component is not a string")
        components.append((item[0], item[1]))
    names = [name for name, _ in components]
    # draft-meunier-web-bot-auth-architecture: @authority always, Signature-Agent when sent
    for required in ("@authority", "signature-agent"):
        if required not in names and (required in fields or required.startswith("@")):
            raise _Rejected(f"component missing: {required}")
    for name, params in components:
        if name == "signature-agent" and "key" in params and name in fields:  # absent: "header missing"
            try:
                agent = _parse_dictionary(fields.get(name, "")).get(str(params["key"]))
            except (ValueError, UnicodeError):
                agent = None
            if not (isinstance(agent, tuple) and isinstance(agent[0], str) and agent[0].startswith("https://")):
                raise _Rejected("signature-agent mismatch")
    return components
