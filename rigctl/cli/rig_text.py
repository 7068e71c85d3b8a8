"""Plain-text renderings of the rig for the terminal (no colour, fit for pipes)."""

from __future__ import annotations

from rigctl import fmt
from rigctl.gpu.model import Gpu, GpuSample, HostSample, P2PCap, RigSnapshot
from rigctl.gpu.topology import p2p_code


def host_line(host: HostSample | None) -> str:
    if host is None:
        return "host: n/a"
    load = "n/a" if host.load_avg is None else f"{host.load_avg[0]:.2f}"
    return (
        f"host: CPU {fmt.pct(host.cpu_pct)} of {host.cpu_count or '?'} cores, load {load}, "
        f"RAM {fmt.gib_pair(host.mem_used, host.mem_total)}, swap {fmt.gib_pair(host.swap_used, host.swap_total)}"
    )


def gpu_lines(gpu: Gpu, sample: GpuSample | None) -> list[str]:
    head = f"GPU{gpu.index}  {gpu.name}  {gpu.bus_id}"
    if sample is None:
        return [head, "      no sample"]
    if sample.lost:
        return [head + "  LOST", "      GPU is lost: no figures until it is reset"]
    lines = [
        head,
        (
            f"      VRAM {fmt.gib_pair(sample.memory_used, gpu.memory_total)} (reserved {fmt.gib(sample.memory_reserved)})"
            f"  util {fmt.pct(sample.util_gpu)}  mem-bw {fmt.pct(sample.util_memory)}"
        ),
        (
            f"      power {fmt.watts(sample.power_w)}/{fmt.watts(gpu.power_limit_w)}  {fmt.celsius(sample.temperature_c)}"
            f"  fan {fmt.pct(sample.fan_pct)}  SM {fmt.mhz(sample.sm_clock)}  mem {fmt.mhz(sample.mem_clock)}"
            f"  P{sample.pstate if sample.pstate is not None else '?'}"
        ),
        (
            f"      PCIe now {fmt.pcie(sample.pcie_gen, sample.pcie_width)}, link max "
            f"{fmt.pcie(gpu.pcie_gen_max, gpu.pcie_width_max)}, card max {fmt.pcie(gpu.pcie_gpu_gen_max, gpu.pcie_gpu_width_max)}"
            f"  throttle: {', '.join(sample.throttle_reasons) if sample.throttle_reasons else 'none'}"
        ),
    ]
    procs = sample.processes
    if procs is None:
        lines.append("      processes: n/a")
    elif not procs:
        lines.append("      processes: none")
    for proc in procs or ():
        role = f" [vLLM {proc.vllm_role}]" if proc.vllm_role else ""
        lines.append(f"      pid {proc.pid} {proc.name or '?'} ({proc.user or '?'}) {fmt.mib(proc.used_memory)}{role}")
    return lines


def links_line(snapshot: RigSnapshot) -> list[str]:
    gpus = snapshot.info.gpus
    out = []
    for a in gpus:
        for b in gpus:
            if a.index >= b.index:
                continue
            label = snapshot.topology.labels[(a.index, b.index)]
            codes = "/".join(
                p2p_code(snapshot.topology, a.index, b.index, c) for c in (P2PCap.READ, P2PCap.WRITE, P2PCap.NVLINK, P2PCap.ATOMICS)
            )
            links = [link for link in a.active_nvlinks if link.remote_bus_id == b.bus_id]
            detail = ""
            if links:
                speed = links[0].speed_gbps
                detail = f" ({len(links)}x NVLink {links[0].version or '?'}{f', {speed:.3f} GB/s each' if speed else ''})"
            out.append(f"GPU{a.index}-GPU{b.index}: {label}{detail}; P2P read/write/nvlink/atomics {codes}")
    return out or ["single GPU: no links"]


def status_text(snapshot: RigSnapshot) -> str:
    info = snapshot.info
    lines = [
        f"rig: {info.backend}  driver {info.driver_version or 'n/a'}  CUDA {info.cuda_driver_version or 'n/a'}",
        host_line(snapshot.host),
        "",
    ]
    for gpu in info.gpus:
        lines += gpu_lines(gpu, snapshot.sample_for(gpu.index))
    lines += ["", *links_line(snapshot), ""]
    if snapshot.warnings:
        lines.append("warnings:")
        lines += [f"  [{w.severity}] {w.message}" for w in snapshot.warnings]
    else:
        lines.append("warnings: none")
    return "\n".join(lines)
