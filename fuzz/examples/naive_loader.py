"""A deliberately naive safetensors loader: `struct` + `json.loads` + slicing.

This is the ten-line parser that many projects write: read the 8-byte
length, parse the header with `json.loads`, slice the tensors out by their
`data_offsets`, and check nothing.  It is here to show what stcheck's loader
tests catch in such code; do not use it to load files.

Fuzz it as a Python function:

    stcheck fuzz loader-under-test --loader fuzz.examples.naive_loader:load --seconds 60

or gate it on the conformance corpus, as a function or as a command (both
give the same verdicts; the command shows the protocol a loader in any
language follows):

    stcheck conformance --impl fuzz.examples.naive_loader:load
    stcheck conformance --impl 'python fuzz/examples/naive_loader.py {path}'
"""

import hashlib
import json
import struct
import sys


def load(path):  # noqa: ANN001, ANN201 - kept as naive as the code it imitates
    with open(path, "rb") as f:  # noqa: PTH123
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = data[base + begin : base + end]
    return tensors


if __name__ == "__main__":
    # The command protocol: exit 0 accepts, and the last line of stdout tells
    # the harness which bytes came back, so it can check them.  Errors are not
    # caught: Python exits 1 with a traceback, and the harness judges the
    # exception by its class (ValueError rejects, KeyError is a crash).
    found = load(sys.argv[1])
    described = [{"name": k, "nbytes": len(v), "sha256": hashlib.sha256(v).hexdigest()} for k, v in found.items()]
    print(json.dumps({"tensors": described}))
