"""What serves and what happened: the server record, the boots, the switches' journal, the
server's log, discovery by boot token, and observe(). Read by everything that watches (monitor,
exporter, record, alerts), written by serve/, which alone starts and stops servers."""
