"""`rigctl --rig`'s relay of the rig's two streams onto what is most often one terminal: a line the
cut connection left open is ended before anything else is written, in whichever order they came."""

from __future__ import annotations

from pathlib import Path

from rigctl.cli.remote import Relay


def test_the_cut_stdout_tail_then_sshs_words_then_rigctls(tmp_path: Path) -> None:
    screen = tmp_path / "screen"
    with screen.open("ab") as out, screen.open("ab") as err:
        relay = Relay()
        relay.write(out, b"GPU 0 ok\nhalf a li")
        relay.write(err, b"Connection to 127.0.0.1 closed by remote host.\r\n")
        relay.end_line()
        err.write(b"rigctl: rig box2 (box2): the connection dropped\n")
    assert screen.read_bytes().splitlines() == [
        b"GPU 0 ok",
        b"half a li",
        b"Connection to 127.0.0.1 closed by remote host.",
        b"rigctl: rig box2 (box2): the connection dropped",
    ]


def test_sshs_words_then_the_cut_stdout_tail_then_rigctls(tmp_path: Path) -> None:
    screen = tmp_path / "screen"
    with screen.open("ab") as out, screen.open("ab") as err:
        relay = Relay()
        relay.write(err, b"Connection to 127.0.0.1 closed by remote host.\r\n")
        relay.write(out, b"half a li")
        relay.end_line()
        err.write(b"rigctl: rig box2 (box2): the connection dropped\n")
    assert screen.read_bytes().splitlines()[-2:] == [b"half a li", b"rigctl: rig box2 (box2): the connection dropped"]


def test_whole_lines_and_a_line_built_in_pieces_on_one_stream_are_left_as_they_are(tmp_path: Path) -> None:
    """Nothing is added where nothing was cut: pieces of one stream's line join as the rig wrote them."""
    screen = tmp_path / "screen"
    with screen.open("ab") as out, screen.open("ab") as err:
        relay = Relay()
        relay.write(out, b"switching: ")
        relay.write(out, b"ready\n")
        relay.write(err, b"warning: x\n")
        relay.end_line()
    assert screen.read_bytes() == b"switching: ready\nwarning: x\n"
