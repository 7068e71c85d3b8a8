"""rigctl capture under the faults the switch is held to, through the CLI: its trace's disk full
mid-run (it stops and says what was kept, the apps' answers unharmed), a symbolic link where the
trace goes (refused, the target untouched), a file already there (never written over), the
upstream gone, Ctrl-C twice (tests/capture/test_capture_sim.py)."""

from __future__ import annotations

import json
import os
import re
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
        answered = 0
        with httpx.Client(timeout=30, trust_env=False) as client:
            for _ in range(12):
                try:
                    answer = client.post(
                        f"http://127.0.0.1:{port}/v1/completions", json={"model": "m", "prompt": prompt, "max_tokens": 1}
                    )
                except httpx.HTTPError:
                    break  # the capture stopped: the app sees nobody listening
                assert answer.status_code == 200 and answer.json()["choices"][0]["text"] == "ok"
                answered += 1
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 1 and "Traceback" not in err, err
        found = re.search(
            r"the trace cannot be written \(No space left on device\); the capture stopped with "
            r"(\d+) request\(s\) kept",
            err,
        )
        assert found, err
        kept = int(found.group(1))
        assert 1 <= kept < answered <= 12
        listed = ns.run("cat", str(out)).stdout.splitlines()
        assert len([json.loads(line) for line in listed if line.endswith("}")]) >= kept  # whole lines, header first
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
    assert f"{link}: already exists; a capture never writes over a file" in done.stderr
    assert target.read_text() == "mine\n" and link.is_symlink()
