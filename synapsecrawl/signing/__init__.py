"""Web Bot Auth (RFC 9421 request signatures): keys, signing, verifying.

One module per idea (httpx's habit): ``keys`` (Ed25519 keys, their JWK and the key
directory), ``sign`` (our requests and the directory response), ``verify`` (checking
a signature). The public names are re-exported here, so callers write
``from synapsecrawl.signing import load_private_key``.
"""

from synapsecrawl.signing.keys import (
    DIRECTORY_MEDIA_TYPE,
    DIRECTORY_PATH,
    SigningKey,
    generate_private_key_pem,
    jwk_thumbprint,
    key_directory,
    load_private_key,
    public_jwk,
)
from synapsecrawl.signing.sign import sign_directory_response, sign_request, signature_agent_header, signature_agent_url
from synapsecrawl.signing.verify import VerifyResult, verify_request

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
