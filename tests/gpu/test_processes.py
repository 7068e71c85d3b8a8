from __future__ import annotations

import pytest

from rigctl.gpu.processes import vllm_role


@pytest.mark.parametrize(
    "name,cmdline,role",
    [
        ("VLLM::EngineCore", None, "engine core"),
        ("VLLM::EngineCore_DP1", None, "engine core DP1"),
        ("VLLM::Worker_TP1", None, "worker TP1"),
        ("python3", "VLLM::Worker_TP0", "worker TP0"),
        ("vllm", "/opt/venv/bin/python /opt/venv/bin/vllm serve Qwen/Qwen3-8B --port 8000", "api server"),
        ("python", "python -m vllm.entrypoints.openai.api_server --model x", "api server"),
        ("python", "python -m rigctl.sim.vllm_server serve Qwen/Qwen3-8B", "simulated vLLM"),
        ("Xorg", "/usr/lib/xorg/Xorg vt2", None),
        ("python", "python train.py --serve-vllm-later", None),
    ],
)
def test_vllm_roles(name: str, cmdline: str | None, role: str | None) -> None:
    assert vllm_role(name, cmdline) == role


def test_inspector_names_live_processes_and_tells_a_new_process_from_an_old_one() -> None:
    import subprocess
    import sys
    import time

    import psutil

    from rigctl.gpu.model import GpuProcess
    from rigctl.gpu.processes import ProcessInspector
    from rigctl.proc import same_process, start_time

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        deadline = time.monotonic() + 5
        while not psutil.Process(child.pid).cmdline() and time.monotonic() < deadline:
            time.sleep(0.01)  # on a loaded machine the kernel may show the new image a moment later
        inspector = ProcessInspector()
        holder = GpuProcess(pid=child.pid, used_memory=1)
        (named,) = inspector.enrich((holder,)) or ()
        assert named.cmdline and "time.sleep(60)" in named.cmdline and named.user
        assert start_time(child.pid) == start_time(child.pid) is not None
        assert same_process(child.pid, start_time(child.pid)) and not same_process(child.pid, 1.0)
    finally:
        child.kill()
        child.wait()
    assert start_time(child.pid) is None and not same_process(child.pid)
    (gone,) = inspector.enrich((holder,)) or ()
    assert gone.cmdline is None  # a dead pid is not given its old command line
