"""Web Bot Auth: sign our requests and the key directory response (RFC 9421).

The request profile of HTTP Message Signatures that the IETF webbotauth drafts define
(draft-meunier-web-bot-auth-architecture, draft-ietf-webbotauth-httpsig-protocol): a
``Signature-Agent`` dictionary member covered by the signature, ``tag="web-bot-auth"`` and
a short validity window. Time is passed in as unix seconds, never read here; when to sign
is the adapter's business. Written by hand on ``cryptography``: that library reads the
wall clock and reports failures as free text, while our signature base is a few lines.
Structured fields (RFC 8941, now RFC 9651) are parsed and serialised with ``http_sf``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

import http_sf
from http_sf.innerlist import ser_item_or_inner_list as _ser
from http_sf.types import BareItemType, ItemOrInnerListType, ItemType

from synapsecrawl.errors import SigningError
from synapsecrawl.signing.keys import _ALG, DIRECTORY_PATH, SigningKey

__all__ = [
    "sign_directory_response",
    "sign_request",
    "signature_agent_header",
    "signature_agent_url",
]

_TAG = "web-bot-auth"
_DIRECTORY_TAG = "http-message-signatures-directory"
_AGENT_FORMS = ("origin", "directory")  # Signature-Agent: -00 drafts, then httpsig-protocol-01
_DEFAULT_PORTS = {"http": 80, "https": 443}
_Params = dict[str, BareItemType]
_Component = tuple[str, _Params]


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


def _parse_dictionary(value: str) -> dict[str, ItemOrInnerListType]:
    parsed = http_sf.parse(value.encode("ascii"), tltype="dictionary")
    assert isinstance(parsed, dict)
    return parsed
