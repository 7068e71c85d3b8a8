"""Parse what `nvidia-smi topo -m` and `topo -p2p` print (tabs or spaces, padded cells).

Only the tests parse nvidia-smi: rigctl computes topology from NVML.
"""

from __future__ import annotations

import re


def _rows(text: str) -> list[list[str]]:
    lines = text.splitlines()
    # The matrix starts at its header: a line that opens with blanks and then GPU0.
    start = next(i for i, line in enumerate(lines) if re.match(r"^\s+GPU0\b", line))
    rows: list[list[str]] = []
    for line in lines[start:]:
        if not line.strip():
            if rows:
                break  # the matrix ends at the first blank line after it
            continue
        if line.lstrip().startswith("$"):
            continue
        rows.append(re.split(r"\t+|\s{2,}", line.strip()))
    return rows


def parse_topo_matrix(text: str) -> dict[tuple[str, str], str]:
    """{(GPUi, GPUj): label} from a `topo -m` block (header row of GPU names first)."""
    rows = _rows(text)
    header = [h for h in rows[0] if h]
    gpus = [h for h in header if re.fullmatch(r"GPU\d+", h)]
    out = {}
    for row in rows[1:]:
        name = row[0]
        if not re.fullmatch(r"GPU\d+", name):
            continue
        cells = [c.strip() for c in re.split(r"\t|\s+", " ".join(row[1:])) if c.strip()]
        for gpu, cell in zip(gpus, cells, strict=False):  # trailing columns: CPU and NUMA affinity
            out[(name, gpu)] = cell
    return out


def parse_topo_affinity(text: str) -> dict[str, tuple[str, str, str]]:
    """{GPUi: (CPU Affinity, NUMA Affinity, GPU NUMA ID)} from a `topo -m` block."""
    rows = _rows(text)
    n = sum(1 for h in rows[0] if re.fullmatch(r"GPU\d+", h))
    out: dict[str, tuple[str, str, str]] = {}
    for row in rows[1:]:
        if re.fullmatch(r"GPU\d+", row[0]):
            cells = [c for c in re.split(r"\s+", " ".join(row[1:])) if c]
            out[row[0]] = (cells[n], cells[n + 1], cells[n + 2])
    return out


def section_after(text: str, marker: str) -> str:
    """The text following a `$ nvidia-smi ...` label line."""
    _, _, rest = text.partition(marker)
    return rest.split("\n", 1)[1] if rest else ""
