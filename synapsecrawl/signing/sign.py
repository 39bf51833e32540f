"""Web Bot Auth: sign our requests, publish our keys, check a signature.

The request profile of HTTP Message Signatures (RFC 9421) that the IETF webbotauth
drafts define (draft-meunier-web-bot-auth-architecture,
draft-ietf-webbotauth-httpsig-protocol): an Ed25519 key named by the RFC 7638
thumbprint of its JWK, a ``Signature-Agent`` dictionary member covered by the
signature, ``tag="web-bot-auth"`` and a short validity window. Also the key
directory (a JWKS served at ``DIRECTORY_PATH``) and the signatures over it.

Time is passed in as unix seconds, never read here. When to sign, where the key
file lives and fetching a directory are the adapters' business.

Written by hand on ``cryptography`` rather than on http-message-signatures: that
library reads the wall clock when it verifies and reports failures as free-text
exceptions, while a signature base over our few fixed components is a few lines.
Structured fields (RFC 8941, now RFC 9651) are parsed and serialised with ``http_sf``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import http_sf
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from http_sf.innerlist import ser_item_or_inner_list as _ser
from http_sf.types import BareItemType, ItemOrInnerListType, ItemType

from synapsecrawl.errors import SigningError

__all__ = [
    "DIRECTORY_MEDIA_TYPE",
    "DIRECTORY_PATH",
    "SigningKey",
    "VerifyResult",
    "generate_private_key_pem",
    "jwk_thumbprint",
    "key_directory",
    "load_private_key",
    "public_jwk",
    "sign_directory_response",
    "sign_request",
    "signature_agent_header",
    "signature_agent_url",
    "verify_request",
]

DIRECTORY_PATH = "/.well-known/http-message-signatures-directory"
DIRECTORY_MEDIA_TYPE = "application/http-message-signatures-directory+json"

_TAG = "web-bot-auth"
_DIRECTORY_TAG = "http-message-signatures-directory"
_ALG = "ed25519"
_AGENT_FORMS = ("origin", "directory")  # Signature-Agent: -00 drafts, then httpsig-protocol-01
# RFC 7638 §3.2 required members, in lexicographic order; OKP from RFC 8037 §2
_THUMBPRINT_MEMBERS = {"OKP": ("crv", "kty", "x"), "EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n")}
_DEFAULT_PORTS = {"http": 80, "https": 443}

_Params = dict[str, BareItemType]
_Component = tuple[str, _Params]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def jwk_thumbprint(jwk: Mapping[str, object]) -> str:
    """The base64url SHA-256 JWK thumbprint (RFC 7638) of `jwk`; optional members are ignored."""
    members = _THUMBPRINT_MEMBERS.get(str(jwk.get("kty")))
    if members is None:
        raise SigningError(f"cannot take the thumbprint of a JWK with kty {jwk.get('kty')!r}")
    missing = [name for name in members if not isinstance(jwk.get(name), str)]
    if missing:
        raise SigningError(f"JWK lacks the required member {missing[0]!r}")
    canonical = json.dumps({name: jwk[name] for name in members}, separators=(",", ":"), sort_keys=True)
    return _b64url(hashlib.sha256(canonical.encode("utf-8")).digest())


def _okp_jwk(public_key: Ed25519PublicKey) -> dict[str, str]:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"kty": "OKP", "crv": "Ed25519", "x": _b64url(raw)}  # RFC 8037 §2


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 private key and its `keyid`, the RFC 7638 thumbprint of its public JWK."""

    private_key: Ed25519PrivateKey = field(repr=False, compare=False)
    keyid: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "keyid", jwk_thumbprint(_okp_jwk(self.private_key.public_key())))

    def public_jwk(self) -> dict[str, str]:
        """The public key as a JWK, with `kid` set to the thumbprint."""
        return public_jwk(self)

    def sign(self, data: bytes) -> bytes:
        """The Ed25519 signature of `data` (deterministic, RFC 8032)."""
        return self.private_key.sign(data)


def public_jwk(key: SigningKey | Ed25519PublicKey) -> dict[str, str]:
    """The JWK to publish for `key`: kty, crv, x and a `kid` equal to its thumbprint."""
    public_key = key.private_key.public_key() if isinstance(key, SigningKey) else key
    jwk = _okp_jwk(public_key)
    return {**jwk, "kid": jwk_thumbprint(jwk)}


