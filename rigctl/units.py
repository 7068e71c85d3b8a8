"""Byte units, binary as vLLM, NVML and nvidia-smi count them: one definition for the whole tree."""

MIB = 1024**2
GIB = 1024**3
