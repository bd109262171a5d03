# Strategy: one small valid sharded checkpoint (two shards, an index), then
# one defect per test, each asserting the exact findings it produces.  The
# loader side (open_index) is checked on the valid checkpoint.
from __future__ import annotations

import json

import numpy as np
import pytest

import validator
from validator._rules import rule

SHARD_A = {"embed": ("F32", [2, 2], bytes(range(16))), "norm": ("F16", [2], b"\x00\x3c\x00\x40")}
SHARD_B = {"head": ("BF16", [3], b"\x80\x3f\x00\x40\x40\x40")}
TOTAL = 16 + 4 + 6
A, B = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"


def write_checkpoint(root, *, index=None, shards=None, raw_index=None):
    shards = {A: SHARD_A, B: SHARD_B} if shards is None else shards
    for name, tensors in shards.items():
        validator.save(tensors, root / name)
    if index is None:
        weight_map = {n: s for s, tensors in shards.items() for n in tensors}
        index = {
            "metadata": {"total_size": sum(len(t[2]) for ts in shards.values() for t in ts.values())},
            "weight_map": weight_map,
        }
    path = root / "model.safetensors.index.json"
    path.write_bytes(raw_index if raw_index is not None else json.dumps(index).encode())
    return path


def default_index():
    return {"metadata": {"total_size": TOTAL}, "weight_map": {"embed": A, "norm": A, "head": B}}


def slugs(report):
    return [f.slug for f in report.findings]


def test_valid_checkpoint_has_no_findings(tmp_path):
    report = validator.validate_index(write_checkpoint(tmp_path))
    assert report.valid
    assert report.findings == ()
    assert report.tensor_bytes == TOTAL
    assert set(report.shards) == {A, B}


def test_open_index_loads_from_the_right_shards(tmp_path):
    path = write_checkpoint(tmp_path)
    with validator.open_index(path) as f:
        assert f.keys() == ["embed", "head", "norm"]
        assert len(f) == 3
        assert "head" in f
        assert f.metadata() == {"total_size": TOTAL}
        assert f.get("embed").tobytes() == bytes(range(16))
        assert f["head"].tobytes() == SHARD_B["head"][2]
        assert f.get_slice("embed")[1].tobytes() == bytes(range(8, 16))
        assert f.info("norm").dtype == "F16"
        with pytest.raises(validator.LoadError, match="no tensor named 'nope'"):
            f.get("nope")


def test_open_index_torch(tmp_path):
    torch = pytest.importorskip("torch")
    with validator.open_index(write_checkpoint(tmp_path), framework="torch") as f:
        assert f.get("head").dtype == torch.bfloat16
        assert f.get("head").float().tolist() == [1.0, 2.0, 3.0]


def test_open_index_refuses_invalid_checkpoint(tmp_path):
    index = default_index()
    index["metadata"]["total_size"] = TOTAL + 1
    path = write_checkpoint(tmp_path, index=index)
    with pytest.raises(validator.InvalidIndexError) as info:
        validator.open_index(path)
    assert slugs(info.value.report) == ["index-total-size-mismatch"]
    assert "ST508 index-total-size-mismatch" in str(info.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"not json", "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[1, 2]", "it must be an object"),
        (b'{"metadata": {"total_size": 1}}', "weight_map is missing"),
        (b'{"weight_map": [], "metadata": {"total_size": 0}}', "weight_map is a JSON list"),
        (b'{"weight_map": {"a": 1}, "metadata": {"total_size": 0}}', "entry for 'a' is not a file name"),
        (b'{"weight_map": {}, "metadata": {"total_size": NaN}}', "not valid JSON"),
        (
            b'{"weight_map": {}, "metadata": {"total_size": 0}, "weight_map": {"a": "a.safetensors"}}',
            "'weight_map' appears more than once",
        ),
        (b'{"weight_map": {"a": "a.safetensors"}, "metadata": 7}', "metadata is not an object"),
        (b'{"weight_map": {"a": "a.safetensors"}, "metadata": {"total_size": -1}}', "must be a non-negative integer"),
        (b'{"weight_map": {"a": "a.safetensors"}, "metadata": {"total_size": "26"}}', "must be a non-negative integer"),
        (b'{"weight_map": {"a": "a.safetensors"}, "metadata": {"total_size": 1.5}}', "must be a non-negative integer"),
        (b'{"weight_map": {"a": "a.safetensors"}, "metadata": {"total_size": true}}', "must be a non-negative integer"),
        (b"[" * 100000 + b"]" * 100000, "nests too deeply"),
    ],
    ids=[
        "syntax",
        "not-utf8",
        "array",
        "no-weight-map",
        "weight-map-array",
        "shard-not-string",
        "nan",
        "duplicate-top-level",
        "metadata-number",
        "total-size-negative",
        "total-size-string",
        "total-size-float",
        "total-size-bool",
        "deep-nesting",
    ],
)
def test_index_invalid(tmp_path, raw, message):
    report = validator.validate_index(write_checkpoint(tmp_path, shards={}, raw_index=raw))
    assert rule("index-invalid").code == "ST501"
    invalid = [f for f in report.findings if f.slug == "index-invalid"]
    assert len(invalid) == 1, report.findings
    assert message in invalid[0].message
    assert not report.valid


