"""Running vLLM: launchers, the switch transaction, state and boot records."""
