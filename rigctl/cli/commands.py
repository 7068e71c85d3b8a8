"""Every subcommand: the module that registers and runs it, and its one-line help.

Kept import-free: `rigctl status` imports the status module and nothing of `profile`,
`switch` or the TUI, and `rigctl --help` lists every command from here alone.
"""

from __future__ import annotations

# name -> (module under rigctl.cli, help)
COMMANDS: dict[str, tuple[str, str]] = {
    "status": ("status", "the rig at a glance: GPUs, links, warnings, the served profile"),
    "topo": ("topo", "topology matrix, P2P status, NVLink per link, PCIe per GPU"),
    "gpus": ("gpus", "live per-GPU figures (one line per GPU)"),
    "sims": ("sims", "list the simulated rigs (for --sim NAME / RIGCTL_SIM); * marks the one selected"),
    "profile": ("profile", "serving profiles: list, show, diff, validate, argv, edit, import"),
    "switch": ("serving", "serve another profile; roll back to the last good one on failure"),
    "start": ("serving", "start a profile when nothing serves (default: the last good one)"),
    "restart": ("serving", "restart the running profile (a switch to itself, with rollback off)"),
    "stop": ("serving", "stop the server rigctl started"),
    "adopt": ("adopt", "take over a vLLM server rigctl did not start: the next switch drains and stops it properly"),
    "logs": ("logs", "the vLLM server's log (the one rigctl started last)"),
    "history": ("logs", "past boots: KV capacity, boot time, per profile"),
    "bootlog": ("logs", "read a vLLM log: phases, KV pool, and why a boot failed"),
    "metrics": ("metrics", "engine figures from vLLM's /metrics: KV, prefix cache, tok/s, latency"),
    "bench": ("bench", "a gated control-candidate-control benchmark between two profiles; report, list"),
    "gateway": (
        "gateway",
        "the front door: the apps' one address; holds requests through a switch, counts them exactly",
    ),
    "capture": ("capture", "the front door in front of one server, keeping the apps' requests as a trace a bench replays"),
    "fit": ("fit", "will a profile fit, its KV pool, and TP or DP for this rig (predicted, vLLM's arithmetic)"),
    "watch": ("watch", "the rig's service: keeps the record, judges the alerts, restarts a dead engine ([supervise])"),
    "record": ("watch", "the same as `rigctl watch` (its name before it judged alerts; kept for existing units)"),
    "exporter": ("exporter", "the rig's GPUs and what rigctl serves on it, as a Prometheus target (loopback by default)"),
    "rigs": ("rigs", "every rig your Prometheus knows (each running rigctl exporter): what serves, pool, hit rate, tok/s, alerts"),
    "report": ("report", "what each profile did while it served, side by side (from the record or Prometheus)"),
    "config": ("config_cmd", "the effective settings and where each came from"),
    "demo": ("tui", "the TUI on a simulated rig serving a shipped profile (no GPU needed)"),
}


def help_of(name: str) -> str:
    return COMMANDS[name][1]


def chosen(argv: list[str]) -> str | None:
    """The subcommand named in `argv` (skipping the global --sim NAME and --rig NAME), if any."""
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in ("--sim", "--rig"):
            skip = True
        elif word in COMMANDS:
            return word
        elif not word.startswith("-"):
            return None  # an unknown command: argparse says so
    return None
