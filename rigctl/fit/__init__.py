"""Will it fit, and how to split it: vLLM's own KV arithmetic, a budget per worker, the layouts a
rig allows and the DP-vs-TP rule. Everything here is a prediction; measured figures come only
from the engine (boot records), and calibrate.py compares the two."""
