"""Property-based tests over every parser of outside input: a model's config.json, /metrics
expositions, boot logs, profiles, plans, Prometheus answers and rigctl's own state files. Each
property is value_or_one_line (tests/properties/bounds.py): a value or one RigctlError line, never
another exception, in bounded memory; the pipeline after each reader (the fit, the snapshot and
its interval, the record's rows) runs on what it accepted. Shrunk inputs that broke a property
are kept as @example regression cases."""

from __future__ import annotations

import copy
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import tomlkit
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rigctl import jsonio
from rigctl.engine import report
from rigctl.engine.derive import interval
from rigctl.engine.metrics import snapshot
from rigctl.engine.prom import parse
from rigctl.errors import RigctlError
from rigctl.fit.advise import layouts, recommend
from rigctl.fit.build import inputs_for
from rigctl.record.prometheus import range_result, rows_of
from rigctl.state.boots import BootRecord
from rigctl.state.statefiles import ActiveState, ServerRecord
from rigctl.vllm.bootlog import read_bootlog
from rigctl.vllm.flags import ServeFlags
from rigctl.vllm.metric_names import SNAPSHOT_NAMES
from rigctl.vllm.model import dims_from_config, load_dims
from rigctl.vllm.weights import estimate, quant_family
from tests.fit.configs import config
from tests.properties.bounds import value_or_one_line
from tests.properties.strategies import NUMBER_TEXTS, hostile, json_values, mutate_lines

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
GIB = 1024**3
# The default suite: the same examples every run (a CI failure is one a developer sees again), in
# seconds. RIGCTL_PROPERTIES=deep searches far wider and at random, to find new regression examples.
DEEP = os.environ.get("RIGCTL_PROPERTIES") == "deep"
PROPERTY = settings(
    max_examples=3000 if DEEP else 150,
    deadline=None,
    derandomize=not DEEP,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

# -- a model's config.json ---------------------------------------------------------------

BASES = [json.loads(config(name).read_text()) for name in ("qwen3.6-27b", "qwen3.6-35b-a3b", "llama-3.1-8b")]
CONFIG_KEYS = [
    "num_hidden_layers",
    "num_attention_heads",
    "hidden_size",
    "num_key_value_heads",
    "head_dim",
    "intermediate_size",
    "vocab_size",
    "max_position_embeddings",
    "layer_types",
    "full_attention_interval",
    "linear_num_key_heads",
    "linear_num_value_heads",
    "linear_key_head_dim",
    "linear_value_head_dim",
    "linear_conv_kernel_dim",
    "mamba_ssm_dtype",
    "torch_dtype",
    "mtp_num_hidden_layers",
    "num_experts",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "quantization_config",
    "text_config",
    "architectures",
    "tie_word_embeddings",
]


def _fit(raw: dict[str, Any]) -> Any:
    """The whole fit a config feeds: dimensions, weights, every layout on 2x24 GiB, the advice."""
    dims = dims_from_config(raw, "config.json")
    flags = ServeFlags(model="m", tensor_parallel_size=2, max_model_len=131072, speculative_method="mtp", num_speculative_tokens=2)
    weights = estimate(dims, quant_family(None, dims.name, dims.quant_bits))
    inputs = inputs_for(flags, dims, weights, (24 * GIB, 24 * GIB))
    found = layouts(inputs)
    recommend(inputs, found)
    for layout in found:
        if layout.pool is not None:
            assert layout.pool.tokens >= 0
    return found


@PROPERTY
@given(
    base=st.sampled_from(BASES), changes=st.dictionaries(st.sampled_from(CONFIG_KEYS), hostile, max_size=4), nested=st.booleans()
)
@example(base=BASES[2], changes={"num_attention_heads": 0}, nested=False)  # ZeroDivisionError before
@example(base=BASES[2], changes={"hidden_size": 10**400}, nested=False)  # OverflowError before
@example(base=BASES[2], changes={"num_hidden_layers": "32"}, nested=False)  # TypeError before
@example(base=BASES[2], changes={"num_hidden_layers": -32}, nested=False)  # "-32 attention layers" before
@example(base=BASES[0], changes={"linear_num_value_heads": 0}, nested=True)
@example(base=BASES[2], changes={"head_dim": math.inf}, nested=False)
def test_a_hostile_config_is_a_fit_or_one_line(base: dict[str, Any], changes: dict[str, Any], nested: bool) -> None:
    raw = copy.deepcopy(base)
    target = raw["text_config"] if nested and isinstance(raw.get("text_config"), dict) else raw
    target.update(changes)
    value_or_one_line(lambda: _fit(raw))


@PROPERTY
@given(
    text=st.one_of(
        st.text(max_size=200),
        st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
        st.integers(1, 5000).map(lambda n: "[" * n + "]" * n),
        st.integers(1, 5000).map(lambda n: '{"a":' * n + "1" + "}" * n),
        json_values.map(lambda v: json.dumps(v, allow_nan=True)),
    )
)
@example(text='{"num_hidden_layers": 32, "hidden_size": Infinity}')
@example(text="[" * 100_000 + "]" * 100_000)  # RecursionError before
@example(text='{"num_hidden_layers": ' + "9" * 5000 + "}")  # ValueError (int digits) before
def test_a_config_file_of_any_text_is_a_fit_or_one_line(text: str) -> None:
    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "config.json"
        path.write_text(text, errors="surrogatepass")
        value_or_one_line(lambda: load_dims(path))


# -- /metrics expositions ----------------------------------------------------------------

SCRAPES = [p.read_text() for p in sorted(FIXTURES.glob("vllm*/*.prom"))]
SAMPLE_LINES = [line for text in SCRAPES for line in text.splitlines() if line and not line.startswith("#")][:400]
line_texts = st.one_of(
    st.sampled_from(SAMPLE_LINES),
    st.text(max_size=60),
    st.builds(
        lambda name, label, value: f"vllm:{name}{{{label}}} {value}",
        st.sampled_from(sorted(n[5:] for n in SNAPSHOT_NAMES if n.startswith("vllm:"))),
        st.sampled_from(
            [
                'engine="0"',
                'le="+Inf"',
                'le="abc"',
                'position="²"',
                'kv_cache_size_tokens="inf"',
                ('num_gpu_blocks="1e308",block_size="1e308"'),
                'finished_reason="stop"',
                'engine=""',
                "",
            ]
        ),
        NUMBER_TEXTS,
    ),
)


def _shown(before: str, after: str) -> str:
    first = snapshot(parse(before, names=SNAPSHOT_NAMES), 0.0)
    second = snapshot(parse(after, names=SNAPSHOT_NAMES), 10.0)
    full = snapshot(parse(after), 10.0)
    assert full.is_vllm == second.is_vllm
    figures = interval(first, second, 10.0)
    shown = report.text(second, figures) + report.text(first, None)
    jsonio.dumps(report.to_json(second, figures))
    assert "nan" not in shown.lower().replace("n/a", "") and "inf" not in shown.lower().replace("info", "")
    return shown


def test_a_hit_count_near_the_largest_float_shows_no_infinity() -> None:
    """Found by the deep search: 1e308 hits of 32 queried tokens printed `inf%`."""
    before = 'vllm:prefix_cache_queries_total{engine="0"} 32.0\n'
    value_or_one_line(lambda: _shown(before, before + 'vllm:gpu_prefix_cache_hits_total{e=""}1e308\n'))


@PROPERTY
@given(data=st.data(), base=st.sampled_from(SCRAPES))
def test_a_hostile_exposition_is_figures_or_one_line(data: st.DataObject, base: str) -> None:
    before = "\n".join(mutate_lines(base.splitlines(), data, line_texts)) + "\n"
    after = "\n".join(mutate_lines(base.splitlines(), data, line_texts)) + data.draw(st.sampled_from(["\n", ""]))
    value_or_one_line(lambda: _shown(before, after))


# -- boot logs -----------------------------------------------------------------------------

BOOTLOGS = [p.read_text(errors="replace").splitlines() for p in sorted(FIXTURES.glob("vllm*/*.log"))]
LOG_LINES = [line for lines in BOOTLOGS for line in lines][:600]


@PROPERTY
@given(data=st.data(), base=st.sampled_from(BOOTLOGS))
def test_a_hostile_boot_log_is_a_report(data: st.DataObject, base: list[str]) -> None:
    lines = mutate_lines(base, data, st.one_of(st.sampled_from(LOG_LINES), st.text(max_size=80)))

    def read() -> Any:
        found = read_bootlog(iter(lines))
        jsonio.dumps(found.to_json())
        return found

    value_or_one_line(read)


# -- profiles and plans --------------------------------------------------------------------

VLLM_KEYS = [
    "tensor_parallel_size",
    "data_parallel_size",
    "max_model_len",
    "max_num_seqs",
    "gpu_memory_utilization",
    "kv_cache_dtype",
    "quantization",
    "speculative_config",
    "max_num_batched_tokens",
    "port",
    "host",
    "block_size",
    "enable_prefix_caching",
    "kv_cache_memory_bytes",
    "api_key",
    "max_num_seq",
    "served_model_name",
    "enforce_eager",
    "async_scheduling",
]
toml_values = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.booleans(),
    st.lists(st.integers(-5, 5), max_size=3),
    st.dictionaries(
        st.sampled_from(["method", "num_speculative_tokens", "model"]),
        st.one_of(st.integers(-3, 10**6), st.text(max_size=8)),
        max_size=3,
    ),
    st.sampled_from([0, -1, 10**18, "1k", "131072", "auto", "fp8", "0.0.0.0"]),
)


