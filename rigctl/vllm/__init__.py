"""Everything rigctl knows about vLLM, in one place, so that "vLLM 0.34 changed X" is an edit here.

- options, option_kinds, data/: the `vllm serve` option tables per version (flags, defaults,
  choices), the options vLLM removed and the MTP aliases;
- model, configs/: a model's dimensions from its config.json, and rigctl's copies of the
  shipped profiles' models;
- weights: weight bytes from the safetensors headers, or estimated from the dimensions;
- kvpool: vLLM's bytes-to-blocks step (exact);
- memory: the budget one worker leaves for KV (predicted), vLLM's memory defaults, the MTP head;
- metric_names: the /metrics names, current first, then every older one;
- bootlog, bootfailure: the boot log's formats, and the lines vLLM says a failure with.

`fit` predicts with these and the simulator boots with them, so the two cannot disagree; the
simulator may perturb the result on purpose, never compute it another way. This package knows
nothing of rigctl's profiles, engines or screens.
"""
