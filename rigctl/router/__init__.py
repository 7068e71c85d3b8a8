"""Several rigs behind one address: what each rig serves, read live from its front door, and the
config of the field's router (LiteLLM's proxy) that routes a request by the context it needs."""
