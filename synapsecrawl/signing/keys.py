"""Web Bot Auth keys: Ed25519 keys, their JWK and RFC 7638 thumbprint, and the key directory.

A key is named by the thumbprint of its JWK (RFC 7638, OKP members from RFC 8037 §2), and
published in a JWKS served at ``DIRECTORY_PATH`` (draft-meunier-http-message-signatures-directory).
Reading the key file is here; where it lives is the operator's setting (``SIGNING_KEY``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from synapsecrawl.errors import SigningError

__all__ = [
    "DIRECTORY_MEDIA_TYPE",
    "DIRECTORY_PATH",
    "SigningKey",
    "generate_private_key_pem",
    "jwk_thumbprint",
    "key_directory",
    "load_private_key",
    "public_jwk",
]

DIRECTORY_PATH = "/.well-known/http-message-signatures-directory"
DIRECTORY_MEDIA_TYPE = "application/http-message-signatures-directory+json"
_ALG = "ed25519"
# RFC 7638 §3.2 required members, in lexicographic order; OKP from RFC 8037 §2
_THUMBPRINT_MEMBERS = {"OKP": ("crv", "kty", "x"), "EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n")}


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
