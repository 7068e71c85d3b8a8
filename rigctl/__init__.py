"""rigctl: see the rig, serve vLLM by profile, watch the engine.

The package root imports nothing so that `import rigctl.gpu` stays cheap and
never pulls in the TUI.
"""

__version__ = "0.1.0"
