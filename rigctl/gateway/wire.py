"""HTTP/1.1 as the front door writes it: the request head sent on to vLLM, and the answers of its
own (a hold's 503, an upstream that did not answer), in the shape of vLLM's errors so an app
reports them as it would vLLM's."""

from __future__ import annotations

import json

# RFC 9110 7.6.1: these belong to one connection, never forwarded. Host is set again for the
# upstream connection; Expect is answered here (the body is sent once the request is admitted).
HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"host",
        b"expect",
    }
)
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
RETRY_AFTER_S = 5  # what a 503 of the door's own tells the app to wait
LAST_CHUNK = b"0\r\n\r\n"
REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    405: "Method Not Allowed",
    408: "Request Timeout",
    502: "Bad Gateway",
    503: "Service Unavailable",
}
ERROR_TYPES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    405: "BadRequestError",
    408: "RequestTimeout",
    502: "BadGateway",
    503: "ServiceUnavailable",
}


def request_head(
    method: bytes, target: bytes, version: str, headers: list[tuple[bytes, bytes]], host: bytes, chunked: bool
) -> bytes:
    """The head vLLM gets: the app's request line and headers, less the hop-by-hop ones, with the
    upstream's Host; a chunked body is sent on chunked (its framing is the connection's)."""
    lines = [b"%s %s HTTP/%s" % (method, target, version.encode()), b"host: " + host]
    lines += [k + b": " + v for k, v in headers if k.lower() not in HOP_BY_HOP]
    if chunked:
        lines.append(b"transfer-encoding: chunked")
    return b"\r\n".join(lines) + b"\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def error_body(status: int, message: str) -> bytes:
    """vLLM's error shape (an ErrorResponse), which the openai SDK reads as an APIError's message."""
    error = {"message": message, "type": ERROR_TYPES.get(status, "Error"), "param": None, "code": status}
    return json.dumps({"error": error}).encode()


def sse_error(status: int, message: str) -> bytes:
    """A stream's end as vLLM ends one that fails mid-answer: one error event, then [DONE]."""
    return b"data: " + error_body(status, message) + b"\n\ndata: [DONE]\n\n"


def error_answer(status: int, message: str, retry_after: int | None = None) -> bytes:
    """A whole answer of the front door's own; the connection closes after it (the app's body may
    not have been read)."""
    data = error_body(status, message)
    head = [
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}",
        "content-type: application/json",
        f"content-length: {len(data)}",
        "connection: close",
    ]
    if retry_after is not None:
        head.append(f"retry-after: {retry_after}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + data


def is_origin_form(target: bytes) -> bool:
    """`/path?query`, the only request-target the front door forwards: an absolute URL, an
    authority or `*` would make it a forward proxy (RFC 9112 3.2)."""
    return target.startswith(b"/") and not target.startswith(b"//")
