"""The LiteLLM proxy config rigctl writes for the owner's rigs, from what each rig said live."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from rigctl.config import load_settings, remote_rig
from rigctl.errors import BadInputError
from rigctl.router.litellm import RouterOptions, changes, hooks_source, litellm_config, render
from rigctl.router.reading import RigReading, ServedModel
from tests.support.config_file import write_config

SMALL = RigReading("box2", "http://10.0.0.2:8000", "", (ServedModel("qwen3.6-27b", 32_768),))
LARGE = RigReading("box1", "http://10.0.0.1:8000", "BOX1_KEY", (ServedModel("qwen3.6-27b", 131_072),))
DOWN = RigReading("box3", "http://10.0.0.3:8000", "", problem="not answering (ConnectError: refused)")


def by_id(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["model_info"]["id"]: d for d in config["model_list"]}


def test_one_deployment_per_rig_under_the_model_name_each_bounded_by_its_context() -> None:
    config = litellm_config([SMALL, LARGE, DOWN], RouterOptions())
    deployments = by_id(config)
    assert sorted(deployments) == ["box1/qwen3.6-27b", "box2/qwen3.6-27b"]  # the rig that did not answer is left out
    small, large = deployments["box2/qwen3.6-27b"], deployments["box1/qwen3.6-27b"]
    assert small["model_name"] == large["model_name"] == "qwen3.6-27b"
    assert small["litellm_params"] == {
        "model": "hosted_vllm/qwen3.6-27b",
        "api_base": "http://10.0.0.2:8000/v1",
        "timeout": 900.0,
        "max_retries": 0,
    }
    assert small["model_info"] == {"id": "box2/qwen3.6-27b", "rigctl_max_model_len": 32_768, "max_input_tokens": 32_768}
    assert large["model_info"] == {"id": "box1/qwen3.6-27b", "rigctl_max_model_len": 131_072, "max_input_tokens": 131_072}
    assert large["litellm_params"]["api_key"] == "os.environ/BOX1_KEY"
    router = config["router_settings"]
    assert router["enable_pre_call_checks"] is True and router["num_retries"] == 0
    assert router["allowed_fails_policy"]["TimeoutErrorAllowedFails"] >= 1_000_000
    assert config["litellm_settings"] == {"num_retries": 0, "request_timeout": 900.0}
    assert config["general_settings"] == {"master_key": "os.environ/LITELLM_MASTER_KEY"}


def test_largest_decides_never_filters_the_largest_and_hooks_are_named_only_when_written() -> None:
    config = litellm_config([SMALL, LARGE], RouterOptions(largest_decides=True, hooks=True, timeout_s=60))
    limits = {k: d["model_info"]["max_input_tokens"] for k, d in by_id(config).items()}
    assert limits == {"box2/qwen3.6-27b": 32_768, "box1/qwen3.6-27b": 1_000_000_000}
    assert config["litellm_settings"] == {"num_retries": 0, "request_timeout": 60, "callbacks": "rigctl_litellm_hooks.handler"}
    source = hooks_source(RouterOptions(timeout_s=60))
    compile(source, "rigctl_litellm_hooks.py", "exec")  # the hook LiteLLM loads is Python
    assert "TIMEOUT_S = 60.0" in source and 'stream it (\\"stream\\": true)' in source and "status_code=504" in source


def test_the_yaml_says_what_it_left_out_and_holds_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOX1_KEY", "sk-secret-of-box1")
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-master")
    text = render([SMALL, LARGE, DOWN], RouterOptions(), now=1_796_500_000)
    assert "sk-" not in text
    assert "# LEFT OUT: box3 (http://10.0.0.3:8000): not answering (ConnectError: refused)" in text
    assert "LiteLLM refuses (400) a prompt its own count says no rig holds; --largest-decides leaves it to the rig" in text
    decided = render([SMALL, LARGE], RouterOptions(largest_decides=True))
    assert "# box1/qwen3.6-27b: max_input_tokens 1,000,000,000, a limit no prompt reaches" in decided
    assert "LiteLLM's own 408 here; `--out DIR` adds the hook" in text
    assert yaml.safe_load(text) == litellm_config([SMALL, LARGE, DOWN], RouterOptions())


def test_changes_name_each_rig_whose_context_moved() -> None:
    before = render([SMALL, LARGE], RouterOptions())
    shrunk = RigReading("box1", LARGE.url, LARGE.api_key_env, (ServedModel("qwen3.6-27b", 65_536),))
    assert changes(before, [SMALL, shrunk], RouterOptions()) == ["box1/qwen3.6-27b: max_model_len 131,072 -> 65,536"]
    assert changes(before, [SMALL, LARGE], RouterOptions()) == []
    assert changes(before, [SMALL], RouterOptions()) == ["box1/qwen3.6-27b: gone from the config"]
    assert changes("model_list: 3\n", [SMALL], RouterOptions()) == ["the config there is not one rigctl wrote: replaced"]


@pytest.mark.parametrize(
    ("table", "why"),
    [
        ('url = "ftp://box2:8000"', "rigs.box2.url: must be the http(s) address its apps connect to"),
        ('url = "http://me:pw@box2:8000"', "no user or password"),
        ('url = "http://box2:8000/v1"', "no path"),
        ('url = "http://box2:99999"', "rigs.box2.url"),
        ('url = "http://box2:8000"\napi_key_env = "BOX 2"', "rigs.box2.api_key_env: must be the name of an environment variable"),
        ('rigctl = "rigctl"', "needs ssh (to drive it"),
    ],
)
def test_a_rig_entry_is_refused_with_its_line(table: str, why: str) -> None:
    write_config(f"[rigs.box2]\n{table}\n")
    with pytest.raises(BadInputError, match=r"config\.toml:[1-3]: rigs\.box2") as raised:
        load_settings()
    assert why in str(raised.value)


def test_a_rig_with_only_a_url_routes_but_is_not_driven_over_ssh() -> None:
    write_config('[rigs.box2]\nurl = "http://box2:8000/"\napi_key_env = "BOX2_KEY"\n')
    (rig,) = load_settings().rigs
    assert (rig.url, rig.api_key_env, rig.ssh) == ("http://box2:8000", "BOX2_KEY", "")
    with pytest.raises(BadInputError, match="has no ssh"):
        remote_rig(load_settings(), "box2")
