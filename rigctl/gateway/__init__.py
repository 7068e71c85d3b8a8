"""The front door: the one address the owner's apps use. It forwards to the served vLLM only, holds
new requests through a switch, counts the requests in flight exactly, and runs as its own process
(it imports neither serve nor tui: it must run alone, all day)."""
