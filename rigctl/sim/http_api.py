"""The simulator's HTTP API: vLLM's endpoints on 127.0.0.1 (or the profile's host).

/health, /version, /load, /metrics, /v1/models, and OpenAI-style /v1/completions and
/v1/chat/completions, streamed (SSE) or not. Access lines go to the log the way uvicorn
writes them, except for endpoints the profile silenced.
"""

from __future__ import annotations

import json
import os
import queue
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rigctl.sim import exposition
from rigctl.sim.boot import VllmLog
from rigctl.sim.engine import EngineSim, Request, prompt_tokens

BODY_LIMIT = 256 * 1024 * 1024  # a body past this is refused and its connection closed


def context_refusal(prompt: int, max_tokens: int, max_model_len: int) -> str:
    """vLLM's 400 for a request that does not fit the context (its serving layer's two checks)."""
    if max_tokens > max_model_len:
        return f"max_tokens={max_tokens} cannot be greater than max_model_len={max_model_len}. Please request fewer output tokens."
    if prompt + max_tokens > max_model_len:
        return (
            f"This model's maximum context length is {max_model_len} tokens. However, you requested {prompt + max_tokens} "
            f"tokens ({prompt} in the messages, {max_tokens} in the completion). Please reduce the length of the messages "
            "or completion."
        )
    return ""


class SimServer(ThreadingHTTPServer):
    daemon_threads = True
    # uvicorn's backlog (its --backlog default): socketserver's 5 reset a burst of 32 to 64 streams
    request_queue_size = 2048
    engine: EngineSim
    log: VllmLog
    served_names: list[str]
    max_model_len: int
    api_keys: list[str]
    quiet_paths: set[str]
    cache_info: dict[str, str]
    started: float
    created: int
    auto_tools: bool  # --enable-auto-tool-choice with a --tool-call-parser


