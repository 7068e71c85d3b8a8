"""`python -m rigctl.sim.vllm_server serve MODEL [flags]`: a stand-in for `vllm serve`.

Started exactly as vLLM is started, it parses the same flags, writes vLLM 0.33's boot log,
fails the ways vLLM fails when a profile does not fit the simulated rig (RIGCTL_SIM),
then serves vLLM's HTTP API until SIGTERM. While it runs it claims memory and load on the
simulated GPUs, so the rig view shows it.
"""

from __future__ import annotations

import fcntl
import os
import random
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence

from rigctl import paths
from rigctl.files import open_own
from rigctl.gpu.model import P2PCap, P2PStatus
from rigctl.sim import args as sim_args
from rigctl.sim.boot import (
    VERSION,
    BootFailed,
    VllmLog,
    engine_processes,
    pause,
    run_boot,
)
from rigctl.sim.claims import default_claims_dir, remove_claim, write_claim
from rigctl.sim.engine import EngineReplica, EngineSim, Speed
from rigctl.sim.http_api import Handler, SimServer
from rigctl.sim.memory import MemoryPlan, plan
from rigctl.sim.models import ModelSpec, lookup
from rigctl.sim.rig import SimulatedBackend
from rigctl.sim.rigspec import RigSpec, load_rig
from rigctl.sim.speeds import build_factors, card_of, prefill_tp_speedup
from rigctl.sim.stats import Stats
from rigctl.units import GIB
from rigctl.vllm.flags import ServeFlags, flags_from_argv
from rigctl.vllm.kvpool import kv_dtype_bytes
from rigctl.vllm.options import load_option_table

DEFAULT_RIG = "2x3090-nvlink"


def tp_speedup(rig: RigSpec, devices: list[int], tp: int) -> float:
    if tp <= 1:
        return 1.0
    pair = rig.pair(devices[0], devices[1]) if len(devices) > 1 else None
    if pair and rig.gpus[devices[0]].nvlink_peer == devices[1]:
        base = 1.8  # all-reduce over NVLink
    elif pair and pair.p2p.get(P2PCap.READ) is P2PStatus.OK:
        base = 1.6
    else:
        base = 1.45  # through host memory: every layer waits on PCIe
    return base * float((tp / 2) ** 0.8)


def visible_devices(rig: RigSpec) -> list[int]:
    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    if raw is None or raw.strip() == "":
        return [g.index for g in rig.gpus]
    return [int(x) for x in raw.split(",") if x.strip().isdigit() and int(x) < len(rig.gpus)]


def non_default_args(ns: object) -> str:
    return repr({k: v for k, v in vars(ns).items() if v not in (None, False, [])})


def boot_regime() -> float:
    """This boot's speed factor. With RIGCTL_SIM_NOISE = n each boot falls into its own stable
    regime, 1 +- n, as real instances do after a restart (vllm#39903): drawn by boot number
    from RIGCTL_SIM_NOISE_SEED, so a noisy rig is noisy the same way every time."""
    noise = float(os.environ.get("RIGCTL_SIM_NOISE", "0") or 0)
    if noise <= 0:
        return 1.0
    counter = paths.state_dir() / "sim-boots"
    paths.ensure_private_dir(counter.parent)
    fd = open_own(counter, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        number = int(os.read(fd, 32) or b"0") + 1
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, str(number).encode())
    finally:
        os.close(fd)
    draw = random.Random(f"{os.environ.get('RIGCTL_SIM_NOISE_SEED', '0')}-{number}").random()
    return 1.0 + noise * (2 * draw - 1)


