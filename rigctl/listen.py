"""HOST:PORT as the services that listen take it (the exporter, the front door): one reading, and
one rule for what counts as loopback."""

from __future__ import annotations

import ipaddress

from rigctl.errors import BadInputError


def parse_listen(text: str, where: str, any_port: bool = False) -> tuple[str, int]:
    """HOST:PORT ([v6]:PORT for IPv6) -> (host, port); BadInputError naming `where` otherwise.
    `any_port`: port 0 (the kernel's pick, said once bound) is taken too."""
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not (0 if any_port else 1) <= int(port) < 65536:
        raise BadInputError(f"{where}: {text!r} is not HOST:PORT (e.g. 127.0.0.1:9477)")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
