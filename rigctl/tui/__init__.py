"""The Textual TUI: a thin layer that renders what the core's samplers produce."""
