"""A bench plan's file: `load_plan` reads one (a path, or a name in $XDG_CONFIG_HOME/rigctl/plans/)
and checks every key before anything is switched; a bad plan is a PlanError that names the file,
the line and the key of each mistake, all of them at once."""

from __future__ import annotations

import difflib
import time
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from rigctl import paths
from rigctl.bench.metrics import METRICS
from rigctl.bench.plan import (
    ARRIVALS,
    DATASET_FORMATS,
    KINDS,
    MIN_REQUESTS,
    ORDERS,
    BenchPlan,
    Gate,
    Guard,
    PlanError,
    Quality,
    Workload,
)
from rigctl.bench.plan_checks import PlanChecker
from rigctl.bench.trace import RECORDED, REPLAYED, TracedRequest, parse_window, read_dataset, read_recorded, read_trace
from rigctl.errors import BadInputError
from rigctl.files import read_input_text
from rigctl.gateway.recording import recorded_files, recordings_dir
from rigctl.rule_compounds import ListOf
from rigctl.rules import Amount, Command, Count, Flag, Number, Seconds, Text


def plans_dir() -> Path:
    return paths.config_dir() / "plans"


def shipped_plans_dir() -> Path:
    """Example plans shipped with rigctl (between shipped profiles); the user's win by name."""
    return Path(str(resources.files("rigctl.bench") / "plans"))


def plan_names() -> list[str]:
    """Every plan a name finds: the user's and the shipped ones, sorted."""
    return sorted({p.stem for where in (plans_dir(), shipped_plans_dir()) if where.is_dir() for p in where.glob("*.toml")})


