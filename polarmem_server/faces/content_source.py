"""Where `polarmem mcp` may read image content from: local files and URLs, bounded.

Local files: regular files only, opened without blocking (a FIFO would block the reader until
a writer appears) and read at most ``limit + 1`` bytes (``/dev/zero`` or a growing file would
otherwise be read without end).

URLs: http(s) only; the host is resolved once, every address it resolves to must be allowed,
and the connection goes to the address that was checked (a second lookup could answer
differently: DNS rebinding). Loopback, private, link-local (cloud metadata at 169.254.169.254),
multicast, reserved and unspecified addresses are refused unless the operator allows them
(``--fetch-allow``: host names, addresses or networks). Redirects are not followed: the target
of a redirect has not been checked.
"""

from __future__ import annotations

import http.client
import ipaddress
import os
import socket
import ssl
import stat
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class ContentRefused(ValueError):
    """The content cannot be read; the message names the argument and why."""


def read_local_file(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file; ContentRefused for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ContentRefused(f"content_path: cannot read {str(path)[:200]!r} ({exc.strerror or exc})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ContentRefused(
                f"content_path: {str(path)[:200]!r} is not a regular file (a device, FIFO or socket is never read)"
            )
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise ContentRefused(f"content_path: cannot read {str(path)[:200]!r} ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ContentRefused(f"content_path: the file is over the {limit} byte limit")
    return data


@dataclass(frozen=True)
class FetchPolicy:
    """Which hosts `content_url` may reach. By default only public addresses; ``allowed`` adds
    host names (matched exactly, case-insensitive) and networks the operator trusts."""

    hosts: frozenset[str] = frozenset()
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> FetchPolicy:
        """From ``--fetch-allow`` entries: ``example.org``, ``127.0.0.1``, ``10.0.0.0/8``, ``::1``."""
        hosts, networks = set(), []
        for entry in (e.strip() for e in entries):
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                hosts.add(entry.lower().rstrip("."))
        return cls(frozenset(hosts), tuple(networks))

    def allows(self, host: str, address: Address) -> bool:
        if host.lower().rstrip(".") in self.hosts or any(address in n for n in self.networks):
            return True
        # An IPv6 address that carries an IPv4 one reaches that IPv4 host (through NAT64, a 6to4
        # relay, or the stack itself): it is judged by what it carries, so 64:ff9b::a9fe:a9fe is
        # 169.254.169.254, not a public IPv6 address (issue 49).
        carried = embedded_ipv4(address)
        if carried:
            return all(self.allows(host, inner) for inner in carried)
        return address.is_global and not address.is_multicast


# IPv6 prefixes whose addresses carry an IPv4 address in their last 32 bits: NAT64's well-known
# and local-use prefixes (RFC 6052, RFC 8215).
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_SIX_TO_FOUR = ipaddress.ip_network("2002::/16")
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")


def embedded_ipv4(address: Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible
    ::a.b.c.d, NAT64, 6to4, Teredo's server and client); [] for none or an IPv4 address."""
    if not isinstance(address, ipaddress.IPv6Address):
        return []
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    if address.teredo is not None:
        return list(address.teredo)
    if address.sixtofour is not None or address in _SIX_TO_FOUR:
        return [address.sixtofour] if address.sixtofour is not None else []
    last32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if any(address in prefix for prefix in _NAT64):
        return [last32]
    if address in _IPV4_COMPATIBLE and int(address) > 1:  # not :: (unspecified) or ::1 (loopback)
        return [last32]
    return []


def _resolve(host: str, port: int) -> list[Address]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise ContentRefused(f"content_url: cannot resolve host {host[:100]!r} ({exc})") from None
    return [ipaddress.ip_address(str(info[4][0]).split("%", 1)[0]) for info in infos]


class _PinnedHTTPConnection(http.client.HTTPConnection):
    """Connects to the checked address, whatever the host name would resolve to now."""

    def __init__(self, host: str, port: int, address: Address, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._address = str(address)

    def connect(self) -> None:
        self.sock = socket.create_connection((self._address, self.port), self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, address: Address, timeout: float) -> None:
        self._ssl_context = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._ssl_context)
        self._address = str(address)

    def connect(self) -> None:
        sock = socket.create_connection((self._address, self.port), self.timeout)
        self.sock = self._ssl_context.wrap_socket(sock, server_hostname=self.host)  # certificate checked for the name


def fetch_url(url: str, policy: FetchPolicy, limit: int, timeout_s: float) -> bytes:
    """At most ``limit`` bytes from an http(s) URL the policy allows; ContentRefused otherwise."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ContentRefused(f"content_url: only http(s) URLs with a host are fetched, got {url[:80]!r}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise ContentRefused(f"content_url: bad port in {url[:80]!r}") from None
    addresses = _resolve(parts.hostname, port)
    refused = [a for a in addresses if not policy.allows(parts.hostname, a)]
    if refused or not addresses:
        raise ContentRefused(
            f"content_url: {parts.hostname[:100]!r} resolves to {refused[0] if refused else 'nothing'}, "
            "a loopback, private, link-local or reserved address; the operator can allow it with "
            "`polarmem mcp --fetch-allow HOST_OR_NETWORK`"
        )
    connection_type = _PinnedHTTPSConnection if parts.scheme == "https" else _PinnedHTTPConnection
    connection = connection_type(parts.hostname, port, addresses[0], timeout_s)
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    try:
        connection.request("GET", target, headers={"User-Agent": "polarmem-mcp"})
        response = connection.getresponse()
        if response.status != 200:
            raise ContentRefused(
                f"content_url: cannot fetch {url[:120]!r} (HTTP {response.status} {response.reason}"
                + ("; redirects are not followed: send the final URL" if 300 <= response.status < 400 else "")
                + ")"
            )
        data = response.read(limit + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise ContentRefused(f"content_url: cannot fetch {url[:120]!r} ({exc})") from None
    finally:
        connection.close()
    if len(data) > limit:
        raise ContentRefused(f"content_url: the content is over the {limit} byte limit")
    return data
