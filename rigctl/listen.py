"""HOST:PORT as the services that listen take it (the exporter, the front door): one reading (the
rule rules.Listen, which config.toml's listen keys pass too), and one rule for what counts as loopback."""

from __future__ import annotations

import ipaddress

from rigctl.errors import BadInputError
from rigctl.rules import Listen, RuleError, complaint


def parse_listen(text: str, where: str, any_port: bool = False) -> tuple[str, int]:
    """HOST:PORT ([v6]:PORT for IPv6) -> (host, port); BadInputError naming `where` otherwise.
    `any_port`: port 0 (the kernel's pick, said once bound) is taken too."""
    try:
        return Listen(any_port).split(text)
    except RuleError as exc:
        raise BadInputError(f"{where}: {complaint(exc, text)}") from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def shown(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