@pytest.mark.parametrize(
    ("shard", "problem"),
    [
        ("", "is empty"),
        ("/etc/passwd", "absolute path"),
        ("../outside.safetensors", "climbs out"),
        ("a/../../x.safetensors", "climbs out"),
        ("a\\b.safetensors", "backslash"),
        ("C:x.safetensors", "absolute"),
    ],
    ids=["empty", "absolute", "dotdot", "nested-dotdot", "backslash", "drive"],
)
def test_index_shard_path(tmp_path, shard, problem):
    index = default_index()
    index["weight_map"]["head"] = shard
    report = validator.validate_index(write_checkpoint(tmp_path, index=index))
    # B, now unnamed, is not examined; it is left beside the index like a stale shard.
    assert slugs(report) == ["index-shard-path", "index-orphan-shard"]
    assert problem in report.findings[0].message
    assert report.findings[0].json_path == "/weight_map/head"


def test_index_shard_missing(tmp_path):
    path = write_checkpoint(tmp_path)
    (tmp_path / B).unlink()
    report = validator.validate_index(path)
    assert slugs(report) == ["index-shard-missing"]
    assert report.findings[0].code == "ST503"
    assert B in report.findings[0].message


def test_index_shard_invalid(tmp_path):
    path = write_checkpoint(tmp_path)
    content = (tmp_path / B).read_bytes()
    (tmp_path / B).write_bytes(content[:-1])
    report = validator.validate_index(path)
    assert slugs(report) == ["index-shard-invalid"]
    assert "buffer-truncated" in report.findings[0].message
    assert not report.shards[B].valid


def test_index_tensor_missing(tmp_path):
    index = default_index()
    index["weight_map"]["ghost"] = B
    report = validator.validate_index(write_checkpoint(tmp_path, index=index))
    assert slugs(report) == ["index-tensor-missing"]
    assert report.findings[0].tensor == "ghost"
    assert report.findings[0].json_path == "/weight_map/ghost"


def test_index_tensor_in_the_wrong_shard(tmp_path):
    index = default_index()
    index["weight_map"]["norm"] = B
    report = validator.validate_index(write_checkpoint(tmp_path, index=index))
    assert slugs(report) == ["index-tensor-missing", "index-tensor-unlisted"]
    assert f"it is in {A!r}" in report.findings[0].message
    assert f"places it in {B!r}" in report.findings[1].message
    assert [f.tensor for f in report.findings] == ["norm", "norm"]


def test_index_tensor_unlisted(tmp_path):
    index = default_index()
    del index["weight_map"]["norm"]
    index["metadata"]["total_size"] = TOTAL - 4
    report = validator.validate_index(write_checkpoint(tmp_path, index=index))
    assert slugs(report) == ["index-tensor-unlisted"]
    assert report.findings[0].tensor == "norm"
    assert "does not list it" in report.findings[0].message


def test_index_tensor_duplicated_across_shards(tmp_path):
    shards = {A: SHARD_A, B: {**SHARD_B, "norm": ("F16", [2], b"\x00\x3c\x00\x40")}}
    report = validator.validate_index(write_checkpoint(tmp_path, index=default_index(), shards=shards))
    assert slugs(report) == ["index-tensor-duplicated"]
    assert report.findings[0].tensor == "norm"
    assert "held by 2 shards" in report.findings[0].message


def test_index_tensor_duplicated_in_weight_map(tmp_path):
    raw = (
        b'{"metadata": {"total_size": 26}, "weight_map": {"embed": "%s", "norm": "%s", "head": "%s", "head": "%s"}}'
        % (A.encode(), A.encode(), B.encode(), B.encode())
    )
    report = validator.validate_index(write_checkpoint(tmp_path, raw_index=raw))
    assert slugs(report) == ["index-tensor-duplicated"]
    assert "listed more than once" in report.findings[0].message


