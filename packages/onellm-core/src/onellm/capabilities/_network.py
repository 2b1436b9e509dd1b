"""The network grant: entries, address classes, and the check made when a connection opens.

Entries are `host`, `*.suffix` (subdomains, not the apex), `host:port`, an address or a CIDR range (with an optional
port for an address), or `localhost`. A name entry never reaches a loopback, private, link-local or otherwise
non-public address, whatever the name resolves to; the address is checked when the connection is made, so a name that
resolves to a public address for the first lookup and a private one for the second still fails. Address, range and
`localhost` entries do grant the addresses they name.

IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, translated `::ffff:0:a.b.c.d`,
NAT64 `64:ff9b::/96` and `64:ff9b:1::/48`, 6to4 `2002::/16`, Teredo `2001::/32`) are classified by the IPv4 address
they carry, and match IPv4 address entries through it.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from onellm.errors import BadDefinitionError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_V4_NOT_PUBLIC = tuple(
    ipaddress.IPv4Network(n)
    for n in (
        "0.0.0.0/8",  # this network; 0.0.0.0 reaches the local host
        "10.0.0.0/8",
        "100.64.0.0/10",  # shared address space (carrier NAT)
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "192.168.0.0/16",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",
        "240.0.0.0/4",
        "255.255.255.255/32",
    )
)
_V6_NOT_PUBLIC = tuple(
    ipaddress.IPv6Network(n)
    for n in (
        "::/128",
        "::1/128",
        "::/96",  # IPv4-compatible (deprecated); classified through the IPv4 part when it has one
        "::ffff:0:0/96",
        "::ffff:0:0:0/96",
        "64:ff9b:1::/48",  # local-use NAT64
        "100::/64",  # discard
        "2001::/23",  # IETF protocol assignments (Teredo, ORCHID, benchmarking, ...)
        "2001:db8::/32",
        "2002::/16",  # 6to4; classified through the IPv4 part
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing SIDs
        "fc00::/7",
        "fe80::/10",
        "fec0::/10",
        "ff00::/8",
    )
)
_V6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_V4_LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")
_V6_LOOPBACK = ipaddress.IPv6Network("::1/128")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")
_COMPAT = ipaddress.IPv6Network("::/96")
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries or translates to (none for a plain IPv6 address)."""
    value = int(address)
    found: list[ipaddress.IPv4Address] = []
    if address in _MAPPED or address in _TRANSLATED or address in _NAT64 or (address in _COMPAT and value > 1):
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    elif address in _NAT64_LOCAL:
        # RFC 6052 with a /48 prefix: 16 bits at 48..63, then the reserved octet, then 16 bits at 72..87. The last
        # 32 bits are offered as well, because translators are not consistent.
        high = (value >> 64) & 0xFFFF
        low = (value >> 40) & 0xFFFF
        found.append(ipaddress.IPv4Address((high << 16) | low))
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    elif address in _SIX_TO_FOUR:
        found.append(ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF))
    elif address in _TEREDO:
        found.append(ipaddress.IPv4Address((value >> 64) & 0xFFFFFFFF))  # server
        found.append(ipaddress.IPv4Address(~value & 0xFFFFFFFF))  # client, obfuscated
    return found


def _strip_zone(text: str) -> str:
    return text.split("%", 1)[0]


_V4_PART = re.compile(r"^(0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*)$")


def parse_ipv4_loose(text: str) -> ipaddress.IPv4Address | None:
    """Parse the IPv4 spellings `inet_aton` accepts (`127.1`, `0x7f.0.0.1`, `2130706433`, `0177.0.0.1`).

    Resolvers accept these as names, so a host is treated as the address it spells.
    """
    if not text or text.endswith(".."):
        return None
    parts = text.rstrip(".").split(".") if text.count(".") <= 4 else []
    if not parts or len(parts) > 4 or not all(_V4_PART.match(p) for p in parts):
        return None
    values = []
    for p in parts:
        if p[:2].lower() == "0x":
            values.append(int(p[2:] or "0", 16))
        elif p.startswith("0") and len(p) > 1:
            values.append(int(p, 8))
        else:
            values.append(int(p))
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    number = 0
    for v in head:
        number = number * 256 + v
    number = (number << (8 * (4 - len(head)))) | last
    return ipaddress.IPv4Address(number)


