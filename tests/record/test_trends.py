"""The record over time: a week of two profiles with a switch and a bench between them, cut into
buckets by SQLite; each figure what the rows say, no data where nothing was recorded, the
switches and the bench marked; and the charts drawn from it."""

from __future__ import annotations

from pathlib import Path

from rigctl.record.reader import RecordReader
from rigctl.record.rows import Timing
from rigctl.record.store import RecordWriter
from rigctl.tui.chart import NO_DATA, chart, columns, mark_line, time_axis
from tests.record.test_derive import row

NOW = 1_800_000_000.0
DAY = 86400.0


def week(writer: RecordWriter) -> None:
    """Day 1-2 good (hit rate 90%), a bench on day 3, then nocache (5%) from day 4; nothing on day 6."""
    for day, profile, boot, hits in (
        (1, "good", "g1", 900),
        (2, "good", "g1", 900),
        (3, "seqs8", "bench:cmp:b7", 500),
        (4, "nocache", "n1", 50),
        (5, "nocache", "n1", 50),
        (7, "nocache", "n1", 50),
    ):
        for i in range(12):  # an hour of 5-minute rows a day
            r = row(
                NOW - 8 * DAY + day * DAY + 300 * i,
                profile,
                boot,
                1000,
                hits,
                usage=0.4 + 0.05 * (day % 2),
                seconds=300,
                energy=300 * 500,
            )
            r.timings["ttft"] = Timing(0.2 * 10, 10, [[0.1, 0.25, 8], [0.25, 0.5, 2]])
            writer.add(r)


def test_a_week_in_buckets_with_the_switches_marked(isolated_dirs: Path) -> None:
    writer = RecordWriter()
    week(writer)
    writer.close()
    trends = RecordReader().trends(NOW - 7 * DAY, NOW, buckets=7)
    rates = trends.series["hit_rate"]
    assert rates[0] == 0.9 and rates[1] == 0.9  # days 1 and 2
    assert rates[2] is None  # day 3 was a bench: its traffic is not real use
    assert rates[3] == 0.05 and rates[4] == 0.05 and rates[5] is None and rates[6] == 0.05  # day 6: no data, not 0
    # Prometheus's interpolation over the day's summed buckets: rank 60 of 120 in (0.1, 0.25], 114 in (0.25, 0.5]
    assert trends.series["ttft_p50"][0] == 0.1 + 0.15 * 60 / 96 and trends.series["ttft_p95"][0] == 0.25 + 0.25 * 18 / 24
    assert trends.series["ttft_p50"][2] is None and trends.series["power"][0] == 500.0
    assert trends.series["tok_s"][0] == 1000 / 300 and trends.series["j_per_token"][0] == 300 * 500 / 1000
    assert trends.series["kv"][0] == 0.45 and trends.peak_resident == 45_000
    # good began before the window (its first row ends at its start): the switches within it are marked
    assert [(m.profile, m.bench) for m in trends.marks] == [("seqs8", "cmp"), ("nocache", None)]
    assert not trends.empty and RecordReader().trends(NOW - 30 * DAY, NOW - 20 * DAY).empty


def test_the_chart_draws_no_data_apart_from_zero_and_keeps_peaks() -> None:
    lines = chart([0.0, None, 0.5, 1.0], 4, 2, top=1.0)
    assert lines == ["   █", f"▁{NO_DATA}██"]
    assert columns([0.1, 0.9, 0.2, 0.3], 2) == [0.9, 0.3]  # the peak survives a narrow chart
    assert columns([None, None, 0.4, None], 2) == [None, 0.4]


def test_the_axis_and_the_marks() -> None:
    day = time_axis(NOW - 3600, NOW, 40)
    assert len(day) == 40 and day.count(":") == 3
    week_axis = time_axis(NOW - 7 * DAY, NOW, 40)
    assert len(week_axis) == 40 and week_axis.count("-") == 3
    line = mark_line(0, 100, 40, [(10, "good"), (50, "nocache"), (75, "x")])
    assert len(line) == 40 and line[4:9] == "▼good" and line[20:28] == "▼nocache" and line[30:32] == "▼x"
