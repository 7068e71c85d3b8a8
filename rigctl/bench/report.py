"""Showing a run: the table owners publish (one column an arm), the gate, the controls'
drift, the verdict and why; and a kept run summarised again from its raw files alone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from rigctl import fmt
from rigctl.bench.arm import ArmRecord
from rigctl.bench.live import read_live
from rigctl.bench.loadgen import RequestResult
from rigctl.bench.metrics import METRICS, TABLE, WHEN_PRESENT, Metric
from rigctl.bench.plan import PlanError
from rigctl.bench.plan_file import parse_plan
from rigctl.bench.quality import QualityResult
from rigctl.bench.rawdir import RawDir, kept_runs
from rigctl.bench.run import BenchResult, judge, run_status
from rigctl.bench.summary import Sample, arm_figures
from rigctl.engine.coldcache import cold_check, verification_baseline
from rigctl.engine.metrics import EngineSnapshot, snapshot
from rigctl.engine.prom import ExpositionError, parse
from rigctl.errors import BadInputError
from rigctl.profiles.summary import Change
from rigctl.vllm.metric_names import SNAPSHOT_NAMES


def value_text(metric: Metric, value: float | None) -> str:
    if value is None:
        return fmt.NA
    if metric.kind == "seconds":
        return fmt.latency(value)
    if metric.kind == "ratio":
        return (
            f"{value:.2f}x"
            if metric.name == "kv_pool_per_max_len"
            else (f"{value:.2f}" if metric.name == "spec_acceptance_length" else fmt.frac_pct(value))
        )
    if metric.kind in ("tokens", "count"):
        return f"{value:,.0f}"
    if metric.kind == "joules":
        return f"{value:.3f}"
    return f"{value:,.1f}"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _change(a: float | None, b: float | None) -> str:
    return f"{(b - a) / abs(a) * 100:+.1f}%" if a and b is not None else ""


LETTERS = "ABCDEFGH"


def render(data: dict[str, Any]) -> str:
    """The text report of a run (the object `rigctl bench --json` prints): one column per build
    (the mean of its arms), each candidate's change against the control, then every arm, the gate,
    the evidence and each candidate's verdict with all its reasons."""
    arms = data.get("arms", [])
    gate_metric = data["gate"]["metric"]
    candidates = [c["profile"] for c in data.get("candidates", [])] or [data["candidate"]]
    builds = [data["control"], *[c for c in candidates if c != data["control"]]]
    letter = {name: LETTERS[i] for i, name in enumerate(builds)}
    lines = [
        f"bench {data['plan']}: {data.get('description') or ''}".rstrip(": "),
        "  "
        + "   ".join(f"{letter[b]} = {'control' if b == data['control'] else 'candidate'} {b}" for b in builds)
        + f"   order {data['order']}",
    ]
    workload = data.get("workload", {})
    if workload:
        amount = (
            f"{workload['requests']} requests"
            if workload.get("requests")
            else f"{workload.get('duration_s')} s"
            if workload.get("duration_s")
            else "every request"
        )
        source = workload.get("trace") or workload.get("dataset")
        what = (
            f"{workload.get('kind')} {source}"
            if source
            else f"{workload.get('kind')}, ~{workload.get('prompt_tokens')} prompt tokens, {workload.get('max_tokens')} out"
        )
        lines.append(f"  workload {what}: {amount} at {workload.get('concurrency')} concurrent, {workload.get('arrival')} arrival")
    for entry in data.get("candidates", []) or [{"profile": data["candidate"], "change": data.get("changes", [])}]:
        for change in entry.get("change", []):
            changed = Change(change["what"], change["control"], change["candidate"])
            lines.append(f"  {letter.get(entry['profile'], '?')} changes {changed}")
    others = builds[1:]
    header = ["", *[letter[b] for b in builds], *[f"{letter[b]} vs A" for b in others]]
    rows = [header]
    names = list(TABLE) + [n for n in WHEN_PRESENT if any(a.get(n) is not None for a in arms)]
    for name in (gate_metric, *(g["metric"] for g in data["gate"].get("guards", []))):
        if name not in names:
            names.append(name)
    for name in names:
        metric = METRICS[name]
        label = metric.label + (" ◀ gate" if name == gate_metric else "")
        means = {b: _mean([a[name] for a in arms if a["profile"] == b and a.get(name) is not None]) for b in builds}
        rows.append(
            [label, *[value_text(metric, means[b]) for b in builds], *[_change(means[builds[0]], means[b]) for b in others]]
        )
    if any(a.get("quality") for a in arms):
        rows.append(
            [
                "quality",
                *[
                    " / ".join(str((a.get("quality") or {}).get("score") or "failed") for a in arms if a["profile"] == b)
                    for b in builds
                ],
                *["" for _ in others],
            ]
        )
    lines += ["", fmt.table(rows, "<" + ">" * (len(header) - 1)), ""]
    for arm in arms:
        cache = {True: "cold", False: "WARM"}.get(arm["cold_cache"], "unproven")
        value = arm.get(gate_metric)
        interval = (arm.get("intervals") or {}).get(gate_metric)
        shown = value_text(METRICS[gate_metric], value) + (
            f" (95%: {value_text(METRICS[gate_metric], interval[0])} to {value_text(METRICS[gate_metric], interval[1])})"
            if interval
            else ""
        )
        lines.append(
            f"  arm {arm['number']} {letter.get(arm['profile'], '?')}: {arm['completed']}/{arm['requests']} "
            f"requests, {gate_metric} {shown}, cache {cache}, GPU peak {fmt.celsius(arm.get('gpu_temp_peak_c'))}"
        )
    gate = data["gate"]
    lines.append("")
    lines.append(
        f"gate: {gate_metric} {gate['direction']} by at least {gate['min_change'] * 100:.1f}%, every arm on "
        f"{gate.get('min_requests', 20)}+ requests"
        + "".join(f"; guard {g['metric']} at most {g['max_regression'] * 100:.1f}% worse" for g in gate.get("guards", []))
    )
    if data.get("control_drift") is not None:
        lines.append(f"controls' drift: {data['control_drift'] * 100:.1f}%")
    for note in [*data.get("notes", []), *data.get("warnings", [])]:
        lines.append(f"note: {note}")
    for arm in arms:
        for error in arm.get("errors", [])[:2]:
            lines.append(f"arm {arm['number']} error: {error}")
    status = str(data.get("status") or "failed").replace("_", " ")
    verdicts = data.get("candidates") or []
    if data.get("verdict") and len(verdicts) > 1:
        for entry in verdicts:
            gain = f" ({entry['gain'] * 100:+.1f}%)" if entry.get("gain") is not None else ""
            lines.append(
                f"verdict {letter.get(entry['profile'], '?')} {entry['profile']}: "
                f"{str(entry['verdict']).upper()}{gain}: " + "; ".join(entry.get("reasons") or [])
            )
    elif data.get("verdict"):
        reasons = data.get("reasons") or [data.get("reason") or "no reason was recorded"]
        lines.append(f"verdict: {data['verdict'].upper()}: {reasons[0]}")
        lines += [f"  also: {r}" for r in reasons[1:]]
    else:
        reason = data.get("reason") or data.get("message") or "no reason was recorded"
        lines.append(f"verdict: {status.upper()}: {reason}")
    if data.get("serving"):
        restored = data.get("restored")
        lines.append(f"serving now: {data['serving']}" + (" (it served before the bench: put back)" if restored else ""))
    lines.append(f"raw data: {data['raw_dir']}")
    return "\n".join(lines)