def build_engine(cfg: ServeFlags, model: ModelSpec, plan0: MemoryPlan, rig: RigSpec, devices: list[int]) -> EngineSim:
    total = plan0.total
    # RIGCTL_SIM_SPEED compresses serving time the way RIGCTL_SIM_TIME_SCALE compresses boots.
    fast = float(os.environ.get("RIGCTL_SIM_SPEED", "1") or 1) * boot_regime()
    prefill_build, decode_build = build_factors(cfg.quantization, cfg.model or "")  # the owners' figures (speeds.py)
    card, bandwidth = card_of(rig.gpus[devices[0]].name)
    eager = bool(cfg.enforce_eager)
    speed = Speed(
        decode_tps=model.decode_tps_tp1
        * card.graphs_factor
        * bandwidth
        * (card.eager_factor if eager else 1.0)
        * tp_speedup(rig, devices, cfg.tensor_parallel_size)
        * fast
        * decode_build,
        prefill_tps=model.decode_tps_tp1
        * 120
        * card.prefill_factor
        * prefill_tp_speedup(tp_speedup(rig, devices, cfg.tensor_parallel_size))
        * fast
        * prefill_build,
        spec_tokens=cfg.num_speculative_tokens,
        async_scheduling=bool(cfg.async_scheduling),
        acceptance_scale=float(os.environ.get("RIGCTL_SIM_ACCEPTANCE", "1") or 1),
        batch_slowdown=card.eager_slowdown if eager else card.batch_slowdown,
        batch_power=card.eager_power if eager else card.batch_power,
        mtp_step_cost=card.mtp_step_cost,
        mtp_batch_cost=card.mtp_batch_cost,
    )
    stats = Stats(
        cfg.data_parallel_size, plan0.max_model_len, spec=cfg.num_speculative_tokens > 0, offload=bool(cfg.kv_offloading_size)
    )
    pool = plan0.context_tokens
    replicas = [
        EngineReplica(
            d,
            pool,
            plan0.block_size if cfg.prefix_caching else 10**9,
            cfg.seqs(total),
            cfg.chunk(total),
            speed,
            stats,
            random.Random(1234 + d),
        )
        for d in range(cfg.data_parallel_size)
    ]
    if cfg.kv_offloading_size:
        dims = model.dims
        token_bytes = dims.attention_layers * dims.kv_heads * dims.head_dim * 2 * kv_dtype_bytes(cfg.kv_cache_dtype, dims)
        for replica in replicas:
            replica.token_bytes = token_bytes
            replica.offload_tokens = int(cfg.kv_offloading_size * GIB / max(1, token_bytes))
    stall = os.environ.get("RIGCTL_SIM_STALL_AFTER", "").strip()
    return EngineSim(replicas, stall_after=float(stall) if stall else None)


