# Strategy: a structure-aware mutator for pickle-bearing files, for the
# differential campaign against the real loaders (validator.formats.oracle).
# Two layers, each a small codec plus a table of mutations:
#
# - streams: a pickle is decoded into opcodes (one table row per opcode of
#   protocols 0 to 5: how its argument is laid out), mutated as a list
#   (insert any opcode with a fitting argument, delete, duplicate, swap,
#   rename a global, GLOBAL <-> STACK_GLOBAL <-> INST, memo puts and gets in
#   every spelling, MEMOIZE, EXT codes, FRAME with right and wrong lengths,
#   protocol changes, lengths that disagree with their payload, a nested
#   _load_from_bytes stream, a second stream after STOP, a leading N0) and
#   encoded again.  Bytes that do not decode are kept as a tail.
# - containers: a file is split into its container and its streams (torch
#   zip, tar with and without the ustar magic, the legacy stream of
#   pickles, .npy with its header dict, .npz, joblib and the compressed
#   forms), one stream or one container field is mutated, and the file is
#   put back together, sometimes in another container or under another name.
#
# Payloads are harmless callables (builtins.len, os.getcwd...): the oracle
# stops a loader at the import of any global off the allowlists, and were it
#
# The module map (each a private module of one job):
#   _pickle_ops.py         the opcode table, the disassembler and assembler,
#                          builders of ops, globals, calls and streams;
#   _pickle_streams.py     mutations of one stream;
#   _pickle_containers.py  containers: split, mutate one part, put together;
#   _pickle_seeds.py       the campaign's seeds.
from __future__ import annotations

from validator.fuzz._pickle_containers import magic, mutate_named
from validator.fuzz._pickle_ops import OPCODES, Op, assemble, disassemble, op, stream
from validator.fuzz._pickle_seeds import seed_files
from validator.fuzz._pickle_streams import mutate_stream

__all__ = [
    "OPCODES",
    "Op",
    "assemble",
    "disassemble",
    "magic",
    "mutate_named",
    "mutate_stream",
    "op",
    "seed_files",
    "stream",
]