def _toml(data: dict[str, Any]) -> str:
    return tomlkit.dumps(data)


@PROPERTY
@given(
    vllm=st.dictionaries(st.sampled_from(VLLM_KEYS), toml_values, max_size=5),
    top=st.dictionaries(
        st.sampled_from(["model", "description", "extends", "env", "rigctl", "bogus"]),
        st.one_of(toml_values, st.just("qwen36-27b-awq-tp2")),
        max_size=3,
    ),
    junk=st.sampled_from(["", "\n[vllm\n", "\nx = [[[[[[[[[[[[\n", "\n" + "a = [" * 3000 + "]" * 3000 + "\n"]),
)
@example(vllm={}, top={"model": "qwen36-27b-awq-tp2", "extends": "\r"}, junk="")  # a message split in two (deep)
def test_a_hostile_profile_is_checked_or_one_line_each(vllm: dict[str, Any], top: dict[str, Any], junk: str) -> None:
    from rigctl.fit.check import check_profile
    from rigctl.profiles.store import ProfileStore
    from rigctl.profiles.vllm_version import OptionTables
    from rigctl.serve.launchers import SIM_COMMAND
    from rigctl.sim.rig import SimulatedBackend
    from rigctl.sim.rigspec import load_rig

    rig = SimulatedBackend(load_rig("2x3090-nvlink")).info()
    with tempfile.TemporaryDirectory() as where:
        user = Path(where)
        path = user / "p.toml"
        body = {"extends": "qwen36-27b-awq-tp2", **top, "vllm": vllm}
        path.write_text(_toml(body) + junk)
        tables = OptionTables(SIM_COMMAND, cached_only=True)

        def check() -> Any:
            profile = ProfileStore(user=user).load("p")
            return check_profile(profile, tables.choose(profile).table, rig, tables.default_command)

        value_or_one_line(check, where=str(path) if not junk.startswith("\na = [") else None)


