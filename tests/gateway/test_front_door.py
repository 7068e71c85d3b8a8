"""The front door through the real CLI on the simulated rig: `rigctl gateway` on the apps' port,
vLLM moved behind it by the switch, the apps' requests held through a switch and released to the
new profile (or the restored one), the drain counted exactly, and the bounds of the hold."""

from __future__ import annotations

import json
import socket
import threading
import time

import httpx

from tests.support.door_rig import DoorRig
from tests.support.serving import LongRequest, ShortRequests, while_probed


def slow(rig: DoorRig) -> DoorRig:
    rig.env["RIGCTL_SIM_SPEED"] = "0.05"  # a generation of 100 tokens takes seconds
    return rig


def last_ending(rig: DoorRig) -> dict[str, object]:
    shown = rig.rigctl("history", "--switches", "--json")
    ending: dict[str, object] = json.loads(shown.stdout)[-1]
    return ending


def test_a_switch_under_live_traffic_is_only_latency_to_the_apps(rig: DoorRig) -> None:
    slow(rig).open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    record = rig.record()
    assert record["port"] != rig.port  # vLLM is behind the door, on a port of rigctl's choosing
    longs = [LongRequest(rig.port, 100) for _ in range(3)]
    for request in longs:
        request.start()
    assert all(request.started.wait(60) for request in longs)
    seen = rig.status()  # the serving bar's line: the door's requests in flight, by client
    assert seen["front_door"]["in_flight"] == 3 and "3 in flight (python-httpx/" in seen["summary"], seen["summary"]
    prober = ShortRequests(rig.port)
    switched = while_probed(prober, lambda: rig.rigctl("switch", "alt"))
    for request in longs:
        request.join(60)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert prober.errors == [], prober.errors  # held, then answered: never an error
    assert all(r.finish_reason == "length" and not r.error for r in longs), [(r.finish_reason, r.error) for r in longs]
    assert "0 cut" in switched.stdout and "apps: " in switched.stdout, switched.stdout
    ending = last_ending(rig)
    assert ending["status"] == "switched" and ending["cut"] == 0, ending
    finished = ending["finished"]
    assert isinstance(finished, int) and finished >= 3, ending  # the three long streams, seen to end
    assert rig.status()["active_profile"] == "alt"
    assert rig.serves()  # through the door
    scrape = rig.rigctl("exporter", "--once", "--rig", "box1").stdout
    assert f'rigctl_last_switch_drain_requests{{result="finished",rig="box1"}} {finished:.1f}' in scrape, scrape
    assert f'rigctl_last_switch_apps_requests{{result="held",rig="box1"}} {ending["held"]:.1f}' in scrape, scrape


def test_an_existing_rig_moves_behind_the_door_at_its_next_restart(rig: DoorRig) -> None:
    """The documented set-up: vLLM serves on the apps' port; the door waits for it, and the
    restart moves vLLM to an internal port while the door takes the apps' address."""
    assert rig.rigctl("switch", "good").returncode == 0
    rig.door = rig.popen("gateway")  # no --listen: the served profile's port
    said = rig.wait_for(rig.door, "is still held")
    assert f"127.0.0.1:{rig.port}" in said[-1]
    restarted = rig.rigctl("restart")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    rig.wait_for(rig.door, "the apps' address")
    assert rig.record()["port"] != rig.port
    assert rig.serves()  # the apps' address answers, through the door
    status = rig.status()  # what serves, and where the apps connect: the door, not vLLM's internal port
    assert status["front_door"]["listen"] == f"127.0.0.1:{rig.port}" and status["front_door"]["in_flight"] == 0, status
    assert status["summary"].endswith(f"| front door 127.0.0.1:{rig.port}: 0 in flight"), status["summary"]
    assert status["server"]["endpoint"] == f"http://127.0.0.1:{rig.record()['port']}", status


def test_the_drain_deadline_cuts_through_the_door_at_once_and_says_so(rig: DoorRig) -> None:
    slow(rig).open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    long = LongRequest(rig.port, 2000)
    long.start()
    assert long.started.wait(60)
    switched = rig.rigctl("switch", "alt", "--drain", "1")
    long.join(60)
    assert switched.returncode == 0, switched.stdout + switched.stderr
    assert "1 request(s) through the front door still running after 1 s: cut" in switched.stdout, switched.stdout
    assert long.finish_reason != "length" and long.chunks < 2000, (long.finish_reason, long.chunks)
    ending = last_ending(rig)
    assert (ending["finished"], ending["cut"]) == (0, 1), ending


