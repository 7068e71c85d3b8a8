"""The docker launcher: a named container of the vllm/vllm-openai image with the GPUs,
--ipc=host, the port published on the profile's host only, and the Hugging Face cache
mapped. The environment goes through an --env-file (0600): secrets stay off `ps`."""

from __future__ import annotations

import shutil
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from rigctl import paths
from rigctl.atomic import write_text_atomic
from rigctl.errors import StopFailed
from rigctl.serve.launcher_systemd import env_file_problems
from rigctl.state import discover
from rigctl.state.servers import DockerView, Runner, run
from rigctl.state.statefiles import ServerRecord

if TYPE_CHECKING:
    from rigctl.profiles.vllm_args import LaunchSpec

CONTAINER_HF = "/root/.cache/huggingface"


class DockerLauncher(DockerView):
    def __init__(self, image: str, container: str, hf_cache: str, runner: Runner = run) -> None:
        super().__init__(container, runner)
        self.image = image
        self.hf_cache = str(Path(hf_cache).expanduser())

    def run_command(self, spec: LaunchSpec) -> list[str]:
        argv = list(spec.argv)
        serve_args = argv[argv.index("serve") :]  # the image brings its own vllm
        if "--host" in serve_args:  # inside the container vLLM must listen on all interfaces...
            serve_args[serve_args.index("--host") + 1] = "0.0.0.0"
        else:
            serve_args += ["--host", "0.0.0.0"]
        publish = (
            f"{spec.host}:{spec.port}:{spec.port}" if spec.host not in ("", "0.0.0.0") else f"{spec.port}:{spec.port}"
        )  # ...while the host publishes it where the profile said
        return [
            "docker",
            "run",
            "-d",
            "--name",
            self.container,
            "--gpus",
            "all",
            "--ipc=host",
            "-p",
            publish,
            "-v",
            f"{self.hf_cache}:{CONTAINER_HF}",
            "--env-file",
            str(self.env_file),
            "--entrypoint",
            "vllm",
            self.image,
            *serve_args,
        ]

    def check(self, spec: LaunchSpec) -> list[str]:
        problems = env_file_problems(spec.env)
        if shutil.which("docker") is None:
            problems.append("the docker launcher needs the docker client, which is not on PATH")
        else:
            server = self.runner(["docker", "version", "--format", "{{.Server.Version}}"])
            if server.returncode != 0:
                said = (server.stderr or server.stdout).strip().splitlines()
                problems.append(f"docker cannot reach its daemon: {said[-1] if said else 'no answer'}")
        problem = paths.writable_problem(paths.state_dir(), min_free=0)
        if problem:
            problems.append(problem)
        return problems

    def start(self, spec: LaunchSpec, profile: str) -> ServerRecord:
        paths.ensure_private_dir(paths.state_dir())
        boot_id = uuid.uuid4().hex
        env = {**spec.env, discover.BOOT_ID_VAR: boot_id, discover.PROFILE_VAR: profile, discover.STATE_VAR: str(paths.state_dir())}
        if env_file_problems(env):
            raise ValueError("; ".join(env_file_problems(env)))
        # docker's --env-file takes each line verbatim after the first "=": no quoting to escape
        write_text_atomic(self.env_file, "".join(f"{k}={v}\n" for k, v in env.items()), mode=0o600)
        self.runner(["docker", "rm", "-f", self.container])  # a leftover of the same name blocks the run
        started = time.time()
        done = self.runner(self.run_command(spec))
        if done.returncode != 0:
            raise RuntimeError(f"docker run failed: {(done.stderr or done.stdout).strip()}")
        return ServerRecord(
            launcher=self.name,
            profile=profile,
            started=started,
            log_path="",
            host=spec.host,
            port=spec.port,
            served_names=spec.served_names,
            argv=tuple(spec.redacted_argv()),
            container=self.container,
            boot_id=boot_id,
        )

    def stop(self, record: ServerRecord, grace: float) -> None:
        done = self.runner(["docker", "stop", "-t", str(int(grace)), self.container])
        if done.returncode != 0 and "No such container" not in (done.stderr or ""):
            raise StopFailed(f"docker stop {self.container} failed: {(done.stderr or done.stdout).strip()}")
        self.runner(["docker", "rm", self.container])
