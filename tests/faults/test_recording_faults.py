"""The front door's recording into one file (`rigctl capture`) under the faults the switch is held
to, through the CLI: its disk full mid-run (the recording stops, saying what was kept, with whole
lines only; the door keeps forwarding, the apps' answers unharmed; the run ends 1), a symbolic
link where the trace goes (refused, the target untouched). A file already there, the upstream
gone and Ctrl-C twice: tests/gateway/test_capture.py."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.faults.rig import MountNamespace


class Answers(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        data = json.dumps(
            {"choices": [{"index": 0, "text": "ok"}], "usage": {"prompt_tokens": 50000, "completion_tokens": 1}}
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_full_disk_stops_the_capture_saying_what_was_kept(upstream: str, tmp_path: Path) -> None:
    ns = MountNamespace()
    try:
        place = tmp_path / "small"
        place.mkdir()
        done = ns.run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(place))
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        out = place / "day.jsonl"
        proc = subprocess.Popen(
            [*ns.prefix, sys.executable, "-m", "rigctl", "capture", "--to", upstream, "--listen", "127.0.0.1:0", "--out", str(out)],
            env=dict(os.environ),
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        port = re.search(r"127\.0\.0\.1:(\d+)", proc.stderr.readline()).group(1)  # type: ignore[union-attr]
        prompt = "many words " * 20000  # 220 KB a request: the 1 MB disk fills on the fifth
        with httpx.Client(timeout=30, trust_env=False) as client:
            for _ in range(8):  # every one answered: the recording stopping is never the apps' fault
                answer = client.post(
                    f"http://127.0.0.1:{port}/v1/completions", json={"model": "m", "prompt": prompt, "max_tokens": 1}
                )
                assert answer.status_code == 200 and answer.json()["choices"][0]["text"] == "ok"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 1 and "Traceback" not in err, err  # the trace asked for by name is incomplete
        found = re.search(
            r"recording stopped after (\d+) request\(s\) \(.*No space left on device\); the door keeps forwarding", err
        )
        assert found, err
        kept = int(found.group(1))
        assert 1 <= kept < 8
        listed = ns.run("cat", str(out)).stdout.splitlines()
        assert [json.loads(line)["endpoint"] for line in listed[1:]] == ["/v1/completions"] * kept  # whole lines only
    finally:
        ns.close()


def test_a_link_where_the_trace_goes_is_refused_and_its_target_untouched(upstream: str, tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("mine\n")
    link = tmp_path / "day.jsonl"
    link.symlink_to(target)
    done = subprocess.run(
        [sys.executable, "-m", "rigctl", "capture", "--to", upstream, "--out", str(link)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{link}: already exists; a recording never writes over a file" in done.stderr
    assert target.read_text() == "mine\n" and link.is_symlink()
