"""Regenerate the measured figures of the README and docs/guide/ from the benchmarks that produce them.

    python benchmarks/readme_figures.py [--only bench_tui,bench_chart] [--check]

Runs each benchmark below (its output passes through), collects the FIGURE lines it prints
(benchmarks/figures.py), and writes each where the README marks its key:
<!--fig:KEY-->text<!--/fig-->. Markers no run produced are left as they are and listed; a key
a run produced that the README does not mark is listed too. --check writes nothing and exits 1
when a figure would change. The README is written atomically, its mode kept.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE.parent / "README.md"
GUIDE = HERE.parent / "docs" / "guide"


def marked_files() -> list[Path]:
    """Where figures are marked: the README and every page of the guide."""
    return [README, *sorted(GUIDE.glob("*.md"))]


sys.path.insert(0, str(HERE))

from figures import parse  # noqa: E402 - benchmarks/ is not a package

# each benchmark with the argument lists it is run with (bench_capture twice: as fast as the
# server streams, and at an engine's pace)
RUNS: dict[str, list[list[str]]] = {
    "bench_tui": [["--only", "start,peers", "--seconds", "30", "--rounds", "3"]],
    "bench_chart": [[]],
    "bench_exporter": [["--seconds", "30"]],
    "bench_http": [[]],
    "bench_metrics_parse": [[]],
    "bench_rig_snapshot": [[]],
    "bench_fit": [[]],
    "bench_class_defs": [[]],
    "bench_record": [[]],
    "bench_loadgen": [[]],
    "bench_capture": [["--figures", "unpaced"], ["--pace-ms", "10", "--tokens", "64", "--figures", "paced"]],
    # 24,576 tokens a round: the CPU clock's 10 ms tick is 0.4 ms per 1,000 tokens
    "bench_gateway": [["--pace-ms", "10", "--requests", "96", "--tokens", "256", "--rounds", "5", "--figures", "paced"]],
    "bench_door_bounds": [["--figures"]],
}
# The benchmarks time process starts as an owner's install runs them, its bytecode cached: a shell's
# PYTHONDONTWRITEBYTECODE would have rigctl compile its own modules at every start (bench_tui.py).
OWNER_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
MARK = re.compile(r"<!--fig:([A-Za-z0-9_.-]+)-->(.*?)<!--/fig-->")


def run(name: str) -> dict[str, str]:
    """The figures one benchmark printed, over each of its runs; its output shown as it comes."""
    found: dict[str, str] = {}
    for arguments in RUNS[name]:
        with subprocess.Popen(
            [sys.executable, str(HERE / f"{name}.py"), *arguments],
            stdout=subprocess.PIPE,
            text=True,
            cwd=HERE.parent,
            env=OWNER_ENV,
        ) as process:
            assert process.stdout is not None
            for line in process.stdout:
                parsed = parse(line)
                if parsed is None:
                    sys.stdout.write(line)
                else:
                    found[parsed[0]] = parsed[1]
        if process.returncode:
            raise SystemExit(f"{name} exited {process.returncode}: no figure of it is written")
    return found


def rewrite(text: str, figures: dict[str, str]) -> tuple[str, list[tuple[str, str, str]], set[str]]:
    """`text` with each marked figure replaced; (key, old, new) for each change; the keys marked."""
    changes: list[tuple[str, str, str]] = []
    marked: set[str] = set()

    def replace(match: re.Match[str]) -> str:
        key, old = match.group(1), match.group(2)
        marked.add(key)
        new = figures.get(key, old)
        if new != old:
            changes.append((key, old, new))
        return f"<!--fig:{key}-->{new}<!--/fig-->"

    return MARK.sub(replace, text), changes, marked


def write_atomic(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o7777
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default=",".join(RUNS), help=f"benchmarks to run ({', '.join(RUNS)})")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a figure would change")
    args = parser.parse_args()
    wanted = [name for name in args.only.split(",") if name]
    unknown = [name for name in wanted if name not in RUNS]
    if unknown:
        raise SystemExit(f"unknown benchmark(s): {', '.join(unknown)} (known: {', '.join(RUNS)})")
    figures: dict[str, str] = {}
    for name in wanted:
        figures.update(run(name))
    changed: list[tuple[Path, str, int]] = []
    marked: set[str] = set()
    for path in marked_files():
        updated, changes, in_file = rewrite(path.read_text(), figures)
        marked |= in_file
        for key, old, new in changes:
            print(f"{path.name} {key}: {old} -> {new}")
        if changes:
            changed.append((path, updated, len(changes)))
    for key in sorted(set(figures) - marked):
        print(f"no page marks {key} (printed: {figures[key]})")
    for key in sorted(marked - set(figures)):
        print(f"{key}: left as it is (not measured in this run)")
    if args.check:
        raise SystemExit(1 if changed else 0)
    for path, updated, count in changed:
        write_atomic(path, updated)
        print(f"{path.relative_to(README.parent)}: {count} figure(s) written")


if __name__ == "__main__":
    main()