def _snapshot(raw: RawDir, name: str) -> EngineSnapshot | None:
    text = raw.read_text(name)
    if not text:
        return None
    try:
        return snapshot(parse(text, names=SNAPSHOT_NAMES), 0.0)
    except ExpositionError:
        return None


def _request(data: dict[str, Any]) -> RequestResult:
    return RequestResult(**{k: data[k] for k in RequestResult.__dataclass_fields__ if k in data})


def reload(raw: RawDir) -> dict[str, Any]:
    """A kept run summarised again from its raw files (plan.toml, requests, scrapes, samples):
    the figures and the verdict are recomputed, not read back."""
    if not (raw.path / "run.json").is_file():
        raise BadInputError(f"{raw.path}: not a kept bench run (no run.json)")
    try:
        plan = parse_plan(raw.path / "plan.toml", raw.read_text("plan.toml") or "", read_inputs=False)
        run = raw.read_json("run.json")
        kept = raw.read_json("verdict.json") if (raw.path / "verdict.json").exists() else {}
    except (PlanError, ValueError, OSError) as exc:
        raise BadInputError(f"{raw.path}: the kept run cannot be read: {exc}") from exc
    arms = []
    for number, (role, profile) in enumerate(run.get("arms", []), start=1):
        stem = raw.arm_stem(number, role)
        if not (raw.path / f"{stem}.json").exists():
            break
        summary = raw.read_json(f"{stem}.json")
        results = [_request(r) for r in raw.read_lines(f"{stem}.requests.jsonl")]
        samples = [Sample.from_json(s) for s in raw.read_lines(f"{stem}.samples.jsonl")]
        boot = summary.get("boot", {})
        figures = arm_figures(
            results,
            float(summary.get("duration_s") or 0.0),
            _snapshot(raw, f"{stem}.metrics-before.prom"),
            _snapshot(raw, f"{stem}.metrics-after.prom"),
            samples,
            boot.get("kv_tokens"),
            boot.get("max_model_len"),
        )
        cold = cold_check(
            _snapshot(raw, f"{stem}.metrics-cold.prom"),
            _snapshot(raw, f"{stem}.metrics-before.prom"),
            _snapshot(raw, f"{stem}.metrics-after.prom"),
            verification_baseline(boot),
        )
        arms.append(
            ArmRecord(
                number,
                role,
                profile,
                cold,
                figures,
                boot,
                summary.get("warmup_requests", 0),
                summary.get("warmup_failed", 0),
                tuple(summary.get("serving_gpus", ())),
                summary.get("started", 0.0),
                str(summary.get("server_died") or ""),
                QualityResult.from_json(summary.get("quality")),
            )
        )
    status, message = kept.get("status"), kept.get("message", "")
    if status is None:  # no verdict was written: the run is going on, or its rigctl died
        status, message = ending(raw)
    changes = run.get("changes", {})
    if isinstance(changes, list):  # a run kept before several candidates: its one candidate's list
        changes = {plan.candidate: changes}
    result = BenchResult(
        plan,
        raw,
        arms,
        status=run_status(status),
        message=message,
        serving=kept.get("serving"),
        restored=kept.get("restored") if isinstance(kept.get("restored"), str) else None,
        changes=changes,
        warnings=run.get("warnings", []),
    )
    if result.status == "complete":
        result.verdicts = judge(plan, arms, changes, run.get("rig"))
    return result.to_json()


