"""Fault 14: `rigctl metrics` against an endpoint that misbehaves: no overall deadline (a byte
every second kept it forever), only the exception's class name as the cause, and exit 0 on an
empty answer with every figure n/a."""

from __future__ import annotations

import json

import pytest

from tests.faults.rig import Rig
from tests.support.bad_servers import bad_server


def test_a_trickling_server_cannot_hold_metrics_past_its_deadline(rig: Rig) -> None:
    with bad_server("trickle") as server:
        # the answer would take 17 minutes at a byte a second: rigctl ending at all (inside the
        # harness's 60 s) with the deadline's words shows the 5 s covers the whole answer, with no
        # bound on how fast a loaded machine runs it
        done = rig.rigctl("metrics", "--url", server.url, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == f"rigctl: cannot read {server.url}/metrics: timed out: no complete answer within 5 s"


@pytest.mark.parametrize(
    "behaviour,said",
    [
        ("garbage", "not an HTTP answer: not an HTTP/1.x status line: 'SSH-2.0-OpenSSH_9.6'"),
        ("empty", "answered, but with no vLLM metrics (0 other samples): is a vLLM server listening there?"),
        ("not-vllm", "answered, but with no vLLM metrics (2 other samples): is a vLLM server listening there?"),
    ],
)
def test_an_endpoint_that_is_not_vllm_is_an_error_that_says_why(rig: Rig, behaviour: str, said: str) -> None:
    with bad_server(behaviour) as server:
        done = rig.rigctl("metrics", "--url", server.url, "--json")
    (line,) = done.stderr.strip().splitlines()
    assert done.returncode == 1 and said in line and server.url in line
    # --json: the same one line as the only object on stdout, with the exit code
    assert json.loads(done.stdout) == {"error": line.removeprefix("rigctl: "), "exit_code": 1}


def test_a_refused_connection_says_nothing_listens(rig: Rig) -> None:
    done = rig.rigctl("metrics", "--url", f"http://127.0.0.1:{rig.port}")
    assert done.returncode == 1
    assert "connection refused (nothing listens there)" in done.stderr
