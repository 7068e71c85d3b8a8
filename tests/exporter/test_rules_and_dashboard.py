"""The alerting rules and the Grafana dashboard `rigctl exporter` prints: written from the same
families the exporter serves and from vLLM's metric names, so every rigctl_ and vllm: series they
name is one that exists; every expression parsed by the real promtool (Debian's prometheus
package, as .ci/run installs it); the rules follow the owner's [alerts] thresholds."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rigctl.exporter import families
from rigctl.exporter.grafana import expressions
from rigctl.vllm.metric_names import SNAPSHOT_NAMES
from tests.faults.rig import Rig

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (apt-get install prometheus: Debian's package has it)"
)


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path / "home")


def named_series(expr: str) -> set[str]:
    return set(re.findall(r"\b(?:rigctl_[a-z_]+|vllm:[a-z_]+)", expr))


def known(name: str) -> bool:
    if name.startswith("rigctl_"):
        return name in {families.exposed(f) for f in families.FAMILIES}
    return name in SNAPSHOT_NAMES


def rule_list(rig: Rig) -> list[dict[str, object]]:
    done = rig.rigctl("exporter", "--rules")
    assert done.returncode == 0, done.stderr
    groups = json.loads(done.stdout)["groups"]
    rules: list[dict[str, object]] = groups[0]["rules"]
    return rules


def test_every_series_the_rules_and_the_dashboard_name_exists(rig: Rig) -> None:
    exprs = [str(r["expr"]) for r in rule_list(rig)] + expressions()
    named = set().union(*(named_series(e) for e in exprs))
    assert {n for n in named if not known(n)} == set()
    assert "rigctl_gpu_energy_joules_total" in named and "vllm:num_requests_waiting" in named


def test_the_rules_follow_the_owners_thresholds(rig: Rig) -> None:
    rig.write_config("[alerts]\nstall_s = 90\nqueue_s = 12\nwindow_s = 120\n")
    by_name = {str(r["alert"]): r for r in rule_list(rig)}
    assert {"RigctlEngineDown", "RigctlAdmissionStalled", "RigctlQueueTimeHigh", "RigctlKvCacheFull"} <= set(by_name)
    assert {"RigctlGpuThrottled", "RigctlHitRateCollapsed", "RigctlNothingServes"} <= set(by_name)
    assert by_name["RigctlAdmissionStalled"]["for"] == "90s"
    queue = str(by_name["RigctlQueueTimeHigh"]["expr"])
    assert queue.endswith("> 12") and "[120s]" in queue


@needs_promtool
def test_promtool_checks_the_rules(rig: Rig, tmp_path: Path) -> None:
    rules = tmp_path / "rigctl.rules.yml"
    rules.write_text(rig.rigctl("exporter", "--rules").stdout)
    done = subprocess.run([str(PROMTOOL), "check", "rules", str(rules)], capture_output=True, text=True, timeout=60)
    count = len(rule_list(rig))
    assert done.returncode == 0 and f"SUCCESS: {count} rules found" in done.stdout, done.stdout + done.stderr


def promtool_alert_test(
    tmp_path: Path, rules_text: str, series: dict[str, str], alertname: str, eval_time: str, firing: dict[str, str]
) -> None:
    """promtool's rule unit test (Prometheus's own evaluator) of the rules `rigctl exporter
    --rules` printed: `series` (name -> promtool's values, one every 15 s) make `alertname` fire
    at `eval_time` for exactly the rigs in `firing` (rig -> severity), with the rule's summary."""
    rules = tmp_path / "rigctl.rules.yml"
    rules.write_text(rules_text)
    (rule,) = [r for r in json.loads(rules_text)["groups"][0]["rules"] if r["alert"] == alertname]
    summary = str(rule["annotations"]["summary"])
    expected = [
        {
            "exp_labels": {"rig": rig, "severity": severity},
            "exp_annotations": {"summary": summary.replace("{{ $labels.rig }}", rig)},
        }
        for rig, severity in sorted(firing.items())
    ]
    test = {
        "interval": "15s",
        "input_series": [{"series": name, "values": values} for name, values in series.items()],
        "alert_rule_test": [{"eval_time": eval_time, "alertname": alertname, "exp_alerts": expected}],
    }
    cases = tmp_path / "cases.yml"
    cases.write_text(json.dumps({"rule_files": [str(rules)], "evaluation_interval": "15s", "tests": [test]}))
    done = subprocess.run([str(PROMTOOL), "test", "rules", str(cases)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@needs_promtool
def test_nothing_serving_after_a_failed_switch_fires_and_a_stop_does_not(rig: Rig, tmp_path: Path) -> None:
    """A rig whose switch failed with nothing serving fires RigctlNothingServes at once; a rig the
    owner stopped stays quiet."""
    series = {
        'rigctl_serving_up{rig="broken"}': "0x8",
        'rigctl_switch_state_info{rig="broken",status="failed",profile=""}': "1x8",
        'rigctl_serving_up{rig="parked"}': "0x8",
        'rigctl_switch_state_info{rig="parked",status="stopped",profile=""}': "1x8",
    }
    rules = rig.rigctl("exporter", "--rules").stdout
    assert "a switch failed and so did its rollback (or was left): nothing serves" in rules
    promtool_alert_test(tmp_path, rules, series, "RigctlNothingServes", "1m", {"broken": "error"})


@needs_promtool
def test_promtool_parses_every_dashboard_query(rig: Rig, tmp_path: Path) -> None:
    board = json.loads(rig.rigctl("exporter", "--grafana").stdout)
    queries = [t["expr"] for p in board["panels"] for t in p["targets"]] + [a["expr"] for a in board["annotations"]["list"]]
    assert sorted(queries) == sorted(expressions())
    # as recording rules, with the dashboard's variable as Grafana fills it for "All"
    recorded = [{"record": f"rigctl:query_{i}", "expr": q.replace("$rig", ".*")} for i, q in enumerate(queries)]
    path = tmp_path / "queries.yml"
    path.write_text(json.dumps({"groups": [{"name": "dashboard", "rules": recorded}]}))
    done = subprocess.run([str(PROMTOOL), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