def ending(raw: RawDir) -> tuple[str, str]:
    """(status, why) of a kept run that has no verdict: running, or cut short and how."""
    live = read_live()
    if live is not None and Path(live.raw_dir) == raw.path:
        if not live.cut_short:
            p = live.progress
            return "running", f"running: arm {p.number} of {p.arms} ({p.role} {p.profile}, {p.phase})"
        return "cut_short", f"cut short: {live.why()}"
    return "cut_short", "cut short: no verdict was written (the rigctl that ran it stopped before the end)"


def _metric_change(kept: dict[str, Any]) -> float | None:
    """The gate metric's own relative change, signed as the run's table and headline sign it (a
    TTFT that fell is negative); the kept "change" is the improvement (positive when better), its
    sign flipped for a lower-is-better metric."""
    control, candidate = kept.get("control_mean"), kept.get("candidate_mean")
    if isinstance(control, (int, float)) and isinstance(candidate, (int, float)) and control:
        return (candidate - control) / abs(control)
    change = kept.get("change")
    lower = (kept.get("gate") or {}).get("direction") == "lower" if isinstance(kept.get("gate"), dict) else False
    return (-change if lower else change) if isinstance(change, (int, float)) else None


def list_rows() -> list[list[str]]:
    rows = [["run", "when", "control -> candidate", "gate", "change", "verdict"]]
    for raw in kept_runs():
        try:
            run = raw.read_json("run.json")
            kept = raw.read_json("verdict.json") if (raw.path / "verdict.json").exists() else {}
        except (OSError, ValueError):
            rows.append([raw.path.name, "", "(unreadable)", "", "", ""])
            continue
        arms = run.get("arms", [])
        control = next((p for r, p in arms if r == "control"), "?")
        candidate = next((p for r, p in arms if r == "candidate"), "?")
        change = _metric_change(kept)
        outcome = kept.get("verdict") or (kept.get("message") if kept.get("status") == "cut_short" else None) or kept.get("status")
        if not kept:
            outcome = ending(raw)[1]
        rows.append(
            [
                raw.path.name,
                time.strftime("%Y-%m-%d %H:%M", time.localtime(run.get("started", 0))),
                f"{control} -> {candidate}",
                json.dumps(run.get("gate", {}).get("metric")).strip('"'),
                f"{change * 100:+.1f}%" if isinstance(change, (int, float)) else "",
                str(outcome),
            ]
        )
    return rows
