"""Alerts: what goes wrong while the engine looks healthy, judged from the scrapes the dashboard
and the recorder already make (no polling of their own).

    model      an alert, and the change of one (fired, cleared, or a one-off event)
    limits     the thresholds of config.toml's [alerts]
    evaluator  snapshots in, changes out: pure, one state per condition
    hook       the owner's `[alerts] command`, run with each change as JSON on stdin
    firing     alerts.json: what fires now, for `rigctl status` and `status --check`
"""