def test_a_failed_switch_releases_the_held_requests_to_the_restored_profile(rig: DoorRig) -> None:
    rig.add_profile("crashes", '[env]\nRIGCTL_SIM_CRASH_AT = "load"\n')
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    prober = ShortRequests(rig.port)
    failed = while_probed(prober, lambda: rig.rigctl("switch", "crashes"))
    assert failed.returncode == 3, failed.stdout + failed.stderr
    assert "rolled back: good serves again" in failed.stderr and "apps: " in failed.stderr, failed.stderr
    assert prober.errors == [], prober.errors
    assert rig.status()["active_profile"] == "good"
    assert last_ending(rig)["status"] == "rolled_back"


def held_request(port: int, out: list[httpx.Response]) -> threading.Thread:
    def ask() -> None:
        out.append(
            httpx.post(
                f"http://127.0.0.1:{port}/v1/completions", json={"model": "qwen3.6-27b", "prompt": "x", "max_tokens": 2}, timeout=60
            )
        )

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


def test_the_hold_is_bounded_by_its_deadline_and_its_count(rig: DoorRig) -> None:
    """Past a bound a request is answered at once, 503 with Retry-After in vLLM's error shape."""
    from rigctl.gateway.control import DoorClient

    rig.write_config("[server]\nstop_grace = 3\n[gateway]\nhold_s = 1\nhold_requests = 1\n")
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    with DoorClient(rig.state_dir / "gateway.sock") as door:
        assert door.hold() == 0
        first: list[httpx.Response] = []
        waiting = held_request(rig.port, first)
        time.sleep(0.3)
        second = httpx.post(f"http://127.0.0.1:{rig.port}/v1/completions", json={"model": "m"}, timeout=10)
        assert second.status_code == 503 and "retry-after" in second.headers
        assert "already held (the bound)" in second.json()["error"]["message"]
        waiting.join(30)
        assert first and first[0].status_code == 503, first  # its 1 s passed
        assert first[0].json()["error"]["code"] == 503 and first[0].headers["retry-after"]
        seen = door.release()
    assert seen.held == 1 and seen.refused == 2, seen


def raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        got = b""
        while chunk := s.recv(65536):
            got += chunk
        return got