def parse_address(text: str) -> IPAddress | None:
    """An address literal (brackets and an IPv6 zone allowed, loose IPv4 spellings accepted), or None for a name."""
    t = text.strip()
    if t.startswith("[") and t.endswith("]"):
        t = t[1:-1]
    t = _strip_zone(t)
    try:
        return ipaddress.ip_address(t)
    except ValueError:
        pass
    return parse_ipv4_loose(t)


def address_views(address: IPAddress) -> list[IPAddress]:
    """The address itself and every IPv4 address it embeds."""
    views: list[IPAddress] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        views.extend(embedded_ipv4(address))
    return views


def is_public(address: IPAddress) -> bool:
    """True for an address a public-only grant may reach: global unicast, and so is every IPv4 address it carries."""
    if isinstance(address, ipaddress.IPv4Address):
        return not any(address in net for net in _V4_NOT_PUBLIC)
    if address in _MAPPED or address in _TRANSLATED or address in _NAT64 or address in _SIX_TO_FOUR:
        return all(is_public(v4) for v4 in embedded_ipv4(address))
    if address not in _V6_GLOBAL_UNICAST:
        return False
    return not any(address in net for net in _V6_NOT_PUBLIC)


def is_loopback(address: IPAddress) -> bool:
    """True for 127.0.0.0/8, ::1 and every IPv6 form carrying a 127.x address."""
    for view in address_views(address):
        if isinstance(view, ipaddress.IPv4Address):
            if view in _V4_LOOPBACK:
                return True
        elif view in _V6_LOOPBACK:
            return True
    return False


def normalize_host(host: str) -> str:
    """Lower-case, IDNA-encoded, trailing dot dropped; address literals in their canonical text."""
    h = host.strip()
    if h.startswith("[") and h.endswith("]"):
        h = h[1:-1]
    addr = parse_address(h)
    if addr is not None:
        return str(addr)
    h = h.rstrip(".").lower()
    if not h.isascii():
        try:
            h = h.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise ValueError(f"host {host!r} is not a valid name") from exc
    return h


_NAME_RE = re.compile(
    r"^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$"
)


@dataclass(frozen=True, slots=True, order=True)
class NetworkEntry:
    """One parsed network entry."""

    kind: Literal["name", "suffix", "address", "localhost"]
    value: str
    """The name, the suffix (without `*.`), the network in CIDR form, or `localhost`."""
    port: int | None = None

    @classmethod
    def parse(cls, text: str) -> NetworkEntry:
        """Parse one entry. Raises `ValueError` naming the entry when it is not one of the accepted forms."""
        raw = text.strip()
        if not raw:
            raise ValueError("empty network entry")
        if "://" in raw or "@" in raw:
            raise ValueError(f"network entry {text!r} must be a host, not a URL")
        port: int | None = None
        body = raw
        if "/" in raw:
            try:
                net = ipaddress.ip_network(raw, strict=False)
            except ValueError as exc:
                raise ValueError(f"network entry {text!r} is not a valid CIDR range") from exc
            return cls("address", str(net))
        if body.startswith("["):
            close = body.find("]")
            if close < 0:
                raise ValueError(f"network entry {text!r} has an unclosed '['")
            rest = body[close + 1 :]
            body = body[1:close]
            if rest:
                if not rest.startswith(":"):
                    raise ValueError(f"network entry {text!r} has text after ']'")
                port = _parse_port(rest[1:], text)
        elif body.count(":") == 1:
            body, port_text = body.split(":")
            port = _parse_port(port_text, text)
        try:
            addr = ipaddress.ip_address(_strip_zone(body))
        except ValueError:
            addr = None
        if addr is not None:
            bits = 32 if isinstance(addr, ipaddress.IPv4Address) else 128
            return cls("address", f"{addr}/{bits}", port)
        lowered = body.lower().rstrip(".")
        if lowered == "localhost":
            return cls("localhost", "localhost", port)
        if lowered.startswith("*."):
            suffix = normalize_host(lowered[2:])
            if not _NAME_RE.match(suffix):
                raise ValueError(f"network entry {text!r} is not a valid wildcard name")
            return cls("suffix", suffix, port)
        if "*" in lowered:
            raise ValueError(f"network entry {text!r}: a wildcard is allowed only as a leading '*.'")
        name = normalize_host(lowered)
        if parse_address(name) is not None:
            raise ValueError(f"network entry {text!r} spells an address in a non-standard form; write it plainly")
        if not _NAME_RE.match(name):
            raise ValueError(f"network entry {text!r} is not a valid host name")
        return cls("name", name, port)

    def __str__(self) -> str:
        if self.kind == "suffix":
            base = f"*.{self.value}"
        elif self.kind == "address":
            net = ipaddress.ip_network(self.value)
            if net.num_addresses == 1:
                base = str(net.network_address)
                if self.port is not None and net.version == 6:
                    base = f"[{base}]"
            else:
                base = self.value
        else:
            base = self.value
        return f"{base}:{self.port}" if self.port is not None else base

    @property
    def network(self) -> IPNetwork:
        return ipaddress.ip_network(self.value)

    def matches_name(self, host: str, port: int) -> bool:
        """Whether the entry covers a URL's host and port, before any address is known."""
        if self.port is not None and self.port != port:
            return False
        if self.kind == "name":
            return host == self.value
        if self.kind == "suffix":
            return host.endswith("." + self.value)
        if self.kind == "localhost":
            if host == "localhost" or host.endswith(".localhost"):
                return True
            addr = parse_address(host)
            return addr is not None and is_loopback(addr)
        addr = parse_address(host)
        return addr is not None and _in_network(addr, self.network)


