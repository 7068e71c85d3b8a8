"""`rigctl --rig`'s relay of the rig's two streams onto what is most often one terminal: a line the
cut connection left open is ended before anything else is written, in whichever order they came."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigctl.cli.remote import Relay

CUT = (b"out", b"GPU 0 ok\nhalf a li")  # the rig's stdout, cut mid-line
SSH = (b"err", b"Connection to 127.0.0.1 closed by remote host.\r\n")  # ssh's own words, on stderr
OURS = b"rigctl: rig box2 (box2): the connection dropped\n"


@pytest.mark.parametrize(
    ("writes", "screen_lines"),
    [
        ([CUT, SSH], [b"GPU 0 ok", b"half a li", b"Connection to 127.0.0.1 closed by remote host.", OURS.strip()]),
        ([SSH, CUT], [b"Connection to 127.0.0.1 closed by remote host.", b"GPU 0 ok", b"half a li", OURS.strip()]),
        ([(b"out", b"switching: "), (b"out", b"ready\n"), (b"err", b"note\n")], [b"switching: ready", b"note", OURS.strip()]),
    ],
    ids=["cut-then-ssh", "ssh-then-cut", "nothing-cut"],
)
def test_each_line_starts_a_line_of_its_own(tmp_path: Path, writes: list[tuple[bytes, bytes]], screen_lines: list[bytes]) -> None:
    """Both streams write one file, as both write one terminal; rigctl's own line comes last. Where
    nothing was cut nothing is added: pieces of one stream's line join as the rig wrote them."""
    screen = tmp_path / "screen"
    with screen.open("ab") as out, screen.open("ab") as err:
        relay = Relay()
        for stream, raw in writes:
            relay.write(out if stream == b"out" else err, raw)
        relay.end_line()
        err.write(OURS)
    assert screen.read_bytes().splitlines() == screen_lines
