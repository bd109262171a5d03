"""A deliberately naive safetensors loader: `struct` + `json.loads` + slicing.

This is the parser many projects write in ten lines (compare the observed
behaviour of several real libraries in shared notes).  It exists to show what
`stcheck fuzz loader-under-test` catches; do not use it.

    stcheck fuzz loader-under-test --loader fuzz.examples.naive_loader:load --seconds 60
"""

import json
import struct


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