def main(argv: Sequence[str] | None = None) -> int:
    """`[--as-version X] serve MODEL [flags]` or `[--as-version X] --version`: X (default VERSION)
    is the vLLM it behaves as: that version's parser, logo and /version."""
    argv = list(sys.argv[1:] if argv is None else argv)
    version = VERSION
    if argv[:1] == ["--as-version"] and len(argv) > 1:
        version, argv = argv[1], argv[2:]
    if argv[:1] in (["--version"], ["-v"]):
        print(version)
        return 0
    if not argv or argv[0] != "serve":
        print("usage: vllm serve MODEL [options]", file=sys.stderr)
        return 2
    pause(7.0)  # vLLM spends its first seconds importing, silent, before it parses or binds anything
    reject = frozenset(f for f in os.environ.get("RIGCTL_SIM_REJECT_FLAGS", "").split(",") if f)
    parser = sim_args.build_parser(load_option_table(version), reject=reject)
    ns = parser.parse_args(argv[1:])  # exits 2 on unknown flags, as vLLM does
    # the one reader of a command line (rigctl/vllm/flags.py); the parser above only refuses what vLLM refuses
    cfg = flags_from_argv(argv, table=load_option_table(version)).but(model=ns.model_tag)
    name: str = ns.model_tag
    log = VllmLog(sys.stdout, os.getpid(), version)
    log.banner(name)
    log("APIServer", "api_utils.py:286", f"non-default args: {non_default_args(ns)}")
    host = ns.host if ns.host is not None else "0.0.0.0"
    port = ns.port or 8000
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: TIME_WAIT must not block a restart
    try:
        sock.bind((host, port))  # bound before the engine starts, listening only when ready
    except OSError as exc:
        log.raw("Traceback (most recent call last):")
        log.raw('  File "vllm/entrypoints/launchers/launcher.py", line 352, in create_server_socket')
        log.raw(f"OSError: [Errno {exc.errno}] {exc.strerror}")
        return 1
    rig = load_rig(os.environ.get("RIGCTL_SIM") or DEFAULT_RIG)
    model = lookup(name)
    max_len = cfg.max_model_len or model.max_position
    if max_len > model.max_position and os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") != "1":
        # vLLM refuses it in its config's validation, before any engine starts (the real CPU build's line)
        log.raw("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig")
        log.raw(
            f"  Value error, User-specified max_model_len ({max_len}) is greater than the derived max_model_len "
            f"(max_position_embeddings={float(model.max_position)} or model_max_length=None in model's "
            f"config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
        )
        return 1
    log("APIServer", "model.py:744", f"Resolved architecture: {model.architecture}")
    log("APIServer", "model.py:2170", f"Using max model len {max_len}")
    devices = visible_devices(rig)
    needed = cfg.tensor_parallel_size * cfg.pipeline_parallel_size * cfg.data_parallel_size
    claims_dir = default_claims_dir()
    if needed > len(devices):
        log.raw(
            f"(APIServer pid={os.getpid()}) ValueError: World size ({needed}) is larger than the number of "
            f"available GPUs ({len(devices)}) in this node."
        )
        return 1
    free = {s.index: s.memory_free for s in SimulatedBackend(rig, claims_dir=claims_dir).sample()}
    used = devices[:needed]
    plans = [plan(model, cfg, rig.gpus[d].memory_total, int(free[d] or 0)) for d in used]
    titles = _titles(cfg)
    state = {"memory": 0.0}

    def claim(memory: float, load: float) -> None:
        write_claim(
            claims_dir,
            os.getpid(),
            [{"gpu": d, "memory_bytes": int(memory), "title": titles[i], "load": load} for i, d in enumerate(used)],
        )

    def on_weights() -> None:
        state["memory"] = plans[0].weights + plans[0].mtp_head + plans[0].non_torch
        claim(state["memory"], 0.9)

    def on_kv() -> None:
        state["memory"] = plans[0].used_after_boot
        claim(state["memory"], 0.6)

    signal.signal(signal.SIGTERM, _terminate)
    try:
        claim(0.3 * 1024**3, 0.1)
        run_boot(log, cfg, model, plans, used, on_weights, on_kv)
        engine = build_engine(cfg, model, plans[0], rig, used)
        serve(log, sock, ns, cfg, engine, plans[0], host, port, lambda load: claim(state["memory"], load))
    except BootFailed:
        return 1
    except KeyboardInterrupt:
        time.sleep(float(os.environ.get("RIGCTL_SIM_STOP_DELAY", "0") or 0))  # a slow shutdown, on request
        log.uvicorn("Shutting down")
        log.uvicorn("Application shutdown complete.")
        log.uvicorn(f"Finished server process [{os.getpid()}]")
        return 0
    finally:
        remove_claim(claims_dir, os.getpid())
    return 0


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # unwinds serve_forever in the main thread: a clean, logged shutdown


def _titles(cfg: ServeFlags) -> list[str]:
    dp, ranks = cfg.data_parallel_size, cfg.tensor_parallel_size * cfg.pipeline_parallel_size
    if ranks == 1:
        return [f"VLLM::EngineCore_DP{d}" if dp > 1 else "VLLM::EngineCore" for d in range(dp)]
    return [f"VLLM::Worker_DP{d}_TP{r}" if dp > 1 else f"VLLM::Worker_TP{r}" for d in range(dp) for r in range(ranks)]


