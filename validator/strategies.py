"""Hypothesis strategies for safetensors files: valid, corrupted and mutated.

Plug them into your own test suite to test a loader::

    from hypothesis import given
    from validator import strategies as sts

    @given(sts.valid_files())
    def test_loads(f):
        assert my_loader(f.data).keys() == f.tensors.keys()

    @given(sts.corrupted_files())
    def test_rejects(case):
        with pytest.raises(MyLoaderError):
            my_loader(case.data)

Importing this module imports ``hypothesis``; ``import validator`` does not.
"""

from __future__ import annotations

from validator.testing.corrupt import (
    IMPLIED,
    CorruptedFile,
    corrupted_files,
    corruptible_rules,
    mutated_files,
)
from validator.testing.files import (
    GeneratedFile,
    Tensor,
    metadata_dicts,
    tensor_dicts,
    tensor_names,
    tensors,
    valid_files,
)

__all__ = [
    "IMPLIED",
    "CorruptedFile",
    "GeneratedFile",
    "Tensor",
    "corrupted_files",
    "corruptible_rules",
    "metadata_dicts",
    "mutated_files",
    "tensor_dicts",
    "tensor_names",
    "tensors",
    "valid_files",
]