def test_index_total_size_mismatch(tmp_path):
    index = default_index()
    index["metadata"]["total_size"] = TOTAL * 2
    report = validator.validate_index(write_checkpoint(tmp_path, index=index))
    assert slugs(report) == ["index-total-size-mismatch"]
    assert f"listed tensors hold {TOTAL} bytes (+{TOTAL})" in report.findings[0].message


def test_total_size_not_compared_when_a_shard_is_unreadable(tmp_path):
    index = default_index()
    index["metadata"]["total_size"] = 1
    path = write_checkpoint(tmp_path, index=index)
    (tmp_path / A).unlink()
    assert slugs(validator.validate_index(path)) == ["index-shard-missing"]


def test_expected_keys(tmp_path):
    path = write_checkpoint(tmp_path)
    report = validator.validate_index(path, expected_keys={"embed", "head", "norm"})
    assert report.valid
    report = validator.validate_index(path, expected_keys=["embed", "head", "lm_head", "bias"])
    assert slugs(report) == ["index-key-missing", "index-key-missing", "index-key-unexpected"]
    assert [f.tensor for f in report.findings] == ["bias", "lm_head", "norm"]
    assert {f.code for f in report.findings} == {"ST509", "ST510"}
    with pytest.raises(validator.InvalidIndexError):
        validator.open_index(path, expected_keys=["embed"])


def test_unreadable_index_is_a_source_error(tmp_path):
    with pytest.raises(validator.SourceError):
        validator.validate_index(tmp_path / "missing.index.json")


def test_sharded_save_of_numpy_arrays_round_trips(tmp_path):
    # A checkpoint written by validator.save validates and loads bit-exactly.
    arrays = {"w": np.arange(6, dtype=np.int64), "b": np.ones(2, np.float32)}
    validator.save({"w": arrays["w"]}, tmp_path / A)
    validator.save({"b": arrays["b"]}, tmp_path / B)
    index = {"metadata": {"total_size": 48 + 8}, "weight_map": {"w": A, "b": B}}
    (tmp_path / "i.json").write_text(json.dumps(index))
    with validator.open_index(tmp_path / "i.json") as f:
        for name, arr in arrays.items():
            np.testing.assert_array_equal(f.get(name), arr)


def test_every_index_rule_is_in_the_catalogue_region():
    codes = [r.code for r in validator.RULES if r.region == "index"]
    assert codes == [f"ST5{i:02d}" for i in range(1, 16)]


# --- issue 12 / 15: in-band sentinels, bounded memory, FIFOs, escaping links ---


def test_nul_key_is_not_a_duplicate_sentinel(tmp_path):
    # A key spelt like the old in-band marker is an ordinary (unknown) key.
    index = {"\x00duplicates": 5, **default_index()}
    report = validator.validate_index(write_checkpoint(tmp_path, raw_index=json.dumps(index).encode()))
    assert report.findings == ()
    raw = b'{"weight_map": {"\\u0000duplicates": 5}, "metadata": {"\\u0000duplicates": 1, "total_size": 0}}'
    (tmp_path / "other").mkdir()
    report = validator.validate_index(write_checkpoint(tmp_path / "other", shards={}, raw_index=raw))
    assert slugs(report) == ["index-invalid"]
    assert "is not a file name" in report.findings[0].message


