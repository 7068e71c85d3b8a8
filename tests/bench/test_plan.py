"""Plans: every mistake named with its file, line and key, all at once, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigctl.bench.plan import KINDS, PlanError
from rigctl.bench.plan_file import find_plan, load_plan, parse_plan

GOOD = """description = "async scheduling on, at 6 concurrent short requests"
control = "qwen36-27b-awq-tp2"
candidate = "qwen36-27b-awq-tp2-async"
order = "ABA"
[workload]
kind = "chat-short"
concurrency = 6
requests = 48
arrival = "burst"
prompt_tokens = 1024
max_tokens = 256
seed = 1
[gate]
metric = "output_tok_per_s"
direction = "higher"
min_change = 0.05
[[gate.guard]]
metric = "tpot_p95_s"
max_regression = 0.05
"""


def problems(text: str) -> list[str]:
    with pytest.raises(PlanError) as caught:
        parse_plan(Path("/p/plan.toml"), text)
    assert caught.value.exit_code == 2
    return caught.value.problems


def test_the_issue_example_loads_with_what_it_says() -> None:
    plan = parse_plan(Path("/p/async.toml"), GOOD)
    assert plan.name == "async" and plan.arms() == [
        ("control", "qwen36-27b-awq-tp2"),
        ("candidate", "qwen36-27b-awq-tp2-async"),
        ("control", "qwen36-27b-awq-tp2"),
    ]
    w = plan.workload
    assert (w.kind, w.concurrency, w.requests, w.duration_s, w.prompt_tokens, w.max_tokens) == (
        "chat-short",
        6,
        48,
        None,
        1024,
        256,
    )
    assert w.warmup_requests == 6 and w.ignore_eos and w.temperature == 0.0
    assert plan.gate.metric == "output_tok_per_s" and plan.gate.min_change == 0.05
    assert [(g.metric, g.max_regression) for g in plan.gate.guards] == [("tpot_p95_s", 0.05)]
    assert plan.text == GOOD and not plan.warnings


def test_defaults_come_from_the_workload_kind_and_the_metric() -> None:
    plan = parse_plan(
        Path("/p/a.toml"),
        'control = "a"\ncandidate = "b"\norder = "ABABA"\n[workload]\n'
        'kind = "agent-long"\n[gate]\nmetric = "ttft_p50_s"\nmin_change = 0.1\n',
    )
    kind = KINDS["agent-long"]
    assert (plan.workload.prompt_tokens, plan.workload.shared_prefix_tokens, plan.workload.max_tokens) == (
        kind.prompt_tokens,
        kind.shared_prefix_tokens,
        kind.max_tokens,
    )
    assert plan.gate.direction == "lower"  # TTFT is better lower: the plan need not say it
    assert [r for r, _ in plan.arms()] == ["control", "candidate", "control", "candidate", "control"]


def test_every_mistake_is_named_with_its_line_and_key() -> None:
    text = (
        'control = "a"\ncandidat = "b"\norder = "ABC"\n[workload]\nkind = "chat-long"\nconcurrency = 0\n'
        'requests = 10\nduration_s = 30\ninterval_s = 2.0\n[gate]\nmetric = "output_tok_per_sec"\n'
        'min_change = "5%"\n[[gate.guard]]\nmetric = "tpot_p95_s"\nmax_regression = 0.05\n[[gate.guard]]\n'
        'metric = "e2e_p95"\n'
    )
    found = problems(text)
    expected = [
        "/p/plan.toml:2: candidat: unknown key; did you mean 'candidate'?",
        '/p/plan.toml: candidate = "PROFILE" (or candidates = [...]) is missing: a plan names what it tries',
        "/p/plan.toml:3: order: must be one of ABA, ABABA, not 'ABC'",
        (
            "/p/plan.toml:5: workload.kind: must be one of chat-short, agent-long, prefill-heavy, "
            "decode-heavy, not 'chat-long'; did you mean 'agent-long'?"
        ),
        "/p/plan.toml:6: workload.concurrency: must be a whole number of requests at a time of at least 1, not 0",
        "/p/plan.toml:8: workload.duration_s: give requests or duration_s, not both",
        '/p/plan.toml:9: workload.interval_s: interval_s is for arrival = "interval"',
        "/p/plan.toml:11: gate.metric: unknown metric 'output_tok_per_sec'; did you mean 'output_tok_per_s'?",
        "/p/plan.toml:12: gate.min_change: must be a positive number, at most 10, not '5%'",
        "/p/plan.toml:17: gate.guard.metric: unknown metric 'e2e_p95'",  # the second guard's own line
        "/p/plan.toml:16: gate.guard: max_regression is missing",
    ]
    for want in expected:
        assert any(p.startswith(want) for p in found), f"{want!r} not in {found}"
    assert len(found) == len(expected)


def test_a_gate_pointing_the_wrong_way_is_refused() -> None:
    found = problems(
        'control = "a"\ncandidate = "b"\n[workload]\nkind = "chat-short"\n[gate]\n'
        'metric = "ttft_p95_s"\ndirection = "higher"\nmin_change = 0.05\n'
    )
    assert found == [
        ("/p/plan.toml:7: gate.direction: ttft_p95_s is better lower; direction = 'higher' would promote a worse candidate")
    ]


def test_the_gate_must_be_written_down() -> None:
    found = problems('control = "a"\ncandidate = "b"\n[workload]\nkind = "chat-short"\n')
    assert found == ["/p/plan.toml: [gate] is missing: write the criterion before the run (metric, min_change)"]
    found = problems('control = "a"\ncandidate = "b"\n[workload]\nkind = "chat-short"\n[gate]\nmetric = "output_tok_per_s"\n')
    assert found == [
        ("/p/plan.toml:5: gate: min_change is missing: the smallest relative gain that counts (0.05 = 5%), written before the run")
    ]


def test_arrivals_need_their_figure_and_a_prefix_needs_a_tail() -> None:
    found = problems(
        'control = "a"\ncandidate = "b"\n[workload]\nkind = "agent-long"\narrival = "poisson"\n'
        'prompt_tokens = 1000\nshared_prefix_tokens = 1000\n[gate]\nmetric = "ttft_p50_s"\n'
        "min_change = 0.05\n"
    )
    assert found == [
        '/p/plan.toml:5: workload.arrival: arrival = "poisson" needs rate_per_s (mean requests per second)',
        (
            "/p/plan.toml:7: workload.shared_prefix_tokens: must be below prompt_tokens (1000): every request needs a "
            "tail of its own"
        ),
    ]


def test_invalid_toml_names_its_line() -> None:
    found = problems('control = "a"\ncandidate = \n')
    assert found[0].startswith("/p/plan.toml:2: invalid TOML:")


def test_an_aa_plan_runs_but_is_called_what_it_is() -> None:
    plan = parse_plan(
        Path("/p/aa.toml"),
        'control = "a"\ncandidate = "a"\n[workload]\nkind = "chat-short"\n[gate]\nmetric = "output_tok_per_s"\nmin_change = 0.05\n',
    )
    assert plan.warnings == ("the candidate is the control (a): an A/A run, it measures this rig's noise and never promotes",)


def test_plans_are_found_by_name_in_the_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    plans = tmp_path / "rigctl" / "plans"
    plans.mkdir(parents=True)
    (plans / "async.toml").write_text(GOOD)
    assert load_plan("async").path == plans / "async.toml"
    with pytest.raises(PlanError, match=r"no plan named 'asyn' .*did you mean 'async'\?"):
        find_plan("asyn")
    with pytest.raises(PlanError, match="no such plan file"):
        find_plan(str(tmp_path / "missing.toml"))


def test_shipped_plans_parse_name_shipped_profiles_and_are_shadowed_by_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigctl.bench.plan_file import shipped_plans_dir
    from rigctl.profiles.store import ProfileStore

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    shipped = sorted(shipped_plans_dir().glob("*.toml"))
    assert shipped, "rigctl ships example plans"
    names = set(ProfileStore().names())
    for path in shipped:
        plan = load_plan(path.stem)
        assert plan.path == path and {plan.control, plan.candidate} <= names, path
    mine = tmp_path / "rigctl" / "plans"
    mine.mkdir(parents=True)
    (mine / f"{shipped[0].stem}.toml").write_text(GOOD)
    assert load_plan(shipped[0].stem).path == mine / f"{shipped[0].stem}.toml"