PLAN_WORKLOAD_KEYS = [
    "kind",
    "concurrency",
    "requests",
    "duration_s",
    "arrival",
    "interval_s",
    "rate_per_s",
    "max_tokens",
    "prompt_tokens",
    "shared_prefix_tokens",
    "seed",
    "warmup_requests",
    "temperature",
    "timeout_s",
    "bogus",
]


@PROPERTY
@given(
    workload=st.dictionaries(st.sampled_from(PLAN_WORKLOAD_KEYS), toml_values, max_size=5),
    gate=st.dictionaries(
        st.sampled_from(["metric", "direction", "min_change", "guard"]),
        st.one_of(toml_values, st.just("output_tok_per_s")),
        max_size=3,
    ),
    top=st.dictionaries(
        st.sampled_from(["control", "candidate", "order", "description"]), st.one_of(toml_values, st.just("good")), max_size=4
    ),
)
def test_a_hostile_plan_is_a_plan_or_one_line_each(workload: dict[str, Any], gate: dict[str, Any], top: dict[str, Any]) -> None:
    from rigctl.bench.plan_file import parse_plan

    path = Path("/plans/p.toml")
    text = _toml(
        {
            "control": "a",
            "candidate": "b",
            **top,
            "workload": {"kind": "chat-short", **workload},
            "gate": {"metric": "output_tok_per_s", "min_change": 0.05, **gate},
        }
    )
    value_or_one_line(lambda: parse_plan(path, text), where=str(path))


# -- Prometheus answers --------------------------------------------------------------------

GOOD_ANSWER = {
    "status": "success",
    "data": {
        "resultType": "matrix",
        "result": [
            {"metric": {"__name__": "vllm:num_requests_running", "engine": "0"}, "values": [[1000.0, "1"], [1010.0, "2"]]},
            {"metric": {"__name__": "vllm:prompt_tokens_total"}, "values": [[1000.0, "10"], [1010.0, "NaN"]]},
            {
                "metric": {"__name__": "vllm:time_to_first_token_seconds_bucket", "le": "+Inf"},
                "values": [[1000.0, "1"], [1010.0, "+Inf"]],
            },
        ],
    },
}