def generate_private_key_pem() -> bytes:
    """A new Ed25519 private key as unencrypted PKCS#8 PEM."""
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def load_private_key(path_or_pem: str | os.PathLike[str] | bytes) -> SigningKey:
    """Read an Ed25519 PKCS#8 PEM key from a file path, or from PEM text or bytes.

    Any problem raises `SigningError` with one line that names the path.
    """
    if isinstance(path_or_pem, bytes):
        source, data = "(inline PEM)", path_or_pem
    elif isinstance(path_or_pem, str) and path_or_pem.lstrip().startswith("-----BEGIN"):
        source, data = "(inline PEM)", path_or_pem.encode("ascii", "replace")
    else:
        source = os.fspath(path_or_pem)
        try:
            with open(source, "rb") as file:
                data = file.read()
        except FileNotFoundError:
            raise SigningError(f"signing key {source}: no such file") from None
        except OSError as error:
            raise SigningError(f"signing key {source}: cannot read it ({error.strerror})") from None
    return SigningKey(_parse_private_key(source, data))


def _parse_private_key(source: str, data: bytes) -> Ed25519PrivateKey:
    if b"-----BEGIN " not in data:
        raise SigningError(f"signing key {source}: not a PEM file (expected an Ed25519 PKCS#8 private key)")
    if b"PRIVATE KEY-----" not in data:
        raise SigningError(f"signing key {source}: holds no private key (a public key or certificate?)")
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:  # cryptography: the key is encrypted and needs a password
        raise SigningError(f"signing key {source}: is encrypted; store it unencrypted (mode 600)") from None
    except (ValueError, UnsupportedAlgorithm):
        raise SigningError(f"signing key {source}: not a readable PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        kind = type(key).__name__.removesuffix("PrivateKey").lstrip("_")
        raise SigningError(f"signing key {source}: not an Ed25519 key ({kind}); Web Bot Auth needs Ed25519")
    return key


def key_directory(keys: Sequence[SigningKey]) -> dict[str, list[dict[str, str]]]:
    """The JWKS to serve at `DIRECTORY_PATH` as `DIRECTORY_MEDIA_TYPE`, one entry per distinct key."""
    unique = {key.keyid: key for key in keys}
    return {"keys": [public_jwk(key) for key in unique.values()]}


def signature_agent_header(agent_url: str, label: str = "sig1") -> str:
    """The `Signature-Agent` dictionary, e.g. ``sig1="https://omnisciente.dev"``; https only."""
    parts = urlsplit(agent_url)
    if parts.scheme != "https" or not parts.hostname:
        raise SigningError(f"Signature-Agent must be an https URL, not {agent_url!r}")
    try:
        return http_sf.ser({label: agent_url})
    except (TypeError, ValueError) as error:
        raise SigningError(f"cannot send Signature-Agent {agent_url!r} as {label!r}: {error}") from None


def signature_agent_url(agent_url: str, form: str = "origin") -> str:
    """The URL to send in `Signature-Agent` for an agent configured as `agent_url`.

    ``origin`` (the -00 drafts): the agent's origin, whose directory is at
    `DIRECTORY_PATH`. ``directory`` (draft-ietf-webbotauth-httpsig-protocol-01): the
    key set URL itself, so an origin gets `DIRECTORY_PATH` appended. A URL with a
    path is sent as given under either form.
    """
    if form not in _AGENT_FORMS:
        raise SigningError(f"Signature-Agent form must be one of {', '.join(_AGENT_FORMS)}, not {form!r}")
    parts = urlsplit(agent_url)
    if parts.scheme != "https" or not parts.hostname:
        raise SigningError(f"Signature-Agent must be an https URL, not {agent_url!r}")
    if form == "directory" and parts.path in ("", "/") and not parts.query and not parts.fragment:
        return f"https://{parts.netloc}{DIRECTORY_PATH}"
    return agent_url


def _authority(url: str) -> str:
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), parts.hostname
    if scheme not in _DEFAULT_PORTS or not host:
        raise ValueError(f"not an http(s) URL: {url!r}")
    port = parts.port
    if not host.isascii():
        host = host.encode("idna").decode("ascii")
    if ":" in host:
        host = f"[{host}]"
    # RFC 9421 §2.2.3: lowercase host, default port omitted
    return host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"


class _Unsupported(ValueError):
    """A covered component this module cannot resolve."""


def _derived(name: str, method: str, url: str) -> str:
    """RFC 9421 §2.2: the derived components our profile uses."""
    if name == "@method":
        return method
    if name == "@authority":
        return _authority(url)
    if name == "@path":  # §2.2.6: the absolute path, no query
        return urlsplit(url).path or "/"
    raise _Unsupported(f"unsupported component {name}")


def _field(name: str, params: _Params, fields: Mapping[str, str]) -> str:
    """RFC 9421 §2.1 a header field, whole or one dictionary member (`key`, §2.1.2)."""
    key = params.get("key")
    if name.startswith("@") or set(params) - {"key"} or (params and not isinstance(key, str)):
        raise _Unsupported(f"unsupported component {_ser((name, params))}")
    if name not in fields:
        raise LookupError(name)
    value = fields[name].strip()
    if not isinstance(key, str):
        return value
    member = _parse_dictionary(value).get(key)
    if member is None:
        raise LookupError(f'{name};key="{key}"')
    return _ser(member)


