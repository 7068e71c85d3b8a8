"""The hardware, read-only: NVML or a simulated rig behind one interface."""
