"""The serving record: what each profile did while it served, kept as a compact time series
(SQLite in the state dir, or read from the owner's Prometheus) and compared side by side."""