def _signature_base(covered: Sequence[tuple[_Component, str]], params: _Params) -> bytes:
    """RFC 9421 §2.5: one line per covered component, then the signature parameters."""
    lines = [f"{_ser(component)}: {value}" for component, value in covered]
    inner_list: list[ItemType] = [component for component, _ in covered]
    lines.append(f'"@signature-params": {_ser((inner_list, params))}')
    return "\n".join(lines).encode("ascii")


def _params(key: SigningKey, created: int, expires_in: int, nonce: str | None, tag: str) -> _Params:
    if expires_in <= 0:
        raise SigningError(f"a signature must be valid for some seconds, not {expires_in}")
    params: _Params = {"created": created, "keyid": key.keyid, "alg": _ALG, "expires": created + expires_in}
    if nonce is not None:
        params["nonce"] = nonce
    params["tag"] = tag
    return params


def _signature_fields(
    key: SigningKey, covered: Sequence[tuple[_Component, str]], params: _Params
) -> tuple[ItemOrInnerListType, ItemOrInnerListType]:
    inner_list: list[ItemType] = [component for component, _ in covered]
    return (inner_list, params), (key.sign(_signature_base(covered, params)), {})


def sign_request(
    key: SigningKey,
    *,
    method: str,
    url: str,
    signature_agent: str,
    created: int,
    expires_in: int = 300,
    label: str = "sig1",
    nonce: str | None = None,
) -> dict[str, str]:
    """The Signature-Agent, Signature-Input and Signature headers for one request.

    Covers ``@authority``, the ``Signature-Agent`` member under `label`, ``@method`` and
    ``@path``; valid from `created` (unix seconds) for `expires_in` seconds.
    """
    agent_header = signature_agent_header(signature_agent, label)
    try:
        covered: list[tuple[_Component, str]] = [
            (("@authority", {}), _authority(url)),
            (("signature-agent", {"key": label}), _ser(signature_agent)),
            (("@method", {}), method),
            (("@path", {}), _derived("@path", method, url)),
        ]
        signature_input, signature = _signature_fields(key, covered, _params(key, created, expires_in, nonce, _TAG))
        return {
            "Signature-Agent": agent_header,
            "Signature-Input": http_sf.ser({label: signature_input}),
            "Signature": http_sf.ser({label: signature}),
        }
    except ValueError as error:
        raise SigningError(f"cannot sign {method} {url}: {error}") from None


def sign_directory_response(
    key_list: Sequence[SigningKey], *, authority: str, body: bytes, created: int, expires_in: int = 300
) -> dict[str, str]:
    """Content-Digest, Signature-Input and Signature for the directory response served at `authority`.

    One signature per key (labels sig1, sig2, ...), each covering ``"@authority";req``
    and ``content-digest`` with ``tag="http-message-signatures-directory"``.
    """
    if not key_list:
        raise SigningError("a key directory response needs at least one key to sign it")
    try:
        if set(authority) & set("/?#@\\ "):
            raise ValueError(authority)
        request_authority = _authority(f"https://{authority}/")
    except ValueError:
        raise SigningError(f"not a host[:port] authority: {authority!r}") from None
    digest = f"sha-256=:{base64.b64encode(hashlib.sha256(body).digest()).decode('ascii')}:"  # RFC 9530 §2
    covered: list[tuple[_Component, str]] = [
        (("@authority", {"req": True}), request_authority),  # RFC 9421 §2.4
        (("content-digest", {}), digest),
    ]
    inputs: dict[str, ItemOrInnerListType] = {}
    signatures: dict[str, ItemOrInnerListType] = {}
    for number, key in enumerate(key_list, start=1):
        label = f"sig{number}"
        params = _params(key, created, expires_in, None, _DIRECTORY_TAG)
        inputs[label], signatures[label] = _signature_fields(key, covered, params)
    return {
        "Content-Digest": digest,
        "Signature-Input": http_sf.ser(inputs),
        "Signature": http_sf.ser(signatures),
    }


@dataclass(frozen=True)
class VerifyResult:
    """Whether a request carries a valid Web Bot Auth signature, and why not."""

    ok: bool
    reason: str
    keyid: str | None = None


class _Rejected(Exception):
    """A signature fails a check; its one argument is the reason."""


def _parse_dictionary(value: str) -> dict[str, ItemOrInnerListType]:
    parsed = http_sf.parse(value.encode("ascii"), tltype="dictionary")
    assert isinstance(parsed, dict)
    return parsed


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
