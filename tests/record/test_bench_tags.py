"""Which rows are a bench's: a server the bench started is its traffic while the bench runs; the
last control's server serves on after it as real use. A recorder starved on a loaded machine that
first sees that server only after the bench ended still gives the bench what the server counted
until then (the bench leaves when it ran in bench/ended.json), and counts from there as real use."""

from __future__ import annotations

import time
from pathlib import Path

from rigctl.bench.live import LiveWriter, read_ended
from rigctl.engine.metrics import EngineSnapshot
from rigctl.record.recorder import BenchTags, boot_key
from rigctl.record.rows import BENCH_TAG
from rigctl.state.statefiles import ServerRecord


def server(started: float, boot: str) -> ServerRecord:
    return ServerRecord("process", "seqs2", started, "", "127.0.0.1", 8000, ("m",), (), boot_id=boot)


def test_a_server_first_seen_after_its_bench_ended_gives_the_bench_its_counts_then_counts_as_real_use(
    isolated_dirs: Path,
) -> None:
    live = LiveWriter("few", isolated_dirs, "seqs2", "seqs8")
    before = server(live.started - 100, "before")  # served before the bench: never the bench's
    last_arm = server(time.time(), "arm3")  # the last control, started by the bench
    live.close()  # the bench ends; its control serves on
    ended = read_ended()
    assert ended is not None and ended.plan == "few" and ended.started <= last_arm.started <= ended.ended

    tags = BenchTags()
    snapshot = EngineSnapshot(timestamp=0.0)
    first = tags.observation(last_arm, snapshot, lambda: None)
    assert first.boot == f"{BENCH_TAG}few:{boot_key(last_arm)}"  # what it counted up to now: the bench's
    then = tags.observation(last_arm, snapshot, lambda: None)
    assert then.boot == boot_key(last_arm) and then.server == first.server  # from here: real use, one server
    assert BenchTags().observation(before, snapshot, lambda: None).boot == boot_key(before)


def test_a_server_seen_while_the_bench_runs_is_tagged_and_real_use_after(isolated_dirs: Path) -> None:
    live = LiveWriter("few", isolated_dirs, "seqs2", "seqs8")
    arm = server(time.time(), "arm1")
    tags = BenchTags()
    assert tags.observation(arm, EngineSnapshot(timestamp=0.0), lambda: None).boot.startswith(BENCH_TAG)
    live.close()
    later = BenchTags()  # a recorder started well after: its first sight is real use unless the end is recent
    assert later.observation(server(time.time() - 3600, "old"), EngineSnapshot(timestamp=0.0), lambda: None).boot == "old"


def test_the_mark_names_the_server_serving_before_and_every_other_is_the_benchs(isolated_dirs: Path) -> None:
    """A start time read back from the process (psutil's, on the kernel's whole-second boot time)
    can be a second before the mark: the bench's first arm is told by its key, not its start."""
    live = LiveWriter("few", isolated_dirs, "seqs2", "seqs8", before="owner-boot")
    owner = server(live.started - 60, "owner-boot")
    first_arm = server(live.started - 0.8, "arm1")  # booted right after the mark, said a little early
    snapshot = EngineSnapshot(timestamp=0.0)
    assert BenchTags().observation(owner, snapshot, lambda: None).boot == "owner-boot"
    assert BenchTags().observation(first_arm, snapshot, lambda: None).boot == f"{BENCH_TAG}few:arm1"
    live.close()
