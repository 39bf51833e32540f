"""Which addresses a crawl may connect to, and static name resolution.

A KB user can type any URL, so by default a crawl refuses loopback, private,
link-local, shared (CGNAT), multicast, reserved and cloud-metadata addresses
after resolution and on every redirect hop. ``ALLOW_PRIVATE_ADDRESSES``
lifts that for tests and intranet installs. ``HOST_RESOLVE`` maps names to
addresses like curl's ``--resolve`` (``host=ip,*.example.test=ip``).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from synapsecrawl.errors import ConfigError

__all__ = ["HostMap", "forbidden_reason", "parse_host_resolve"]

_METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}


def forbidden_reason(address: str) -> str | None:
    """Why a crawl must not connect to ``address``, or None when it may."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return None  # a name: judged once it resolves
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip in _METADATA:
        return "cloud metadata address"
    for reason, flag in (
        ("unspecified address", ip.is_unspecified),
        ("loopback address", ip.is_loopback),
        ("link-local address", ip.is_link_local),
        ("private address", ip.is_private),
        ("multicast address", ip.is_multicast),
        ("reserved address", ip.is_reserved),
    ):
        if flag:
            return reason
    if isinstance(ip, ipaddress.IPv4Address) and ip in ipaddress.ip_network("100.64.0.0/10"):
        return "shared address space"
    return None


@dataclass(frozen=True)
class HostMap:
    """Static name resolution: exact names first, then the longest ``*.`` suffix."""

    exact: dict[str, str]
    wildcards: tuple[tuple[str, str], ...]  # (".suffix", ip), longest first

    def lookup(self, host: str) -> str | None:
        """The address ``host`` maps to, or None to resolve it normally."""
        host = host.rstrip(".").lower()
        if host in self.exact:
            return self.exact[host]
        for suffix, ip in self.wildcards:
            if host.endswith(suffix):
                return ip
        return None


def parse_host_resolve(spec: str) -> HostMap:
    """Parse ``HOST_RESOLVE``; raises ConfigError naming the bad entry."""
    exact: dict[str, str] = {}
    wildcards: list[tuple[str, str]] = []
    for entry in filter(None, (part.strip() for part in spec.split(","))):
        name, sep, address = entry.partition("=")
        name, address = name.strip().lower().rstrip("."), address.strip()
        try:
            ipaddress.ip_address(address)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise ConfigError(f"HOST_RESOLVE entry {entry!r} is not NAME=IP (e.g. *.example.test=127.0.0.1)")
        if name.startswith("*."):
            wildcards.append((name[1:], address))
        else:
            exact[name] = address
    wildcards.sort(key=lambda pair: len(pair[0]), reverse=True)
    return HostMap(exact, tuple(wildcards))
