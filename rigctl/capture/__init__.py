"""rigctl capture: the owner's traffic, forwarded unchanged and kept as a trace the bench replays."""