def find_plan(name_or_path: str) -> Path:
    """A path as given, else a plan of that name in the user's plans directory."""
    given = Path(name_or_path).expanduser()
    if given.is_file() or "/" in name_or_path or name_or_path.endswith(".toml"):
        if not given.is_file():
            raise PlanError([f"{given}: no such plan file"])
        return given
    candidate = plans_dir() / f"{name_or_path}.toml"
    for where in (plans_dir(), shipped_plans_dir()):
        if (where / f"{name_or_path}.toml").is_file():
            return where / f"{name_or_path}.toml"
    known = plan_names()
    close = difflib.get_close_matches(name_or_path, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else (f"; plans there: {', '.join(known)}" if known else "")
    raise PlanError([f"no plan named {name_or_path!r} (looked for {candidate}){hint}"])


PLAN_LIMIT = 1024 * 1024


def load_plan(name_or_path: str) -> BenchPlan:
    path = find_plan(name_or_path)
    try:
        text = read_input_text(path, PLAN_LIMIT, "plan")
    except BadInputError as exc:
        raise PlanError([str(exc)]) from None
    return parse_plan(path, text)


TOP = ("description", "control", "candidate", "candidates", "order", "workload", "gate", "quality")
WORKLOAD_KEYS = (
    "kind",
    "window",
    "concurrency",
    "requests",
    "duration_s",
    "arrival",
    "interval_s",
    "rate_per_s",
    "prompt_tokens",
    "max_tokens",
    "shared_prefix_tokens",
    "seed",
    "warmup_requests",
    "temperature",
    "ignore_eos",
    "timeout_s",
    "trace",
    "dataset",
    "format",
    "speed",
    "max_requests",
)
GATE_KEYS = ("metric", "direction", "min_change", "guard", "min_requests")
QUALITY_KEYS = ("command", "timeout_s")
GUARD_KEYS = ("metric", "max_regression")

# Each key's rule, declared once (rigctl/rules.py), its message in the key's unit.
PROFILE_NAMES = ListOf(Text(filled=True), 'a list of profile names, e.g. ["awq", "autoround"]')
QUALITY_COMMAND = Command('["./my-eval.sh"]', line_ok=False)
CONCURRENCY = Count("requests at a time", 1)
REQUESTS = Count("requests", 1)
WARMUP = Count("requests")
TOKENS = Count("tokens", 1)
SHARED_TOKENS = Count("tokens")
SEED = Count()
DURATION = Seconds(positive=True)
INTERVAL = Seconds(positive=True)
TIMEOUT = Seconds(positive=True)
RATE = Amount("requests a second", positive=True)
SPEED = Number("times the recorded pace", 0, positive=True)
TEMPERATURE = Number(low=0)
MIN_CHANGE = Number("", 0, 10, positive=True)  # a relative gain: 0.05 is 5%
MAX_REGRESSION = Number("", 0)  # a relative loss: 0.05 is 5% worse


def parse_plan(path: Path, text: str, read_inputs: bool = True) -> BenchPlan:
    """The plan in `text`, every key checked; `read_inputs`: read its trace or dataset too (a kept
    run is summarised again from its own copy, `read_inputs` False)."""
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise PlanError([f"{path}: invalid TOML: nested too deep"]) from None
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        line = message.rsplit("(at line ", 1)[1].split(",")[0] if "(at line " in message else None
        raise PlanError([f"{path}:{line}: invalid TOML: {message}" if line else f"{path}: invalid TOML: {message}"]) from exc
    check = PlanChecker(path, text)
    check.unknown(data, TOP, ())
    description = check.value(data, "description", (), Text(), "")
    control = check.text(data, "control", ())
    candidates = _candidates(check, data)
    if "control" not in data:
        check.problem((), 'control = "PROFILE" is missing: a plan names its control and its candidate profile')
    order = check.text(data, "order", (), default="ABA", choices=ORDERS)
    workload = _workload(check, data)
    gate = _gate(check, data)
    quality = _quality(check, data)
    requests: tuple[TracedRequest, ...] = ()
    warnings = []
    if workload is not None and read_inputs and (workload.trace or workload.dataset):
        requests, said = _requests(check, workload, path)
        warnings += said
    if check.problems:
        raise PlanError(check.problems)
    assert control and candidates and order and workload and gate  # every None above noted a problem
    for candidate in candidates:
        if control == candidate:
            warnings.append(
                f"the candidate is the control ({control}): an A/A run, it measures this rig's noise and never promotes"
            )
    return BenchPlan(
        name=path.stem,
        path=path,
        text=text,
        description=description or "",
        control=control,
        candidates=candidates,
        order=order,
        workload=workload,
        gate=gate,
        warnings=tuple(warnings),
        quality=quality,
        requests=requests,
    )


def _candidates(check: PlanChecker, data: dict[str, Any]) -> tuple[str, ...] | None:
    if "candidate" in data and "candidates" in data:
        check.problem(("candidates",), "give candidate or candidates, not both")
        return None
    if "candidates" in data:
        value = check.value(data, "candidates", (), PROFILE_NAMES)
        if value == ():
            check.problem(("candidates",), PROFILE_NAMES.needs())
        if not value:
            return None
        if len(set(value)) != len(value):
            check.problem(("candidates",), "names a profile twice")
            return None
        return tuple(value)
    one = check.text(data, "candidate", ())
    if "candidate" not in data:
        check.problem((), 'candidate = "PROFILE" (or candidates = [...]) is missing: a plan names what it tries')
    return (one,) if one else None


def _requests(check: PlanChecker, workload: Workload, plan: Path) -> tuple[tuple[TracedRequest, ...], list[str]]:
    """The trace's or the dataset's requests, read now (before anything switches), the ones a bench
    replays, at most max_requests; and what to say about them."""
    source = workload.trace or workload.dataset or ""
    path = Path(source).expanduser()
    path = path if path.is_absolute() else plan.parent / path
    try:
        if workload.trace == RECORDED:
            path = recordings_dir()
            files = recorded_files(path)
            if not files:
                raise BadInputError(f"{path}: nothing recorded yet (rigctl gateway --record, or [gateway] record = true)")
            found = read_recorded(files, *parse_window(workload.window or "", time.time()))
        elif workload.trace:
            _, found = read_trace(path)
        else:
            found = read_dataset(path, workload.dataset_format or "jsonl")
    except BadInputError as exc:
        check.problem(("workload", "trace" if workload.trace else "dataset"), str(exc))
        return (), []
    said = []
    replayed = [r for r in found if r.endpoint in REPLAYED]
    if len(replayed) < len(found):
        said.append(
            f"{path}: {len(found) - len(replayed)} request(s) to other endpoints are not replayed (only {', '.join(REPLAYED)})"
        )
    if workload.requests is not None:
        replayed = replayed[: workload.requests]
    if not replayed:
        check.problem(("workload", "trace" if workload.trace else "dataset"), f"{path}: no request to replay")
    models = sorted({r.model for r in replayed if r.model})
    if models:
        said.append(f"the trace's requests name {', '.join(models[:3])}: each arm's served name is sent instead")
    return tuple(replayed), said


def _quality(check: PlanChecker, data: dict[str, Any]) -> Quality | None:
    table = check.table(data, "quality")
    if table is None:
        return None
    q = ("quality",)
    check.unknown(table, QUALITY_KEYS, q)
    command = check.value(table, "command", q, QUALITY_COMMAND)
    if command is None:
        if "command" not in table:
            check.problem((*q, "command"), QUALITY_COMMAND.needs())
        return None
    timeout = check.value(table, "timeout_s", q, TIMEOUT, 600.0)
    return Quality(command, timeout or 600.0)


def _workload(check: PlanChecker, data: dict[str, Any]) -> Workload | None:
    table = check.table(data, "workload")
    if table is None:
        if "workload" not in data:
            check.problem((), "[workload] is missing: kind = one of " + ", ".join(KINDS))
        return None
    w = ("workload",)
    check.unknown(table, WORKLOAD_KEYS, w)
    trace = check.text(table, "trace", w)
    window = check.text(table, "window", w)
    if window is not None and trace != RECORDED:
        check.problem((*w, "window"), f'window is a span of the front door\'s recording: it needs trace = "{RECORDED}"')
    if trace == RECORDED and window is None:
        check.problem(
            (*w, "window"), 'trace = "gateway" replays a window of the door\'s recording: window = "24h" (or "START/END")'
        )
    dataset = check.text(table, "dataset", w)
    dataset_format = check.text(table, "format", w, default="jsonl" if dataset else None, choices=DATASET_FORMATS)
    if trace and dataset:
        check.problem((*w, "dataset"), "give trace or dataset, not both")
    if "format" in table and not dataset:
        check.problem((*w, "format"), "format is for dataset = ...")
    owners = trace or dataset
    if owners and "kind" in table:
        check.problem((*w, "kind"), "a trace or a dataset is the workload: kind is for the built-in ones")
    kind_name = "trace" if trace else "dataset" if dataset else check.text(table, "kind", w, choices=tuple(KINDS))
    if "kind" not in table and not owners:
        check.problem(w, "kind is missing: one of " + ", ".join(KINDS) + " (or trace = / dataset = your own)")
    kind = KINDS.get(kind_name or "", KINDS["chat-short"])
    concurrency = check.value(table, "concurrency", w, CONCURRENCY, 4)
    if "requests" in table and "max_requests" in table:
        check.problem((*w, "max_requests"), "give requests or max_requests, not both")
    requests = check.value(table, "max_requests" if "max_requests" in table else "requests", w, REQUESTS)
    duration = check.value(table, "duration_s", w, DURATION)
    if requests is not None and duration is not None:
        check.problem((*w, "duration_s"), "give requests or duration_s, not both")
    if requests is None and duration is None and "requests" not in table and "duration_s" not in table and not owners:
        requests = max(16, 4 * (concurrency or 4))
    arrival = check.text(table, "arrival", w, default="recorded" if trace else "burst", choices=ARRIVALS)
    if arrival == "recorded" and not trace:
        check.problem((*w, "arrival"), 'arrival = "recorded" replays a trace\'s own times: it needs trace = ...')
    speed = check.value(table, "speed", w, SPEED, 1.0)
    if "speed" in table and arrival != "recorded":
        check.problem((*w, "speed"), 'speed compresses recorded arrivals: it is for arrival = "recorded"')
    interval = check.value(table, "interval_s", w, INTERVAL)
    rate = check.value(table, "rate_per_s", w, RATE)
    if arrival == "interval" and interval is None and "interval_s" not in table:
        check.problem((*w, "arrival"), 'arrival = "interval" needs interval_s (seconds between requests)')
    if arrival == "poisson" and rate is None and "rate_per_s" not in table:
        check.problem((*w, "arrival"), 'arrival = "poisson" needs rate_per_s (mean requests per second)')
    for key, wanted in (("interval_s", "interval"), ("rate_per_s", "poisson")):
        if key in table and arrival and arrival != wanted:
            check.problem((*w, key), f'{key} is for arrival = "{wanted}"; this plan\'s arrival is {arrival!r}')
    prompt = check.value(table, "prompt_tokens", w, TOKENS, kind.prompt_tokens)
    shared = check.value(table, "shared_prefix_tokens", w, SHARED_TOKENS, kind.shared_prefix_tokens)
    if prompt is not None and shared is not None and shared >= prompt:
        check.problem(
            (*w, "shared_prefix_tokens"), f"must be below prompt_tokens ({prompt}): every request needs a tail of its own"
        )
    max_tokens = check.value(table, "max_tokens", w, TOKENS, kind.max_tokens)
    seed = check.value(table, "seed", w, SEED, 1)
    warmup = check.value(table, "warmup_requests", w, WARMUP, concurrency or 4)
    temperature = check.value(table, "temperature", w, TEMPERATURE, 0.0)
    ignore_eos = check.value(table, "ignore_eos", w, Flag(), True)
    timeout = check.value(table, "timeout_s", w, TIMEOUT, 600.0)
    values = (kind_name, concurrency, arrival, prompt, shared, max_tokens, seed, warmup, temperature, timeout, speed)
    if any(v is None for v in values) or (requests is None and duration is None and not owners):
        return None
    return Workload(
        kind=kind_name or "",
        concurrency=concurrency or 1,
        requests=requests,
        duration_s=duration,
        arrival=arrival or "burst",
        interval_s=interval,
        rate_per_s=rate,
        prompt_tokens=prompt or 1,
        max_tokens=max_tokens or 1,
        shared_prefix_tokens=shared or 0,
        seed=seed or 0,
        warmup_requests=warmup or 0,
        temperature=temperature or 0.0,
        ignore_eos=bool(ignore_eos),
        timeout_s=timeout or 600.0,
        trace=trace,
        window=window,
        dataset=dataset,
        dataset_format=dataset_format if dataset else None,
        speed=speed or 1.0,
    )


def _metric(check: PlanChecker, table: dict[str, Any], where: tuple[str, ...]) -> str | None:
    name = table.get("metric")
    if name is None:
        check.problem(where, "metric is missing: one of " + ", ".join(METRICS))
        return None
    if not isinstance(name, str) or name not in METRICS:
        close = difflib.get_close_matches(str(name), tuple(METRICS), n=1)
        check.problem(
            (*where, "metric"),
            f"unknown metric {name!r}" + (f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(METRICS)})"),
        )
        return None
    return name


