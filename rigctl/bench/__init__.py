"""Decide by measurement: gated control-candidate-control benchmarks between two profiles."""
