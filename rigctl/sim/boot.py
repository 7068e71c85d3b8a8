"""The simulated boot: vLLM 0.33's log lines in vLLM's order, with time compressed.

Durations in the log are what a real boot on the rig would take; the simulator sleeps
those times the scale (RIGCTL_SIM_TIME_SCALE, 0.05 by default: a minute-long boot in
three seconds). RIGCTL_SIM_CRASH_AT / RIGCTL_SIM_HANG_AT name a phase (load, profile,
graphs, ready) at which to die or stall, so rigctl's failure paths can be exercised.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import TextIO

from rigctl.sim.memory import MemoryPlan
from rigctl.sim.models import ModelSpec
from rigctl.units import GIB
from rigctl.vllm.flags import ServeFlags

VERSION = "0.33.0"  # the vLLM the simulator is, unless started with --as-version
LOGO = (
    "",
    "       █     █     █▄   ▄█",
    " ▄▄ ▄█ █     █     █ ▀▄▀ █  version {version}",
    "  █▄█▀ █     █     █     █  model   {model}",
    "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀",
    "",
)


class VllmLog:
    """Writes lines in vLLM 0.33's format: `(Process pid=N) LEVEL mm-dd HH:MM:SS [file.py:line] message`."""

    def __init__(self, stream: TextIO, pid: int, version: str = VERSION) -> None:
        self.stream = stream
        self.pid = pid
        self.version = version
        self.clock_offset = clock_offset()

    def __call__(self, process: str, source: str, message: str, level: str = "INFO", offset: int = 0) -> None:
        stamp = time.strftime("%m-%d %H:%M:%S", time.localtime(time.time() + self.clock_offset))
        self.raw(f"({process} pid={self.pid + offset}) {level} {stamp} [{source}] {message}")

    def raw(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    def uvicorn(self, message: str) -> None:
        self.raw(f"INFO:     {message}")  # uvicorn's own logger: no process prefix, no stamp

    def banner(self, model: str) -> None:
        """What vLLM 0.32+ prints first: its logo, or the text line with VLLM_DISABLE_LOG_LOGO=1."""
        if os.environ.get("VLLM_DISABLE_LOG_LOGO") == "1":
            self("APIServer", "api_utils.py:352", f"vLLM server version {self.version}, serving model {model}")
            return
        for line in LOGO:
            self("APIServer", "api_utils.py:347", line.format(version=self.version, model=model))


class BootFailed(Exception):
    """The boot ends here; the lines explaining why have been written."""


def scale() -> float:
    try:
        return max(0.0, float(os.environ.get("RIGCTL_SIM_TIME_SCALE", "0.05")))
    except ValueError:
        return 0.05


def pause(simulated_seconds: float) -> None:
    time.sleep(simulated_seconds * scale())


def clock_offset() -> float:
    """RIGCTL_SIM_CLOCK_START ("2028-02-29 23:59:58"): the log's clock starts there (a boot on
    29 February, or across New Year, without waiting for the day)."""
    start = os.environ.get("RIGCTL_SIM_CLOCK_START")
    if not start:
        return 0.0
    return time.mktime(time.strptime(start, "%Y-%m-%d %H:%M:%S")) - time.time()


def checkpoint(phase: str) -> None:
    """The fault hooks: die abruptly, stall forever, or flood the log (RIGCTL_SIM_LOG_FLOOD
    bytes, as a crash-looping engine can) at a named phase."""
    if phase == "load" and os.environ.get("RIGCTL_SIM_LOG_FLOOD"):
        line = "WARNING " + "a repeated warning " * 20 + "\n"
        for _ in range(int(os.environ["RIGCTL_SIM_LOG_FLOOD"]) // len(line) + 1):
            sys.stdout.write(line)
        sys.stdout.flush()
    if os.environ.get("RIGCTL_SIM_CRASH_AT") == phase:
        sys.stdout.write(
            "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f3a (most recent call first):\n"
            '  File "vllm/v1/worker/gpu_model_runner.py", line 5071 in load_model\n'
        )
        sys.stdout.flush()
        os._exit(139)
    if os.environ.get("RIGCTL_SIM_HANG_AT") == phase:
        while True:
            time.sleep(3600)


def _engine_failed(log: VllmLog, error: str) -> None:
    log("EngineCore", "core.py:1584", "EngineCore failed to start.", "ERROR", 1)
    log.raw(f"(EngineCore pid={log.pid + 1}) Traceback (most recent call last):")
    log.raw(f"(EngineCore pid={log.pid + 1}) {error}")
    log.raw(
        f"(APIServer pid={log.pid}) RuntimeError: Engine core initialization failed. See root cause above. "
        f"Failed core proc(s): {{'EngineCore': 1}}"
    )
    raise BootFailed(error)


def engine_processes(cfg: ServeFlags) -> list[str]:
    return [f"EngineCore_DP{d}" if cfg.data_parallel_size > 1 else "EngineCore" for d in range(cfg.data_parallel_size)]


def run_boot(
    log: VllmLog,
    cfg: ServeFlags,
    model: ModelSpec,
    plans: list[MemoryPlan],
    devices: list[int],
    on_weights: Callable[[], None],
    on_kv: Callable[[], None],
) -> None:
    """Write the boot log for `plans` (one per GPU); raise BootFailed after the explaining lines."""
    worker = "Worker_TP0" if cfg.tensor_parallel_size * cfg.pipeline_parallel_size > 1 else engine_processes(cfg)[0]
    first = plans[0]
    log(
        "EngineCore",
        "core.py:140",
        f"Initializing a V1 LLM engine (v{log.version}) with config: model='{cfg.model}', "
        f"tensor_parallel_size={cfg.tensor_parallel_size}, pipeline_parallel_size={cfg.pipeline_parallel_size}, "
        f"data_parallel_size={cfg.data_parallel_size}, max_seq_len={first.max_model_len}, "
        f"kv_cache_dtype={cfg.kv_cache_dtype or 'auto'}, enforce_eager={cfg.enforce_eager}",
        offset=1,
    )
    for plan, device in zip(plans, devices, strict=True):
        if plan.failure == "foreign_vram":
            _engine_failed(
                log,
                f"ValueError: Free memory on device cuda:{device} ({plan.free_at_start / GIB:.2f}/"
                f"{plan.total / GIB:.2f} GiB) on startup is less than desired GPU memory utilization "
                f"({cfg.utilization}, {plan.budget / GIB:.2f} GiB). Decrease GPU memory "
                "utilization or reduce GPU memory used by other processes.",
            )
    checkpoint("load")
    load_seconds = first.weights * cfg.pipeline_parallel_size / 1.6e9 + 2.0
    pause(load_seconds)
    if first.failure == "oom_load":
        free_gib = max(0.0, (first.free_at_start - first.weights * 0.8) / GIB)
        log(
            worker,
            "gpu_model_runner.py:5077",
            "Failed to load model - not enough GPU memory. Try lowering "
            "--gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using "
            "--quantization. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. "
            "(original error: CUDA out of memory)",
            "ERROR",
            3,
        )
        _engine_failed(
            log,
            f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU {devices[0]} "
            f"has a total capacity of {first.total / GIB:.2f} GiB of which {free_gib:.2f} GiB is free. "
            f"Including non-PyTorch memory, this process has {first.free_at_start / GIB - free_gib:.2f} "
            "GiB memory in use.",
        )
    log(worker, "default_loader.py:507", f"Loading weights took {load_seconds - 1.5:.2f} seconds", offset=3)
    log(
        worker,
        "gpu_model_runner.py:5089",
        f"Model loading took {(first.weights + first.mtp_head) / GIB:.2f} GiB memory and {load_seconds:.6f} seconds",
        offset=3,
    )
    on_weights()
    compile_seconds = 0.0 if cfg.enforce_eager else 21.4
    if cfg.enforce_eager:
        log(worker, "cuda.py:227", "Cudagraph is disabled under eager mode", offset=3)
    else:
        pause(compile_seconds)
        log(worker, "monitor.py:92", f"torch.compile takes {compile_seconds:.2f} s in total", offset=3)
    checkpoint("profile")
    pause(2.5)
    if model.hybrid:
        log(
            worker,
            "config.py:512",
            f"Setting attention block size to {first.block_size} tokens to ensure that attention page size is >= mamba page size.",
            offset=3,
        )
    log(worker, "gpu_worker.py:772", f"Available KV cache memory: {max(first.kv_memory, 0) / GIB:.2f} GiB", offset=3)
    if first.failure == "no_kv_memory":
        _engine_failed(
            log,
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.",
        )
    if first.failure == "max_model_len":
        needed = first.max_model_len * first.kv_bytes_per_token / GIB
        _engine_failed(
            log,
            f"ValueError: To serve at least one request with the model's max seq len "
            f"({first.max_model_len}), ({needed:.2f} GiB KV cache is needed, which is larger than the "
            f"available KV cache memory ({first.kv_memory / GIB:.2f} GiB). Based on the available "
            f"memory, the estimated maximum model length is {first.estimated_max_len}. Try increasing "
            "`gpu_memory_utilization` (which also controls CPU memory on the CPU backend) or "
            "decreasing `max_model_len` when initializing the engine. See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
        )
    if first.failure == "max_num_seqs":
        _engine_failed(
            log, f"ValueError: max_num_seqs ({cfg.seqs(first.total)}) exceeds available Mamba cache blocks ({first.mamba_blocks})"
        )
    for d, process in enumerate(engine_processes(cfg)):
        log(
            process,
            "kv_cache_utils.py:1148",
            f"GPU KV cache size: {first.kv_tokens:,} tokens, Maximum concurrency "
            f"for {first.max_model_len:,} tokens per request: {first.concurrency:.2f}x",
            offset=1 + d,
        )
    on_kv()
    checkpoint("graphs")
    graph_seconds = 0.0
    if not cfg.enforce_eager:
        graph_seconds = 5.0 + (3.0 if first.mtp_head else 0.0)
        pause(graph_seconds)
        log.raw("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:04<00:00, 15.18it/s]")
        log.raw("Capturing CUDA graphs (decode, FULL): 100%|██████████| 35/35 [00:01<00:00, 17.82it/s]")
        log(
            worker,
            "gpu_model_runner.py:6592",
            f"Graph capturing finished in {graph_seconds:.0f} secs, took {first.graphs / GIB:.2f} GiB",
            offset=3,
        )
    total = load_seconds + compile_seconds + 2.5 + graph_seconds + 1.2
    compiled = f" (compilation: {compile_seconds:.2f} s)" if compile_seconds else ""
    log(
        engine_processes(cfg)[0],
        "core.py:396",
        f"init engine (profile, create kv cache, warmup model) took {total:.2f} s{compiled}",
        offset=1,
    )
    checkpoint("ready")