def _gate(check: PlanChecker, data: dict[str, Any]) -> Gate | None:
    table = check.table(data, "gate")
    if table is None:
        if "gate" not in data:
            check.problem((), "[gate] is missing: write the criterion before the run (metric, min_change)")
        return None
    g = ("gate",)
    check.unknown(table, GATE_KEYS, g)
    metric = _metric(check, table, g)
    natural = METRICS[metric].better if metric else None
    direction = check.text(table, "direction", g, default=natural, choices=("higher", "lower"))
    if metric and direction and direction != natural:
        check.problem((*g, "direction"), f"{metric} is better {natural}; direction = {direction!r} would promote a worse candidate")
        direction = None
    min_change = check.value(table, "min_change", g, MIN_CHANGE)
    if "min_change" not in table:
        check.problem(g, "min_change is missing: the smallest relative gain that counts (0.05 = 5%), written before the run")
    guards = []
    raw_guards = table.get("guard", [])
    if isinstance(raw_guards, dict):
        raw_guards = [raw_guards]
    if not isinstance(raw_guards, list):
        check.problem((*g, "guard"), "must be [[gate.guard]] tables")
        raw_guards = []
    for index, guard in enumerate(raw_guards):
        where = (*g, "guard", str(index))
        if not isinstance(guard, dict):
            check.problem(where, f"must be a table, not {guard!r}")
            continue
        check.unknown(guard, GUARD_KEYS, where)
        guard_metric = _metric(check, guard, where)
        limit = check.value(guard, "max_regression", where, MAX_REGRESSION)
        if "max_regression" not in guard:
            check.problem(where, "max_regression is missing (0.05 = at most 5% worse than the controls)")
        if guard_metric and limit is not None:
            guards.append(Guard(guard_metric, limit))
    min_requests = check.value(table, "min_requests", g, REQUESTS, MIN_REQUESTS)
    if metric is None or direction is None or min_change is None or min_requests is None:
        return None
    return Gate(metric, "higher" if direction == "higher" else "lower", min_change, tuple(guards), min_requests)
