"""Following a log file: whole lines only, and a viewer starts near the end of a long log."""

from __future__ import annotations

from pathlib import Path

from rigctl.state.logfollow import FileFollower


def test_lines_arrive_whole_as_the_file_grows(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("first\nsecond half")
    follower = FileFollower(log)
    assert follower.read_new() == ["first"]
    with log.open("a") as handle:
        handle.write("-done\nprogress 10%\rprogress 20%\n")
    assert follower.read_new() == ["second half-done", "progress 10%", "progress 20%"]
    assert follower.read_new() == []


def test_a_viewer_of_a_long_log_starts_at_a_line_near_its_end(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("".join(f"line {i:06d} of a long-running server\n" for i in range(100_000)))  # ~3.7 MB
    follower = FileFollower(log)
    follower.skip_to_tail(4096)
    lines = follower.read_new()
    assert lines[-1] == "line 099999 of a long-running server"
    assert 50 < len(lines) < 120 and all(line.startswith("line ") and len(line) == 36 for line in lines)
    with log.open("a") as handle:
        handle.write("new\n")
    assert follower.read_new() == ["new"]


def test_a_short_log_is_read_whole_after_skip_to_tail(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text("boot\nready\n")
    follower = FileFollower(log)
    follower.skip_to_tail(4096)
    assert follower.read_new() == ["boot", "ready"]
