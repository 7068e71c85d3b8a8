"""Another rig driven from this terminal: its rigctl run over the system's OpenSSH, its answer
and exit code brought back as they are (`rigctl --rig NAME COMMAND`, the TUI's Rigs screen)."""