def serve(
    log: VllmLog,
    sock: socket.socket,
    ns: object,
    cfg: ServeFlags,
    engine: EngineSim,
    plan0: MemoryPlan,
    host: str,
    port: int,
    report_load: Callable[[float], None],
) -> None:
    server = SimServer((host, port), Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.server_activate()
    server.engine, server.log = engine, log
    names = getattr(ns, "served_model_name", None) or [cfg.model or ""]
    server.served_names = [str(n) for n in names]
    server.max_model_len = plan0.max_model_len
    # as vLLM: --api-key wins, else VLLM_API_KEY from the environment
    server.api_keys = [str(k) for k in (getattr(ns, "api_key", None) or [os.environ.get("VLLM_API_KEY")]) if k]
    quiet = getattr(ns, "disable_access_log_for_endpoints", None) or ""
    server.quiet_paths = {p.strip() for p in str(quiet).split(",") if p.strip()}
    server.started, server.created = time.time(), int(time.time())
    server.auto_tools = bool(getattr(ns, "enable_auto_tool_choice", None) and getattr(ns, "tool_call_parser", None))
    blocks = int(plan0.kv_memory / (plan0.kv_bytes_per_token * plan0.block_size)) if plan0.kv_bytes_per_token else 0
    server.cache_info = {
        "block_size": str(plan0.block_size),
        "cache_dtype": cfg.kv_cache_dtype or "auto",
        "enable_prefix_caching": str(cfg.prefix_caching),
        "gpu_memory_utilization": str(cfg.utilization),
        "kv_cache_size_tokens": str(plan0.kv_tokens),
        "kv_cache_max_concurrency": f"{plan0.concurrency:.2f}",
        "num_gpu_blocks": str(blocks * cfg.data_parallel_size),
        "num_cpu_blocks": "0",
        "prefix_caching_hash_algo": "sha256",
    }
    engine.start()
    log("APIServer", "entry.py:139", f"Starting vLLM server on http://{host}:{port}")
    log("APIServer", "launcher.py:188", "Available routes are:")
    for route, methods in (
        ("/health", "GET"),
        ("/metrics", "GET"),
        ("/version", "GET"),
        ("/v1/models", "GET"),
        ("/v1/completions", "POST"),
        ("/v1/chat/completions", "POST"),
    ):
        log("APIServer", "launcher.py:196", f"Route: {route}, Methods: {methods}")
    log.uvicorn(f"Started server process [{os.getpid()}]")
    log.uvicorn("Waiting for application startup.")
    log.uvicorn("Application startup complete.")
    stop = threading.Event()

    def heartbeat() -> None:
        last_tokens, last = 0.0, time.monotonic()
        while not stop.wait(1.0):
            report_load(0.08 + 0.9 * engine.load())
            now = time.monotonic()
            tokens = sum(engine.stats.counter_value("generation_tokens", e) for e in range(cfg.data_parallel_size))
            if tokens != last_tokens and now - last >= 10:
                _stats_line(log, engine, cfg, tokens - last_tokens, now - last)
                last_tokens, last = tokens, now

    threading.Thread(target=heartbeat, name="sim-heartbeat", daemon=True).start()
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        stop.set()
        engine.stop()


def _stats_line(log: VllmLog, engine: EngineSim, cfg: ServeFlags, tokens: float, seconds: float) -> None:
    for d in range(len(engine_processes(cfg))):
        replica = engine.replicas[d]
        log(
            "APIServer",
            "loggers.py:271",
            f"Engine {d:03d}: Avg prompt throughput: 0.0 tokens/s, Avg generation "
            f"throughput: {tokens / seconds / cfg.data_parallel_size:.1f} tokens/s, Running: {len(replica.running)} reqs, Waiting: "
            f"{len(replica.waiting)} reqs, GPU KV cache usage: {replica.usage() * 100:.1f}%",
        )


if __name__ == "__main__":
    raise SystemExit(main())