def _first_series(body: Any) -> Any:
    data = body.get("data") if isinstance(body, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    return result if isinstance(result, list) and result else None


def _mutated_answer(data: st.DataObject) -> Any:
    body: Any = copy.deepcopy(GOOD_ANSWER)
    for _ in range(data.draw(st.integers(0, 4))):
        where = data.draw(st.sampled_from(["top", "data", "result", "series", "metric", "values", "point"]))
        value = data.draw(hostile)
        result = _first_series(body)
        series = result[0] if result else None
        if where == "top":
            body = value if data.draw(st.booleans()) else {**body, "status": value} if isinstance(body, dict) else body
        elif where == "data" and isinstance(body, dict):
            body["data"] = value
        elif where == "result" and isinstance(body, dict) and isinstance(body.get("data"), dict):
            body["data"]["result"] = value
        elif where == "series" and result:
            result[0] = value
        elif where == "metric" and isinstance(series, dict):
            series["metric"] = value
        elif where == "values" and isinstance(series, dict):
            series["values"] = value
        elif isinstance(series, dict) and isinstance(series.get("values"), list) and series["values"]:
            series["values"][0] = value
    return body


@PROPERTY
@given(data=st.data())
@example(data=None)  # the answer as Prometheus gives it
def test_a_hostile_prometheus_answer_is_rows_or_one_line(data: st.DataObject | None) -> None:
    body = copy.deepcopy(GOOD_ANSWER) if data is None else _mutated_answer(data)

    def read() -> Any:
        series = range_result(body, "Prometheus at http://127.0.0.1:9090")
        return rows_of(series, series, 10.0, [(0.0, "good")])

    found = value_or_one_line(read)
    if data is None:
        assert isinstance(found, list) and len(found) == 1 and found[0].profile == "good"


# -- rigctl's own state files --------------------------------------------------------------

RECORD = {
    "launcher": "process",
    "profile": "good",
    "started": 1.0,
    "log_path": "/x.log",
    "host": "127.0.0.1",
    "port": 8000,
    "served_names": ["m"],
    "argv": ["vllm", "serve"],
    "pid": 123,
    "create_time": 1.0,
    "boot_id": "b",
    "start_id": "k:1",
}
STATE = {"profile": "good", "last_good": "good", "status": "serving", "since": 1.0, "detail": "", "target": None, "owner_pid": None}
BOOT = {
    "profile": "good",
    "profile_hash": "h",
    "when": 1.0,
    "argv": [],
    "vllm_version": "0.33.0",
    "rig": None,
    "kv_tokens": 1,
    "max_concurrency": 1.0,
    "max_model_len": 1,
    "available_kv_gib": 1.0,
    "model_load_gib": 1.0,
    "model_load_seconds": 1.0,
    "graph_capture_seconds": 1.0,
    "boot_seconds": 1.0,
}


@PROPERTY
@given(
    kind=st.sampled_from([(ServerRecord, RECORD), (ActiveState, STATE), (BootRecord, BOOT)]),
    changes=st.dictionaries(st.text(max_size=6) | st.sampled_from(sorted(RECORD | STATE | BOOT)), hostile, max_size=4),
    drop=st.lists(st.sampled_from(sorted(RECORD | STATE | BOOT)), max_size=2),
)
@example(kind=(ServerRecord, RECORD), changes={"pid": -5}, drop=[])  # psutil's ValueError before
@example(kind=(ServerRecord, RECORD), changes={"port": 70000}, drop=[])
@example(kind=(ActiveState, STATE), changes={"since": math.inf}, drop=[])
@example(kind=(BootRecord, BOOT), changes={"available_kv_gib": 10**400}, drop=[])  # OverflowError (found deep)
def test_a_hostile_state_file_is_a_record_or_named_damaged(
    kind: tuple[type, dict[str, Any]], changes: dict[str, Any], drop: list[str]
) -> None:
    cls, base = kind
    data = {k: v for k, v in {**base, **changes}.items() if k not in drop}
    path = Path("/state/rigctl/server.json")
    found = value_or_one_line(lambda: jsonio.build(cls, data, path))
    if isinstance(found, RigctlError):
        assert str(found).startswith(f"{path}: damaged (")
    else:
        jsonio.dumps(found.to_json())


@PROPERTY
@given(
    text=st.one_of(
        st.text(max_size=300),
        json_values.map(lambda v: json.dumps(v, allow_nan=True)),
        st.dictionaries(st.sampled_from(sorted(RECORD)), hostile, max_size=6).map(
            lambda d: json.dumps({**RECORD, **d}, allow_nan=True)
        ),
    )
)
def test_a_state_file_of_any_text_is_read_or_named_damaged(text: str) -> None:
    from rigctl.state.statefiles import ServerRecord as Record

    with tempfile.TemporaryDirectory() as where:
        path = Path(where) / "server.json"
        path.write_text(text, errors="surrogatepass")

        def read() -> Any:
            data = jsonio.read_object(path)
            return None if data is None else jsonio.build(Record, data, path)

        found = value_or_one_line(read)
        if isinstance(found, RigctlError):
            assert str(found).startswith(f"{path}: damaged (")
