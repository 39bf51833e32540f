"""The exception tree of synapsecrawl.

    SynapseError            anything synapsecrawl raises on purpose
    ├── ConfigError         a setting or spider argument is wrong or beyond a cap
    │   ├── ProfileError    a profile file is missing or invalid
    │   └── ArgumentError   a start URL (-a url, urls_file) cannot be requested: exit status 2
    ├── StoreError          the knowledge base cannot be opened or written
    │   └── StoreUnavailable    ...for now: unreachable, read-only or full; the same write may succeed later
    └── SigningError        a key cannot be read or a signature cannot be made

Parsers never raise on content (a broken robots.txt, page or feed is data);
these are for what an operator or a user must fix. ``str(error)`` is one line
fit to show them as it is.
"""

from __future__ import annotations

__all__ = [
    "ArgumentError",
    "ConfigError",
    "ProfileError",
    "SigningError",
    "StoreError",
    "StoreUnavailable",
    "SynapseError",
]


class SynapseError(Exception):
    """Base of every error synapsecrawl raises on purpose."""


class ConfigError(SynapseError):
    """A setting or argument is invalid or beyond the profile's hard cap."""


class ProfileError(ConfigError):
    """A profile file is missing or does not validate."""


class ArgumentError(ConfigError):
    """A spider argument names a URL that cannot be requested (a usage error: exit status 2)."""


class StoreError(SynapseError):
    """The knowledge base cannot be opened, migrated or written."""


class StoreUnavailable(StoreError):
    """The knowledge base cannot take a write now (unreachable, read-only, out of space): hold it and try again.

    ``reason`` is one of ``unreachable``, ``read-only``, ``full``; the record that failed is not at fault.
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class SigningError(SynapseError):
    """A signing key is unusable or a signature cannot be produced."""