def valid_port(port: object) -> bool:
    """Whether `port` is a TCP port a connection can be made to: an int from 1 to 65535."""
    return isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535


def _parse_port(text: str, entry: str) -> int:
    # ASCII digits only: `str.isdigit` also says yes to superscripts (which `int` refuses) and to other scripts'
    # digits (which `int` reads, and a URL never carries).
    if not (text.isascii() and text.isdigit()) or not valid_port(int(text)):
        raise ValueError(f"network entry {entry!r} has an invalid port {text!r} (ports are 1 to 65535)")
    return int(text)


def _in_network(address: IPAddress, network: IPNetwork) -> bool:
    return any(view.version == network.version and view in network for view in address_views(address))


def _same_address(a: IPAddress, b: IPAddress) -> bool:
    av = {str(v) for v in address_views(a)}
    return any(str(v) in av for v in address_views(b))


def _intersect_entry(a: NetworkEntry, b: NetworkEntry) -> NetworkEntry | None:
    if a.port is not None and b.port is not None and a.port != b.port:
        return None
    port = a.port if a.port is not None else b.port
    kinds = {a.kind, b.kind}
    if kinds <= {"name", "suffix"}:
        if a.kind == "name" and b.kind == "name":
            return NetworkEntry("name", a.value, port) if a.value == b.value else None
        if a.kind == "name":
            return NetworkEntry("name", a.value, port) if a.value.endswith("." + b.value) else None
        if b.kind == "name":
            return NetworkEntry("name", b.value, port) if b.value.endswith("." + a.value) else None
        if a.value == b.value or a.value.endswith("." + b.value):
            return NetworkEntry("suffix", a.value, port)
        if b.value.endswith("." + a.value):
            return NetworkEntry("suffix", b.value, port)
        return None
    if kinds == {"localhost"}:
        return NetworkEntry("localhost", "localhost", port)
    if kinds == {"address"}:
        na, nb = a.network, b.network
        if na.version != nb.version:
            return None
        if na.subnet_of(nb):  # type: ignore[arg-type]
            return NetworkEntry("address", str(na), port)
        if nb.subnet_of(na):  # type: ignore[arg-type]
            return NetworkEntry("address", str(nb), port)
        return None
    if kinds == {"address", "localhost"}:
        net = a.network if a.kind == "address" else b.network
        loop: IPNetwork = _V4_LOOPBACK if net.version == 4 else _V6_LOOPBACK
        if net.subnet_of(loop):  # type: ignore[arg-type]
            return NetworkEntry("address", str(net), port)
        if loop.subnet_of(net):  # type: ignore[arg-type]
            return NetworkEntry("address", str(loop), port)
        return None
    return None


