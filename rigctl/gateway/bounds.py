"""The bounds every proxy carries on its clients' side, as nginx and uvicorn carry them: how long a
connection may take to send a request head, stay idle between requests, or pause inside a body;
how many connections are kept at once, and which one gives way at the cap; how deep one
connection's pipeline may go. An app that behaves never meets one; a client that opens
connections and sends nothing, or half a head, or a flood of pipelined requests, cannot take
the door down or grow it without bound.

The anchors (docs/guide/front-door.md has the table): nginx's client_header_timeout 60 s,
keepalive_timeout 75 s and client_body_timeout 60 s (between two reads of a body); uvicorn's
limit_concurrency, its keep-alive timer and its pause of reading while a pipelined request waits.
"""

from __future__ import annotations

import contextlib
import resource
from dataclasses import dataclass
from typing import Literal

# what the door waits for of a connection, each with its own clock (ConnectionBounds below):
# a head (header_s, from its first byte or the connection's opening), the next request of a
# kept-alive connection (keepalive_s), the rest of a body (body_s between two reads); "busy":
# the app waits for the door, and no clock of the app's runs
# "linger": closing as nginx's lingering close does (its answer written and the write side shut,
# what the app still sends is read and dropped for a while, so its kernel never resets the
# connection over unread bytes and loses the answer)
Waiting = Literal["head", "idle", "body", "busy", "linger"]

# descriptors kept apart from the apps' connections: the listening and control sockets, vLLM's
# idle keep-alive connections, /health probes, the recording's file, the log
RESERVED_FDS = 64
MAX_AUTO_CONNECTIONS = 8192  # with a descriptor limit of a million, still a cap an owner's box can hold
# nginx's lingering_timeout and lingering_time: a connection closed with the app still sending
LINGER_S = 5.0
LINGER_MAX_S = 30.0
PIPELINE_DEPTH = 16  # requests parsed ahead on one connection; past it the connection closes after them


@dataclass(frozen=True)
class ConnectionBounds:
    header_s: float = 60.0  # from a connection's first byte (or its opening) to the end of its head
    keepalive_s: float = 75.0  # between an answer's end and the next request's first byte
    body_s: float = 60.0  # between two reads of a request body
    max_connections: int = 0  # the apps' connections kept at once; 0: from the descriptor limit


def raise_descriptor_limit() -> int:
    """RLIMIT_NOFILE's soft limit raised to its hard limit (systemd starts a service at 1,024
    soft, 524,288 hard); the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        with contextlib.suppress(ValueError, OSError):
            target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    return soft


def connection_cap(descriptors: int, configured: int = 0) -> int:
    """The apps' connections the door keeps at once. Each one forwarding a request holds a second
    descriptor toward vLLM, so half of what is left after the reserve; `configured` (`[gateway]
    max_connections`) may lower it, never raise it past what the descriptors allow."""
    allowed = max(8, min(MAX_AUTO_CONNECTIONS, (descriptors - RESERVED_FDS) // 2))
    return min(configured, allowed) if configured > 0 else allowed