class Handler(BaseHTTPRequestHandler):
    server: SimServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return  # access lines are written by _access in uvicorn's format

    def _access(self, status: int) -> None:
        path = self.path.split("?")[0]
        if path not in self.server.quiet_paths:
            phrase = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}.get(status, "")
            self.server.log.uvicorn(
                f'{self.client_address[0]}:{self.client_address[1]} - "{self.command} {self.path} HTTP/1.1" {status} {phrase}'
            )

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self._access(status)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode())

    def _error(self, status: int, message: str, kind: str) -> None:
        self._json(status, {"error": {"message": message, "type": kind, "param": None, "code": status}})

    def _authorised(self) -> bool:
        if not self.server.api_keys or not self.path.startswith("/v1"):
            return True  # like vLLM, the key guards /v1 only; /metrics and /health stay open
        token = self.headers.get("authorization", "").removeprefix("Bearer ").strip()
        return token in self.server.api_keys

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if not self._authorised():
            self._json(401, {"error": "Unauthorized"})
        elif path in ("/health", "/ping"):
            self._send(200, b"")
        elif path == "/version":
            self._json(200, {"version": self.server.log.version})
        elif path == "/load":
            self._json(200, {"server_load": 0})
        elif path == "/metrics":
            with self.server.engine.lock:
                text = exposition.render(
                    self.server.engine.replicas[0].stats, self.server.served_names[0], self.server.cache_info, self.server.started
                )
            self._send(200, text.encode(), exposition.CONTENT_TYPE)
        elif path == "/v1/models":
            cards = [
                {
                    "id": name,
                    "object": "model",
                    "created": self.server.created,
                    "owned_by": "vllm",
                    "root": self.server.served_names[0],
                    "parent": None,
                    "max_model_len": self.server.max_model_len,
                }
                for name in self.server.served_names
            ]
            self._json(200, {"object": "list", "data": cards})
        else:
            self._json(404, {"detail": "Not Found"})

    def _read_body(self) -> bytes | None:
        """The request's body, read whole before anything is answered, as uvicorn reads (or
        discards) a body it refuses: left in a kept-alive connection, it would be read as the next
        request. None when it cannot be read (the connection then closes)."""
        try:
            length = int(self.headers.get("content-length", "0"))
        except ValueError:
            length = -1
        if not 0 <= length <= BODY_LIMIT:
            self.close_connection = True
            return None
        return self.rfile.read(length)

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        raw = self._read_body()
        if raw is None:
            self._error(400, "invalid Content-Length", "BadRequestError")
            return
        if path not in ("/v1/completions", "/v1/chat/completions"):
            self._json(404, {"detail": "Not Found"})
            return
        if not self._authorised():
            self._json(401, {"error": "Unauthorized"})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._error(400, "invalid JSON body", "BadRequestError")
            return
        if body.get("model") and body["model"] not in self.server.served_names:
            self._error(404, f"The model `{body['model']}` does not exist.", "NotFoundError")
            return
        chat = path.endswith("chat/completions")
        if chat and body.get("tool_choice") == "auto" and not self.server.auto_tools:
            # vLLM's renderer, word for word (vllm/renderers/online_renderer.py), HTTP 400
            self._error(
                400, '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set', "BadRequestError"
            )
            return
        text = " ".join(str(m.get("content", "")) for m in body.get("messages", [])) if chat else str(body.get("prompt", ""))
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        too_long = context_refusal(prompt_tokens(text), max_tokens, self.server.max_model_len)
        if too_long:
            self._error(400, too_long, "BadRequestError")
            return
        request = self.server.engine.submit(text, max_tokens)
        forced = _forced_tool(body) if chat else None
        if body.get("stream"):
            options = body.get("stream_options") or {}
            # RIGCTL_SIM_DROP_STREAMED_TOOL_CALLS: a streaming tool parser that loses the call (the
            # non-streamed path still has it), as qwen3_coder did after a reasoning block
            dropped = os.environ.get("RIGCTL_SIM_DROP_STREAMED_TOOL_CALLS") == "1"
            self._stream(
                request, chat, bool(isinstance(options, dict) and options.get("include_usage")), None if dropped else forced
            )
        else:
            self._complete(request, chat, forced)

    def _pieces(self, request: Request) -> Iterator[tuple[int, str | None]]:  # (tokens, finish reason)
        # What the engine made while the last chunk was being written goes out as one chunk, as
        # vLLM's output collector merges a request's outputs its API server has not taken yet: a
        # starved server streams fewer, larger chunks and the tokens keep the engine's pace (one
        # process streaming 32 answers otherwise falls behind two processes streaming 16 each).
        while True:
            tokens, reason = request.out.get()
            while reason is None:
                try:
                    more, reason = request.out.get_nowait()
                except queue.Empty:
                    break
                tokens += more
            yield tokens, reason
            if reason is not None:
                return

    def _stream(self, request: Request, chat: bool, usage: bool, forced: str | None = None) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")  # as uvicorn frames vLLM's StreamingResponse: an event a chunk
        self.end_headers()
        self._access(200)

        def event(data: bytes) -> None:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

        kind = "chat.completion.chunk" if chat else "text_completion"
        generated = 0
        try:
            for tokens, reason in self._pieces(request):
                generated += tokens
                text = " tok" * tokens
                choice: dict[str, object] = {"index": 0, "finish_reason": reason}
                if forced is not None:  # a forced call streams as tool_calls deltas: its name first, then arguments
                    first = generated == tokens
                    call: dict[str, object] = {"index": 0, "function": {"arguments": "" if first else " "}}
                    if first:
                        call.update({"id": f"chatcmpl-tool-{request.rid}", "type": "function"})
                        call["function"] = {"name": forced, "arguments": '{"said": "ok"}'}
                    choice["delta"] = {"tool_calls": [call]}
                else:
                    choice.update({"delta": {"content": text}} if chat else {"text": text})
                chunk = {
                    "id": request.rid,
                    "object": kind,
                    "created": int(time.time()),
                    "model": self.server.served_names[0],
                    "choices": [choice],
                }
                event(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            if usage:  # stream_options.include_usage: vLLM's last chunk has no choices, only the counts
                last = {
                    "id": request.rid,
                    "object": kind,
                    "created": int(time.time()),
                    "model": self.server.served_names[0],
                    "choices": [],
                    "usage": {
                        "prompt_tokens": request.prompt_tokens,
                        "completion_tokens": generated,
                        "total_tokens": request.prompt_tokens + generated,
                    },
                }
                event(f"data: {json.dumps(last)}\n\n".encode())
            event(b"data: [DONE]\n\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.server.engine.abort(request)
            self.close_connection = True

    def _complete(self, request: Request, chat: bool, forced: str | None = None) -> None:
        generated, finish = 0, "length"
        for tokens, reason in self._pieces(request):
            generated += tokens
            finish = reason or finish
        text = " tok" * generated
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
        choice.update({"message": {"role": "assistant", "content": text}} if chat else {"text": text})
        if forced is not None:
            call = {
                "id": f"chatcmpl-tool-{request.rid}",
                "type": "function",
                "function": {"name": forced, "arguments": '{"said": "ok"}'},
            }
            choice["message"] = {"role": "assistant", "content": None, "tool_calls": [call]}
        self._json(
            200,
            {
                "id": request.rid,
                "object": "chat.completion" if chat else "text_completion",
                "created": int(time.time()),
                "model": self.server.served_names[0],
                "choices": [choice],
                "usage": {
                    "prompt_tokens": request.prompt_tokens,
                    "completion_tokens": generated,
                    "total_tokens": request.prompt_tokens + generated,
                },
            },
        )


def _forced_tool(body: dict[str, Any]) -> str | None:
    """The function a tool_choice names (vLLM forces the call through structured output), or the
    first tool's for "required"; None when the model may answer in words."""
    choice, tools = body.get("tool_choice"), body.get("tools")
    if isinstance(choice, dict):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        return name if isinstance(name, str) else None
    if choice == "required" and isinstance(tools, list) and tools and isinstance(tools[0], dict):
        name = (tools[0].get("function") or {}).get("name")
        return name if isinstance(name, str) else None
    return None
