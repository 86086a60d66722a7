"""The tools that drive stages: verify, timing and bench, inspect, records and report, plots,
ceilings, the CLI. They import the registry (`stages`) and the primitives (`stages.core`); no
primitive and no stage imports them."""
