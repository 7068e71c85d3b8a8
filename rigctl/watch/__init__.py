"""The rig's long-running service (`rigctl watch`): it keeps the record, judges the alerts from
the same scrapes, sends them, and (when asked) restarts the last good profile after its engine
died.

    sink        where an alert change goes: the journal, the record, the hook, alerts.json
    supervisor  the restart budget, and the restart on its own thread
    service     the loop
"""