def test_only_a_path_is_forwarded_never_another_address(rig: DoorRig) -> None:
    rig.open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    for target in (b"@127.0.0.1:1/v1/models", b"http://127.0.0.1:1/v1/models", b"//evil/v1/models", b"*"):
        answer = raw(rig.port, b"GET " + target + b" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 400"), (target, answer[:200])
    answer = raw(rig.port, b"CONNECT 127.0.0.1:22 HTTP/1.1\r\nHost: 127.0.0.1:22\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert rig.serves()  # the door still serves


def test_listening_beyond_loopback_needs_the_flag_and_a_key(rig: DoorRig) -> None:
    refused = rig.rigctl("gateway", "--listen", f"0.0.0.0:{rig.port}")
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    keyless = rig.rigctl("gateway", "--listen", f"0.0.0.0:{rig.port}", "--allow-remote")
    assert keyless.returncode == 2 and "--api-key-file" in keyless.stderr, keyless.stderr
    key = rig.home / "door.key"
    key.write_text("s3cret-key\n")
    key.chmod(0o644)
    loose = rig.rigctl("gateway", "--listen", f"0.0.0.0:{rig.port}", "--allow-remote", "--api-key-file", str(key))
    assert loose.returncode == 2 and "chmod 600" in loose.stderr, loose.stderr
    key.chmod(0o600)
    said = rig.open_door("--listen", f"0.0.0.0:{rig.port}", "--allow-remote", "--api-key-file", str(key))
    assert rig.rigctl("switch", "good").returncode == 0
    assert not any("s3cret" in line for line in said)
    url = f"http://127.0.0.1:{rig.port}/v1/models"
    assert httpx.get(url, timeout=10).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer wrong"}, timeout=10).status_code == 401
    assert httpx.get(url, headers={"Authorization": "Bearer s3cret-key"}, timeout=10).status_code == 200


def test_credentials_in_the_upstream_url_are_never_written(rig: DoorRig) -> None:
    """--to with user:password@: not in what the door says, nor in the 503 an app gets (nothing
    listens there: what a booting or stopped server looks like, worth a retry)."""
    dead = rig.port + 1 if rig.port < 65000 else rig.port - 1
    said = rig.open_door("--to", f"http://admin:hunter2@127.0.0.1:{dead}")
    answer = httpx.get(f"http://127.0.0.1:{rig.port}/v1/models", timeout=30)
    _, out = rig.close_door()
    assert answer.status_code == 503 and "refuses connections" in answer.json()["error"]["message"], answer.text
    assert answer.headers["retry-after"]
    assert "hunter2" not in "".join(said) + out + answer.text and "admin" not in answer.text


def test_to_pointing_at_the_door_itself_is_refused(rig: DoorRig) -> None:
    refused = rig.rigctl("gateway", "--listen", f"127.0.0.1:{rig.port}", "--to", f"http://localhost:{rig.port}")
    assert refused.returncode == 2 and "itself" in refused.stderr, refused.stderr


def test_an_app_that_hangs_up_frees_the_engine(rig: DoorRig) -> None:
    """Cancellation passes through: the app's connection closed, vLLM's closes and it stops."""
    slow(rig).open_door()
    assert rig.rigctl("switch", "good").returncode == 0
    engine = f"http://127.0.0.1:{rig.record()['port']}"
    body = {"model": "qwen3.6-27b", "prompt": "a long story", "max_tokens": 2000, "stream": True}
    with httpx.stream("POST", f"http://127.0.0.1:{rig.port}/v1/completions", json=body, timeout=60) as answer:
        next(answer.iter_lines())
        assert "vllm:num_requests_running" in httpx.get(engine + "/metrics", timeout=10).text
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        running = [
            line
            for line in httpx.get(engine + "/metrics", timeout=10).text.splitlines()
            if line.startswith("vllm:num_requests_running")
        ]
        if all(line.endswith(" 0.0") for line in running):
            break
        time.sleep(0.2)
    assert all(line.endswith(" 0.0") for line in running), running
    status = json.loads(rig.rigctl("gateway", "--status", "--json").stdout)
    assert status["in_flight"] == 0 and status["counts"]["gone"] == 1, status


def test_sigterm_ends_the_door_cleanly_while_a_stream_runs(rig: DoorRig) -> None:
    slow(rig).open_door("--grace", "0.5")
    assert rig.rigctl("switch", "good").returncode == 0
    long = LongRequest(rig.port, 2000)
    long.start()
    assert long.started.wait(60)
    code, out = rig.close_door()
    long.join(30)
    assert code == 0 and "1 answer(s) still running were cut" in out, out
    assert long.finish_reason != "length"
    assert not (rig.state_dir / "gateway.sock").exists()


def test_the_dry_run_says_how_long_the_apps_will_wait_from_the_streams_in_flight(rig: DoorRig) -> None:
    """Two streams through the door, each at its own place in its max_tokens: the dry run says the
    drain from their pace, the boot from the target's last boot, and what cutting now saves."""
    slow(rig).open_door()
    assert rig.rigctl("switch", "alt").returncode == 0  # a boot of alt on record: its estimate
    assert rig.rigctl("switch", "good").returncode == 0
    longs = [LongRequest(rig.port, 400), LongRequest(rig.port, 2000)]
    for request in longs:
        request.start()
    assert all(request.started.wait(60) for request in longs)
    time.sleep(1.0)  # a pace to go by
    dry = rig.rigctl("switch", "alt", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    wait = json.loads(dry.stdout)["apps_wait"]
    assert wait["front_door"] is True and sorted(s["max_tokens"] for s in wait["streams"]) == [400, 2000], wait
    longest = max(s["remaining_s"] for s in wait["streams"])
    assert 0 < wait["drain_estimate_s"] == min(longest, 120.0), wait
    assert wait["apps_wait_s"] == wait["drain_estimate_s"] + wait["boot_estimate_s"], wait
    said = rig.rigctl("switch", "alt", "--dry-run").stdout
    assert "the apps will wait ~" in said and "2 stream(s) through the front door end in ~" in said, said
    assert "cutting them now instead (--drain 0; Cut in the TUI): the apps wait the boot (~" in said, said
