"""NVML numeric codes as rigctl uses them.

Our own constants on purpose: pynvml's NVML_P2P_CAPS_INDEX_READ is the tuple `(0,)`
(a trailing comma in the bindings), which ctypes refuses to pass.
"""

from __future__ import annotations

import re

from rigctl.gpu.model import P2PCap, P2PStatus

P2P_CAP_INDEX: dict[P2PCap, int] = {
    P2PCap.READ: 0,
    P2PCap.WRITE: 1,
    P2PCap.NVLINK: 2,
    P2PCap.ATOMICS: 3,
    P2PCap.PCI: 4,
}

P2P_STATUS_BY_CODE: dict[int, P2PStatus] = {
    0: P2PStatus.OK,
    1: P2PStatus.CNS,
    2: P2PStatus.GNS,
    3: P2PStatus.TNS,
    4: P2PStatus.DR,
    5: P2PStatus.NS,
    6: P2PStatus.U,
}
P2P_CODE_BY_STATUS = {status: code for code, status in P2P_STATUS_BY_CODE.items()}

# nvmlDeviceGetTopologyCommonAncestor levels -> `nvidia-smi topo -m` labels.
TOPOLOGY_LABELS: dict[int, str] = {
    0: "X",  # NVML_TOPOLOGY_INTERNAL: same board; nvidia-smi has no label of its own
    10: "PIX",
    20: "PXB",
    30: "PHB",
    40: "NODE",
    50: "SYS",
}
TOPOLOGY_LEVELS = {label: level for level, label in TOPOLOGY_LABELS.items()}

# nvmlDeviceGetNvLinkVersion returns nvmlNvlinkVersion_t, not the marketing number.
NVLINK_VERSION_NAMES: dict[int, str] = {
    1: "1.0",
    2: "2.0",
    3: "2.2",
    4: "3.0",
    5: "3.1",
    6: "4.0",
    7: "5.0",
    8: "6.0",
}
NVLINK_VERSION_CODES = {name: code for code, name in NVLINK_VERSION_NAMES.items()}

# nvmlClocksEventReason* bits that explain a slow GPU (idle and app clocks are benign).
THROTTLE_REASONS: dict[int, str] = {
    0x1: "idle",
    0x2: "app clocks",
    0x4: "sw power cap",
    0x8: "hw slowdown",
    0x10: "sync boost",
    0x20: "sw thermal",
    0x40: "hw thermal",
    0x80: "hw power brake",
    0x100: "display clock",
}
BENIGN_THROTTLE = frozenset({"idle", "app clocks", "sync boost", "display clock"})

# NVML field ids (nvmlDeviceGetFieldValues).
FI_NVLINK_SPEED_MBPS_COMMON = 90
FI_NVLINK_GET_SPEED = 164
FI_NVLINK_THROUGHPUT_DATA_TX = 138  # KiB of payload sent on a link (scopeId), since driver load
FI_NVLINK_THROUGHPUT_DATA_RX = 139
PCIE_UTIL_TX_BYTES = 0  # nvmlPcieUtilCounter_t
PCIE_UTIL_RX_BYTES = 1

# NVML reports no GPU-only maximum width; these boards are wired for fewer than 16 lanes,
# so an x8 link on them is not a slot limit. Everything else discrete is x16.
_NARROW_BOARDS: tuple[tuple[str, int], ...] = (
    (r"RTX 4060\b(?! Ti)", 8),
    (r"RTX 4060 Ti", 8),
    (r"RTX 3050", 8),
    (r"RTX 5060", 8),
    (r"RTX 5050", 8),
    (r"RTX A2000", 16),
)


def throttle_names(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in THROTTLE_REASONS.items() if mask & bit)


def board_pcie_width(name: str) -> int | None:
    """Lanes the board itself has, or None for parts we cannot vouch for."""
    for pattern, width in _NARROW_BOARDS:
        if re.search(pattern, name):
            return width
    if re.search(r"GeForce|RTX|Quadro|Tesla|A100|H100|H200|L40|A40|A10\b", name):
        return 16
    return None
