"""What the TUI costs beside vLLM, measured on the real app in a real pseudo-terminal.

Setup: a simulated 2x3090 rig serving qwen36-27b-awq-tp2 (the simulator as a separate
process), a synthetic load in another process so the engine figures and the log move, and
`rigctl` itself started in a pty as an owner would start it. Nothing is imported into this
process that the app uses; every figure is read from outside through psutil.

  cpu     user+system CPU seconds of the rigctl process per wall second over --seconds
          (default 60) at the default 1 s refresh, at 160x48 (GPU cards, engine panel and the
          log tail all live) and at 80x24 (no tail), and at 160x48 with a 2 s refresh;
          baselines in the same pty: a bare Textual app with a footer, and a one-line live
          Textual app (the floor of any 1 Hz Textual dashboard)
  start   wall seconds from exec to the first frame (the footer's keys on the terminal),
          median of 5; baseline: the bare Textual app
  status  wall seconds of `rigctl status --json`, median of 10; baseline: `python -c pass`
  flood   10,000 log lines a second for 10 s appended to the server log while the log
          screen shows it: peak RSS, and key latency (d/l round trips, from the key to
          the new screen's text on the terminal)
  peers   against what an owner would run instead, all on the same fake libnvidia-ml
          (benchmarks/with_fake_nvml.py; the real pynvml above it), interleaved rounds at a
          1 s refresh, 120x40: rigctl with nothing serving (GPU cards only), rigctl with the
          engine panel and the log tail (160x48, the simulator serving under load), nvitop
          (--interval 1), the one-line live Textual app, and rigctl with the trends screen open
          (120x40, a month of record seeded), and vllm-top (--interval 1, on the simulator under
          load: nvitop and vllm-top side by side are what an owner runs without rigctl); then the
          ratios and the budget (docs/guide/costs.md): the full dashboard at most 0.25x nvitop +
          vllm-top, the GPU cards alone at most nvitop, RSS at most nvitop's + vllm-top's; trends
          within 3x the floor. Also
          `rigctl status --json` against `gpustat --json` and `nvitop --once` on the same
          driver, and against a bare `python -c "import pynvml, psutil"`
          (needs `pip install -e '.[bench]'`: nvitop and gpustat, benchmark-only)

Run:  python benchmarks/bench_tui.py [--seconds 60] [--only cpu,start,status,flood,peers] [--rounds 3]
Prints figures and method; asserts nothing (timings belong here, not in tests).
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from figures import figure  # benchmarks/ is not a package: its own directory on the path

PYTHON = sys.executable
# Every program is measured as an owner runs it: installed, its bytecode cached. Where the shell sets
# PYTHONDONTWRITEBYTECODE (this project's sandboxes do), rigctl, run from its source tree, would
# compile its own modules at every start, while Textual's, nvitop's and gpustat's were compiled when
# pip installed them: the start and `status` figures read 1.2x-1.5x worse than an owner sees. Each
# start below is measured after one unmeasured run that writes the cache.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
RIG = "2x3090-nvlink"
PROFILE = "qwen36-27b-awq-tp2"
BARE_APP = (
    "from textual.app import App\nfrom textual.widgets import Footer, Static\n"
    "class Bare(App):\n    BINDINGS=[('q','quit','Quit')]\n"
    "    def compose(self):\n        yield Static('bare')\n        yield Footer()\nBare().run()\n"
)
# The least any 1 Hz dashboard does: a thread wakes once a second and posts a message, and
# one line of text changes. What rigctl costs above this is its own work.
LIVE_APP = (
    "import threading, time\nfrom textual.app import App\nfrom textual.message import Message\n"
    "from textual.widgets import Footer, Static\n"
    "class Tick(Message):\n    pass\n"
    "class Live(App):\n    BINDINGS=[('q','quit','Quit')]\n"
    "    def compose(self):\n        yield Static('live', id='s')\n        yield Footer()\n"
    "    def on_mount(self):\n        threading.Thread(target=self.loop, daemon=True).start()\n"
    "    def loop(self):\n        while True:\n            time.sleep(1)\n"
    "            self.post_message(Tick())\n"
    "    def on_tick(self, message):\n"
    "        self.query_one('#s', Static).update(f'{time.time():.3f}', layout=False)\n"
    "Live().run()\n"
)


class Terminal:
    """A child process on a pty of a given size, its output drained and searchable."""

    def __init__(self, argv: list[str], env: dict[str, str], size: tuple[int, int]) -> None:
        self.started = time.monotonic()
        pid, fd = pty.fork()
        if pid == 0:  # the child: becomes the app
            os.execvpe(argv[0], argv, env)
        self.pid, self.fd = pid, fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        self.process = psutil.Process(pid)
        self.seen = b""

    def drain(self, timeout: float = 0.05) -> bytes:
        chunk = b""
        while select.select([self.fd], [], [], timeout)[0]:
            try:
                data = os.read(self.fd, 65536)
            except OSError:
                break
            if not data:
                break
            chunk += data
            timeout = 0
        self.seen = (self.seen + chunk)[-200_000:]
        return chunk

    def wait_for(self, text: bytes, limit: float = 30.0) -> float:
        """Seconds until `text` appears in new output (inf if it never does)."""
        start, buffer = time.monotonic(), b""
        while time.monotonic() - start < limit:
            buffer = (buffer + self.drain(0.01))[-100_000:]
            if text in buffer:
                return time.monotonic() - start
        return float("inf")

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.drain(0.1)

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def close(self) -> None:
        try:
            self.send("q")
            for _ in range(50):
                self.drain(0.05)
                if not self.process.is_running() or self.process.status() == psutil.STATUS_ZOMBIE:
                    break
        finally:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            os.close(self.fd)


class Rig:
    """Isolated state and config dirs, the simulator serving the profile, a load generator."""

    def __init__(self, load: bool) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="rigctl-bench-"))
        port = self.port = free_port()
        self.env = {
            **os.environ,
            "RIGCTL_STATE_DIR": str(self.home / "state"),
            "RIGCTL_CONFIG_DIR": str(self.home / "config"),
            "RIGCTL_SIM": RIG,
            "RIGCTL_SIM_TIME_SCALE": "0.02",
            "TERM": "xterm-256color",
            "COLUMNS": "",
            "LINES": "",
        }
        user = self.home / "config" / "profiles"
        user.mkdir(parents=True)
        (user / "qwen36-27b-base.toml").write_text(f'extends = "qwen36-27b-base"\n[vllm]\nport = {port}\n')
        subprocess.run([PYTHON, "-m", "rigctl", "switch", PROFILE], env=self.env, check=True, capture_output=True, timeout=120)
        self.load = None
        if load:
            code = (
                "import time\nfrom rigctl.state.statefiles import read_record\nfrom rigctl.sim.loadgen import "
                "LoadGenerator\nr = read_record()\ng = LoadGenerator(lambda: (r.base_url, r.served_names[0]))\n"
                "g.start()\ntime.sleep(3600)\n"
            )
            self.load = subprocess.Popen([PYTHON, "-c", code], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def log_path(self) -> Path:
        import json

        return Path(json.loads((self.home / "state" / "server.json").read_text())["log_path"])

    def close(self) -> None:
        if self.load:
            self.load.kill()
            self.load.wait()
        subprocess.run([PYTHON, "-m", "rigctl", "stop"], env=self.env, capture_output=True, timeout=120)
        shutil.rmtree(self.home, ignore_errors=True)


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(process: psutil.Process) -> float:
    times = process.cpu_times()
    return times.user + times.system


def measure_cpu(
    argv: list[str],
    env: dict[str, str],
    seconds: float,
    size: tuple[int, int] = (160, 48),
    warmup: float = 8.0,
    keys: str = "",
) -> tuple[float, float]:
    """(CPU s per wall s, peak RSS MiB) of the process in a pty of `size`, after a warm-up
    (`keys` typed once the first frame is up: a screen to measure open)."""
    term = Terminal(argv, env, size)
    try:
        term.wait_for(b"Quit")
        if keys:
            term.send(keys)
        term.pump(warmup)
        before, start, peak = cpu_seconds(term.process), time.monotonic(), 0
        while time.monotonic() - start < seconds:
            term.drain(0.25)
            peak = max(peak, term.process.memory_info().rss)
        used = cpu_seconds(term.process) - before
        return used / (time.monotonic() - start), peak / 2**20
    finally:
        term.close()


def bench_cpu(seconds: float) -> None:
    rig = Rig(load=True)
    try:
        figures = {(size, 1.0): measure_cpu([PYTHON, "-m", "rigctl"], rig.env, seconds, size) for size in ((160, 48), (80, 24))}
        config = rig.home / "config" / "config.toml"
        config.write_text("[tui]\nrig_interval = 2.0\nmetrics_interval = 2.0\n")
        figures[((160, 48), 2.0)] = measure_cpu([PYTHON, "-m", "rigctl"], rig.env, seconds, (160, 48))
        config.unlink()
    finally:
        rig.close()
    plain = dict(os.environ, TERM="xterm-256color")
    bare_cpu, _ = measure_cpu([PYTHON, "-c", BARE_APP], plain, min(seconds, 20), (80, 24))
    live_cpu, _ = measure_cpu([PYTHON, "-c", LIVE_APP], plain, min(seconds, 30), (80, 24))
    for ((width, height), every), (cpu, rss) in figures.items():
        shown = "GPU cards, engine panel and log tail" if height >= 36 else "GPU cards and engine panel (no tail)"
        print(
            f"cpu     rigctl TUI {width}x{height} ({shown}), {RIG} serving {PROFILE} under load, {every:.0f} s "
            f"refresh, {seconds:.0f} s: {cpu * 100:.2f}% of one core ({cpu:.4f} CPU s/s), RSS {rss:.0f} MiB; "
            f"{cpu / live_cpu if live_cpu else float('inf'):.1f}x the one-line live app"
        )
    print(f"        baseline bare Textual app + footer, nothing changing: {bare_cpu * 100:.2f}% of one core")
    print(
        f"        baseline one-line live Textual app (a thread posts a message a second, one line changes): "
        f"{live_cpu * 100:.2f}% of one core"
    )


def bench_start(runs: int = 5) -> None:
    rig = Rig(load=False)
    try:

        def first_frame(argv: list[str], env: dict[str, str]) -> float:
            term = Terminal(argv, env, (120, 40))
            try:
                if term.wait_for(b"Quit") == float("inf"):
                    return float("inf")
                return time.monotonic() - term.started
            finally:
                term.close()

        first_frame([PYTHON, "-m", "rigctl"], rig.env)  # unmeasured: writes the bytecode cache
        ours = statistics.median(first_frame([PYTHON, "-m", "rigctl"], rig.env) for _ in range(runs))
    finally:
        rig.close()
    bare = statistics.median(first_frame([PYTHON, "-c", BARE_APP], dict(os.environ, TERM="xterm-256color")) for _ in range(runs))
    print(
        f"start   rigctl to first frame (footer on the terminal), median of {runs}: {ours:.2f} s; "
        f"bare Textual app: {bare:.2f} s; ratio {ours / bare:.2f}x"
    )
    figure("start.rigctl", f"{ours:.2f} s")
    figure("start.bare", f"{bare:.2f} s")
    figure("start.ratio", f"{ours / bare:.2f}x")


def bench_status(runs: int = 10) -> None:
    def wall(argv: list[str]) -> float:
        start = time.monotonic()
        subprocess.run(argv, check=True, capture_output=True, timeout=60)
        return time.monotonic() - start

    wall([PYTHON, "-m", "rigctl", "status", "--json", "--sim", RIG])  # unmeasured: writes the bytecode cache
    ours = statistics.median(wall([PYTHON, "-m", "rigctl", "status", "--json", "--sim", RIG]) for _ in range(runs))
    bare = statistics.median(wall([PYTHON, "-c", "pass"]) for _ in range(runs))
    print(
        f"status  `rigctl status --json --sim {RIG}`, median of {runs}: {ours * 1000:.0f} ms; "
        f"`python -c pass`: {bare * 1000:.0f} ms; ratio {ours / bare:.1f}x"
    )


def bench_flood(rate: int = 10_000, seconds: float = 10.0) -> None:
    rig = Rig(load=False)
    term = Terminal([PYTHON, "-m", "rigctl"], rig.env, (120, 30))
    try:
        term.wait_for(b"Quit")
        term.pump(2)
        term.send("l")
        term.wait_for(b"server log:")
        rss_before = term.process.memory_info().rss
        log = rig.log_path()
        latencies: list[float] = []
        peak, written, start = rss_before, 0, time.monotonic()
        next_key, on_logs = start + 0.5, True
        with open(log, "a") as handle:
            while (now := time.monotonic()) - start < seconds:
                due = int((now - start) * rate)
                if due > written:
                    handle.write(
                        "".join(
                            f"(APIServer pid=1) INFO 11-30 12:00:00 [flood.py:1] line {i} of a flood to test the tail\n"
                            for i in range(written, due)
                        )
                    )
                    handle.flush()
                    written = due
                term.drain(0.005)
                peak = max(peak, term.process.memory_info().rss)
                if now >= next_key:
                    term.send("d" if on_logs else "l")
                    latencies.append(term.wait_for(b"Interconnect" if on_logs else b"server log:", limit=5))
                    on_logs, next_key = not on_logs, time.monotonic() + 0.5
        alive = term.process.is_running()
    finally:
        term.close()
        rig.close()
    answered = [x for x in latencies if x != float("inf")]
    print(
        f"flood   {written:,} lines in {seconds:.0f} s ({rate:,}/s) into the followed log, 120x30: "
        f"RSS {rss_before / 2**20:.0f} MiB before, peak {peak / 2**20:.0f} MiB; "
        f"{len(answered)}/{len(latencies)} screen switches answered, key-to-frame median "
        f"{statistics.median(answered) * 1000 if answered else float('nan'):.0f} ms, max "
        f"{max(answered) * 1000 if answered else float('nan'):.0f} ms; app alive: {alive}"
    )


FAKE = [PYTHON, str(Path(__file__).resolve().parent / "with_fake_nvml.py"), RIG, "-m"]

# A month of the serving record (one row per 5 minutes, two profiles, a switch a week), written
# where the rig's env keeps it: what the trends screen reads and redraws every 10 s while open.
SEED_MONTH = """
import time
from rigctl.record.store import RecordWriter
from tests.record.test_derive import row
now, writer = time.time(), RecordWriter()
for i in range(30 * 288):
    t = now - 30 * 86400 + 300 * i
    name = ("qwen36-27b-awq-tp2", "qwen36-27b-awq-tp2-mtp")[(i // 2016) % 2]
    writer.add(row(t, name, f"boot-{i // 2016}", 1000 + i % 97, 600, usage=0.2 + (i % 288) / 500, seconds=300, energy=9e4))
writer.close()
"""


def _no_sim(env: dict[str, str]) -> dict[str, str]:
    """The TUI on the fake driver, not on the simulated rig (the simulator still serves)."""
    return {k: v for k, v in env.items() if k != "RIGCTL_SIM"}


def bench_peers(seconds: float, rounds: int) -> None:
    if shutil.which("nvitop") is None and not _importable("nvitop"):
        print("peers   skipped: nvitop is not installed (pip install -e '.[bench]')")
        return
    idle_home = Path(tempfile.mkdtemp(prefix="rigctl-bench-idle-"))
    idle = {
        **os.environ,
        "RIGCTL_STATE_DIR": str(idle_home / "state"),
        "RIGCTL_CONFIG_DIR": str(idle_home / "cfg"),
        "TERM": "xterm-256color",
        "COLUMNS": "",
        "LINES": "",
    }
    idle.pop("RIGCTL_SIM", None)
    plain = dict(os.environ, TERM="xterm-256color")
    rig = Rig(load=True)
    subprocess.run([PYTHON, "-c", SEED_MONTH], env=rig.env, check=True, cwd=Path(__file__).resolve().parent.parent)
    runs: dict[str, list[float]] = {
        "rigctl, nothing serving (GPU cards)": [],
        "rigctl, engine panel and log tail, serving under load": [],
        "nvitop --interval 1": [],
        "one-line live Textual app": [],
        "rigctl, trends screen open (30 days of record), serving under load": [],
        "vllm-top --interval 1, the simulator under load": [],
    }
    vllm_top = shutil.which("vllm-top")
    if vllm_top is None:
        runs.pop("vllm-top --interval 1, the simulator under load")
        print("peers   vllm-top is not installed (pip install -e '.[bench]'): the budget against nvitop + vllm-top is not measured")
    rss: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    try:
        for _ in range(rounds):  # interleaved: a drift of the machine hits every one alike
            for name, (argv, env, size, keys) in zip(
                names,
                (
                    ([*FAKE, "rigctl"], idle, (120, 40), ""),
                    ([*FAKE, "rigctl"], _no_sim(rig.env), (160, 48), ""),
                    ([*FAKE, "nvitop", "--interval", "1"], plain, (120, 40), ""),
                    ([PYTHON, "-c", LIVE_APP], plain, (120, 40), ""),
                    ([*FAKE, "rigctl"], _no_sim(rig.env), (120, 40), "g"),
                    *(
                        [
                            (
                                [vllm_top or "", "--host", "127.0.0.1", "--port", str(rig.port), "--interval", "1"],
                                plain,
                                (120, 40),
                                "",
                            )
                        ]
                        if vllm_top
                        else []
                    ),
                ),
                strict=True,
            ):
                cpu, peak = measure_cpu(argv, env, seconds, size, keys=keys)
                runs[name].append(cpu)
                rss[name].append(peak)
    finally:
        rig.close()
        shutil.rmtree(idle_home, ignore_errors=True)
    median = {name: statistics.median(values) for name, values in runs.items()}
    for name, values in runs.items():
        shown = ", ".join(f"{v * 100:.2f}" for v in values)
        print(
            f"peers   {name}: median {median[name] * 100:.2f}% of one core ({shown} over {rounds} rounds of "
            f"{seconds:.0f} s), peak RSS {max(rss[name]):.0f} MiB"
        )
    gpu, engine, nvitop, floor, trends = (median[n] for n in names[:5])
    rss_nvitop = max(rss["nvitop --interval 1"])
    for key, name in zip(("gpu", "engine", "nvitop", "floor", "trends", "vllm_top"), names, strict=False):
        figure(f"peers.{key}.cpu", f"{median[name] * 100:.2f}%")
        figure(f"peers.{key}.vs_nvitop", f"{median[name] / nvitop:.2f}x")
        figure(f"peers.{key}.vs_floor", f"{median[name] / floor:.2f}x")
        figure(f"peers.{key}.rss", f"{max(rss[name]):.0f} MiB")
        figure(f"peers.{key}.rss_vs_nvitop", f"{max(rss[name]) / rss_nvitop:.2f}x")
    print(
        f"        RSS against nvitop's: GPU cards {max(rss[names[0]]) / rss_nvitop:.2f}x, with the engine "
        f"{max(rss[names[1]]) / rss_nvitop:.2f}x, trends open {max(rss[names[4]]) / rss_nvitop:.2f}x (budget 1.5x)"
    )
    print(f"        trends screen open / floor {trends / floor:.2f}x (budget 3x)")
    if vllm_top:
        # the budget (docs/guide/costs.md): without rigctl the owner runs nvitop and vllm-top side by side
        pair = nvitop + median[names[5]]
        rss_pair = rss_nvitop + max(rss[names[5]])
        figure("peers.pair.cpu", f"{pair * 100:.2f}%")
        figure("peers.pair.rss", f"{rss_pair:.0f} MiB")
        figure("peers.engine.vs_nvitop_vllm_top", f"{engine / pair:.2f}x")
        figure("peers.engine.rss_vs_nvitop_vllm_top", f"{max(rss[names[1]]) / rss_pair:.2f}x")
        print(
            f"        budget: the full dashboard / (nvitop + vllm-top) {engine / pair:.2f}x (at most 0.25x: "
            f"{'met' if engine <= 0.25 * pair else 'NOT met'}); GPU cards / nvitop {gpu / nvitop:.2f}x (at most 1.0x: "
            f"{'met' if gpu <= nvitop else 'NOT met'}); RSS {max(rss[names[1]]):.0f} MiB against {rss_pair:.0f} MiB "
            f"({'met' if max(rss[names[1]]) <= rss_pair else 'NOT met'})"
        )
    print(
        f"        rigctl GPU-only / nvitop {gpu / nvitop:.2f}x; rigctl with engine panel and tail / nvitop "
        f"{engine / nvitop:.2f}x; rigctl with engine / floor {engine / floor:.2f}x; rigctl GPU-only / floor "
        f"{gpu / floor:.2f}x; nvitop / floor {nvitop / floor:.2f}x"
    )
    print(
        f"        budget: rigctl with the engine panel at or below nvitop: {'met' if engine <= nvitop else 'NOT met'}; "
        f"within 2x the floor: {'met' if engine <= 2 * floor else 'NOT met'}"
    )


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def bench_status_peers(runs: int = 10) -> None:
    def wall(argv: list[str], env: dict[str, str] | None = None) -> float:
        start = time.monotonic()
        subprocess.run(argv, check=True, capture_output=True, timeout=60, env=env)
        return time.monotonic() - start

    home = Path(tempfile.mkdtemp(prefix="rigctl-bench-status-"))
    env = {k: v for k, v in os.environ.items() if k != "RIGCTL_SIM"}
    env.update(RIGCTL_STATE_DIR=str(home / "state"), RIGCTL_CONFIG_DIR=str(home / "cfg"))
    keys = {
        "rigctl status --json (fake driver)": "fake",
        f"rigctl status --json --sim {RIG}": "sim",
        "gpustat --json (fake driver)": "gpustat",
        "nvitop --once (fake driver)": "nvitop",
    }
    figures = {
        "bare `python -c 'import pynvml, psutil'`": [PYTHON, "-c", "import pynvml, psutil"],
        "rigctl status --json (fake driver)": [*FAKE, "rigctl", "status", "--json"],
        f"rigctl status --json --sim {RIG}": [PYTHON, "-m", "rigctl", "status", "--json", "--sim", RIG],
    }
    if _importable("gpustat"):
        figures["gpustat --json (fake driver)"] = [*FAKE, "gpustat", "--json"]
    if _importable("nvitop"):
        figures["nvitop --once (fake driver)"] = [*FAKE, "nvitop", "--once"]
    for argv in figures.values():
        wall(argv, env)  # unmeasured: writes the bytecode cache
    medians = {name: statistics.median(wall(argv, env) for _ in range(runs)) for name, argv in figures.items()}
    shutil.rmtree(home, ignore_errors=True)
    bare = medians.pop("bare `python -c 'import pynvml, psutil'`")
    print(f"status  bare `python -c 'import pynvml, psutil'`, median of {runs}: {bare * 1000:.0f} ms")
    figure("status.bare", f"{bare * 1000:.0f} ms")
    for name, value in medians.items():
        print(f"        {name}: {value * 1000:.0f} ms, {value / bare:.2f}x the bare import")
        figure(f"status.{keys[name]}", f"{value * 1000:.0f} ms")
        figure(f"status.{keys[name]}.ratio", f"{value / bare:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=60.0, help="CPU measurement window")
    parser.add_argument("--only", default="cpu,start,status,flood,peers")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the peer comparison")
    args = parser.parse_args()
    only = set(args.only.split(","))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}")
    if "status" in only:
        bench_status()
    if "start" in only:
        bench_start()
    if "cpu" in only:
        bench_cpu(args.seconds)
    if "flood" in only:
        bench_flood()
    if "peers" in only:
        bench_status_peers()
        bench_peers(min(args.seconds, 30.0), args.rounds)


if __name__ == "__main__":
    main()
