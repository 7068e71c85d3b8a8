"""rigctl exporter: the rig's GPUs and what rigctl serves on it, joined, for Prometheus."""