def test_oversized_index_is_refused_without_reading_it(tmp_path):
    import tracemalloc

    path = tmp_path / "model.safetensors.index.json"
    with path.open("wb") as fh:
        fh.truncate(100_000_001)  # sparse: no disk blocks, no bytes to read
    tracemalloc.start()
    try:
        report = validator.validate_index(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak
    assert slugs(report) == ["index-invalid"]
    assert "100000001 bytes" in report.findings[0].message


def _in_thread(fn, timeout=10):
    import threading

    box = {}

    def run():
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "blocked"
    return box


def test_fifo_index_is_refused_without_blocking(tmp_path):
    import os

    path = tmp_path / "model.safetensors.index.json"
    os.mkfifo(path)
    box = _in_thread(lambda: validator.validate_index(path))
    assert isinstance(box.get("error"), validator.SourceError)
    assert "not a regular file" in str(box["error"])
    box = _in_thread(lambda: validator.open_index(path))
    assert isinstance(box.get("error"), validator.SourceError)


def test_fifo_shard_is_a_finding_without_blocking(tmp_path):
    import os

    path = write_checkpoint(tmp_path)
    (tmp_path / B).unlink()
    os.mkfifo(tmp_path / B)
    box = _in_thread(lambda: validator.validate_index(path))
    report = box["value"]
    assert slugs(report) == ["index-shard-missing"]
    assert "not a regular file" in report.findings[0].message


def test_shard_symlink_escaping_the_directory(tmp_path):

    outside = tmp_path / "outside"
    outside.mkdir()
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    path = write_checkpoint(ckpt)
    (ckpt / B).rename(outside / "other.safetensors")
    (ckpt / B).symlink_to("../outside/other.safetensors")
    report = validator.validate_index(path)
    assert slugs(report) == ["index-shard-path"]
    assert "symlink" in report.findings[0].message
    assert report.findings[0].json_path == "/weight_map/head"
    with pytest.raises(validator.InvalidIndexError):
        validator.open_index(path)


def test_shard_path_through_a_directory_symlink(tmp_path):

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    validator.save(SHARD_B, elsewhere / "b.safetensors")
    (ckpt / "dirlink").symlink_to("/")
    index = default_index()
    index["weight_map"]["head"] = "dirlink" + str(elsewhere / "b.safetensors")
    path = write_checkpoint(ckpt, index=index, shards={A: SHARD_A})
    report = validator.validate_index(path)
    assert slugs(report) == ["index-shard-path"]
    assert "outside the checkpoint" in report.findings[0].message


def test_symlink_inside_the_directory_is_allowed(tmp_path):

    path = write_checkpoint(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / B).rename(tmp_path / "real" / B)
    (tmp_path / B).symlink_to(f"real/{B}")
    assert validator.validate_index(path).findings == ()


def test_hub_cache_snapshot_links_into_blobs_are_allowed(tmp_path):

    repo = tmp_path / "hub" / "models--org--name"
    blobs, snap = repo / "blobs", repo / "snapshots" / ("c" * 40)
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    staging = tmp_path / "staging"
    staging.mkdir()
    write_checkpoint(staging)
    for i, name in enumerate([A, B, "model.safetensors.index.json"]):
        (staging / name).rename(blobs / f"{i:064x}")
        (snap / name).symlink_to(f"../../blobs/{i:064x}")
    assert validator.validate_index(snap / "model.safetensors.index.json").findings == ()
    # A link out of the repository's own folder is still refused.
    other = tmp_path / "hub" / "models--org--other" / "blobs"
    other.mkdir(parents=True)
    (blobs / f"{1:064x}").rename(other / "x")
    (snap / B).unlink()
    (snap / B).symlink_to("../../../models--org--other/blobs/x")
    report = validator.validate_index(snap / "model.safetensors.index.json")
    assert slugs(report) == ["index-shard-path"]


@pytest.mark.parametrize("metadata", [None, {}], ids=["no-metadata", "empty-metadata"])
def test_index_without_total_size_is_valid(tmp_path, metadata):
    # Issue 14: transformers needs only weight_map; a missing total_size was
    # an ST501 error and is now the ST511 warning.
    index = {"weight_map": default_index()["weight_map"]}
    if metadata is not None:
        index["metadata"] = metadata
    report = validator.validate_index(write_checkpoint(tmp_path, index=index))
    assert slugs(report) == ["index-total-size-missing"]
    assert report.valid


def test_missing_total_size_is_a_warning(tmp_path):
    index = default_index()
    del index["metadata"]
    report = validator.validate_index(write_checkpoint(tmp_path, index=index))
    assert slugs(report) == ["index-total-size-missing"]
    assert report.findings[0].code == "ST511"
    assert report.findings[0].severity is validator.Severity.WARNING
    assert report.valid


def test_check_of_an_index_naming_no_shards_is_not_a_pass(tmp_path, capsys):
    # Issue 20: an empty weight_map was "valid" to validate_index while the
    # CLI exited 2; every transformers release refuses it.  It is now ST501
    # in both, and `stcheck check` exits 1 with the finding.
    from validator.cli.main import main

    raw = b'{"weight_map": {}, "metadata": {"total_size": 0}}'
    path = write_checkpoint(tmp_path, shards={}, raw_index=raw)
    assert slugs(validator.validate_index(path)) == ["index-invalid"]
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr()
    assert "ST501 index-invalid weight_map is empty" in out.out
    assert out.err == ""