@dataclass(frozen=True, slots=True)
class NetworkGrant:
    """Which hosts tools may connect to. Off when it has no entries and `any_public` is false."""

    any_public: bool = False
    """Every public host and address (never loopback, private or link-local)."""
    entries: frozenset[NetworkEntry] = frozenset()

    @classmethod
    def of(cls, *entries: str) -> NetworkGrant:
        """A grant of the entries named (see `NetworkEntry.parse`).

        Raises:
            ValueError: an entry is not one of the accepted forms.
        """
        return cls(False, frozenset(NetworkEntry.parse(e) for e in entries))

    @property
    def enabled(self) -> bool:
        return self.any_public or bool(self.entries)

    @property
    def key(self) -> tuple[bool, tuple[NetworkEntry, ...]]:
        """Equal for grants that allow the same connections by the same entries: the connection pool key."""
        return (self.any_public, tuple(sorted(self.entries)))

    def union(self, other: NetworkGrant) -> NetworkGrant:
        return NetworkGrant(self.any_public or other.any_public, self.entries | other.entries)

    def intersect(self, other: NetworkGrant) -> NetworkGrant:
        if self.any_public and other.any_public:
            return NetworkGrant(True, _public_names(self.entries) | _public_names(other.entries))
        result: set[NetworkEntry] = set()
        if self.any_public:
            result |= _public_names(other.entries)
        if other.any_public:
            result |= _public_names(self.entries)
        for a in self.entries:
            for b in other.entries:
                both = _intersect_entry(a, b)
                if both is not None:
                    result.add(both)
        return NetworkGrant(False, frozenset(result))

    def allows_host(self, host: str, port: int) -> bool:
        """The check made before anything is sent: could some address of `host:port` be allowed?

        A port outside 1-65535 is never allowed.
        """
        if not valid_port(port):
            return False
        h = normalize_host(host)
        if self.any_public:
            addr = parse_address(h)
            if addr is None or is_public(addr):
                return True
        return any(e.matches_name(h, port) for e in self.entries)

    def allows_connection(self, host: str, port: int, address: str | IPAddress) -> bool:
        """The check made when a connection opens: `host` is the URL's host, `address` the one about to be dialled.

        The host must pass `allows_host`, and the address must be granted: a public address through a name entry
        matching the host (or `any_public`), any other address only through an address, range or `localhost` entry
        that covers it. So a name entry never reaches a private address by itself, and a connection never reaches an
        address the grant does not name or treat as public.
        """
        if not valid_port(port):
            return False
        try:
            h = normalize_host(host)
        except ValueError:
            return False
        addr = address if not isinstance(address, str) else parse_address(address)
        if addr is None:
            return False
        literal = parse_address(h)
        if literal is not None and not _same_address(literal, addr):
            return False
        if not self.allows_host(h, port):
            return False
        for entry in self.entries:
            if entry.port is not None and entry.port != port:
                continue
            if entry.kind == "address" and _in_network(addr, entry.network):
                return True
            if entry.kind == "localhost" and is_loopback(addr):
                return True
        if not is_public(addr):
            return False
        if self.any_public:
            return True
        return any(e.kind in ("name", "suffix") and e.matches_name(h, port) for e in self.entries)

    def to_data(self) -> dict[str, Any]:
        """The `network` part of the saved summary: `anyPublic`, and the entries as sorted text."""
        return {"anyPublic": self.any_public, "hosts": sorted(str(e) for e in self.entries)}

    @classmethod
    def from_data(cls, data: Mapping[str, Any], path: str) -> NetworkGrant:
        """Rebuild the grant from its saved part.

        Raises:
            BadDefinitionError: the part is not well formed (the path names the key).
        """
        hosts = data.get("hosts", [])
        if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
            raise BadDefinitionError("expected a list of strings", path=f"{path}.hosts")
        try:
            grant = cls.of(*hosts)
        except ValueError as exc:
            raise BadDefinitionError(str(exc), path=f"{path}.hosts") from None
        any_public = data.get("anyPublic", False)
        if not isinstance(any_public, bool):
            raise BadDefinitionError("expected true or false", path=f"{path}.anyPublic")
        return cls(any_public, grant.entries)


def _public_names(entries: frozenset[NetworkEntry]) -> frozenset[NetworkEntry]:
    return frozenset(e for e in entries if e.kind in ("name", "suffix"))


async def system_resolve(host: str, port: int) -> list[str]:
    """Resolve a host with the system resolver (through anyio), every address family, in the order returned."""
    import anyio

    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        addr = str(sockaddr[0])
        if addr not in seen:
            seen.append(addr)
    return seen
