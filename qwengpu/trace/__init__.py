"""The trace: the token vocabulary a compiled machine reads and writes, and what both sides
of the model do with it.

`protocol` derives the vocabulary from an elaborated design (`write_ports` says how many
commit tokens a record needs); `prompt` writes any machine state as a prompt; `decode` reads
generated ids back into records.  The package sits below the compiler's backend (which emits
weights for this vocabulary) and the runtime (which builds launch prompts and decodes
launches), so both speak it without importing each other.  docs/trace.md describes the
format for readers.
"""
