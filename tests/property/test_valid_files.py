# Strategy: property 1.  Every file valid_files() draws is accepted by both
# profiles and by safetensors 0.8.0, and what each of them reads back --
# tensor table, metadata, tensor bytes -- is what the generator intended.
from __future__ import annotations

import safetensors
from hypothesis import given
from reference import reference_verdict

import validator
from validator.strategies import GeneratedFile, Tensor, valid_files


@given(valid_files())
def test_valid_files_are_accepted_and_read_back_as_intended(f: GeneratedFile) -> None:
    for profile in ("strict", "reference"):
        report = validator.validate(f.data, profile=profile)
        assert report.valid, (profile, [x.format() for x in report.errors])
        assert report.tensors is not None
        table = {name: info.to_json() for name, info in report.tensors.items()}
        intended = {k: v for k, v in f.header.items() if k != "__metadata__"}
        assert table == intended
        assert (dict(report.metadata) if report.metadata is not None else None) == f.metadata
        assert report.data_start == f.data_start
    assert reference_verdict(f.data) == (True, None)
    loaded = dict(safetensors.deserialize(f.data))
    assert set(loaded) == set(f.tensors)
    for name, t in f.tensors.items():
        assert loaded[name]["dtype"] == t.dtype
        assert tuple(loaded[name]["shape"]) == t.shape
        assert bytes(loaded[name]["data"]) == t.data
        begin, end = f.header[name]["data_offsets"]
        assert f.data[f.data_start + begin : f.data_start + end] == t.data


@given(valid_files(tensors={}, metadata=None, aligned=False))
def test_empty_header_is_valid(f: GeneratedFile) -> None:
    # "{}" plus padding: no tensors, no data.
    assert f.data[8:].rstrip(b" ") in (b"{}", b"{\n  \n}")
    assert validator.validate(f.data).valid
    assert reference_verdict(f.data) == (True, None)


@given(valid_files(tensors={"s": Tensor("F4", (2,), b"\x12")}, metadata={"k": "v"}, aligned=True))
def test_fixed_table_is_written_as_given(f: GeneratedFile) -> None:
    assert f.data_start % 8 == 0
    assert f.header["s"] == {"dtype": "F4", "shape": [2], "data_offsets": [0, 1]}
    assert f.data.endswith(b"\x12")
    assert validator.validate(f.data).metadata == {"k": "v"}
