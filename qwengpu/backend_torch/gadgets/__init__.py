"""The gadgets: the exact building blocks the compiler writes its ops with.

A gadget reads residual groups (one-hot, binary or analog values, `residual.py`) and adds
its units to a sublayer it shares with others: MLP gadgets through an `MlpWriter` over a
range of the layer's hidden units, with the rms of the sublayer's input (the norm ledger),
mixer gadgets through the heads of a Gated DeltaNet.  `emit.py` dispatches every op of a plan
to one of them:

- `core`: the unit kinds (restoring step, gated, linear) and the writer that places them;
- `step`: the step with its offset on the constant group, and the AND of terms;
- `table`: any function of digit inputs (luts, shared luts, the plan's functions);
- `choose`: an input per selector value (`choose`, `select`) and if-else chains (`priority`);
- `arith`: digit sums (`sum`) and carries (`carry`);
- `multiply`: a product's column as an analog number (`mul_column`);
- `scratch`: the record and staging scratch (DeltaNet heads keyed by slot);
- `memory`: the machine's state (DeltaNet heads as key -> value memories).

Each has a sibling test under tests/backend_torch/gadgets/ that measures its outputs'
deviation and margin, exhaustively or on seeded inputs, in fp32 and bf16, in the prefill and
the decode paths; docs/gadgets.md collects the figures.
"""
