# Strategy: test the differential oracle (validator.formats.oracle) against
# the real loaders, and the campaign's mutator (validator.fuzz.pickle_mutator).
# Every load of a file runs in the oracle's throwaway process; the files
# here are written by the real writers (torch.save, np.save, joblib.dump,
# pickle.dumps of benign objects) or assembled, and the hostile ones can
# only ever create a marker file in tmp_path, whose absence the tests check.
# Tests that start the oracle (a torch import, ~2 s) share one and are slow.
from __future__ import annotations

import collections
import io
import json
import os
import pickle
import random
import struct
import zipfile
from pathlib import Path

import pytest

from tests._scripts import load_script
from validator.formats import oracle as oracle_mod
from validator.formats.oracle import (
    ABORT_GLOBAL,
    REFUSED_EVENT,
    REFUSED_GLOBAL,
    Claims,
    Oracle,
    allowed_globals,
    campaign,
    check,
    claims,
    judge,
    read_seeds,
)
from validator.fuzz import pickle_mutator
from validator.fuzz.pickle_mutator import assemble, disassemble, magic, mutate_named, mutate_stream
from validator.pickles._allow import ALLOWED

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "corpus" / "pickles" / "differential"
CODE_LOADERS = ("pickle", "torch", "numpy", "joblib")


def _harness():
    return load_script(ROOT / "fuzz" / "fuzz_pickle_loaders.py", "stcheck_fuzz_pickle_loaders")


def _call(module: str, name: str, *args: str, protocol: int = 2) -> bytes:
    """A pickle that calls module.name(*args), assembled (nothing live is pickled)."""
    pushed = b"".join(b"X" + struct.pack("<I", len(a.encode())) + a.encode() for a in args)
    return bytes([0x80, protocol]) + f"c{module}\n{name}\n".encode() + b"(" + pushed + b"tR."


def _npy_object(body: bytes) -> bytes:
    header = b"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + body


def _clean_claims(**changes: object) -> Claims:
    base = Claims(
        kind="pickle",
        codes=("ST705",),
        runs_no_code=True,
        torch_promise=False,
        container="pickle",
        reader_clean=False,
        reader_torch_promise=False,
        reader_kind="pickle",
    )
    return Claims(**{**base.__dict__, **changes})


# -- the mutator (fast) -------------------------------------------------------------------
def test_every_opcode_of_protocols_0_to_5_is_in_the_table():
    import pickletools

    assert {ord(o.code) for o in pickletools.opcodes} == set(pickle_mutator.OPCODES)


@pytest.mark.parametrize("protocol", range(6))
def test_a_stream_decodes_and_encodes_to_the_same_bytes(protocol):
    data = pickle.dumps({"a": [1, 2.5, "x", b"y", None], "s": {1}, "f": frozenset({2}), "b": bytearray(b"z")}, protocol)
    ops, end = disassemble(data)
    assert end == len(data)
    assert ops[-1].name == "STOP"
    assert assemble(ops) == data


def test_frames_are_recomputed_on_request():
    data = pickle.dumps(list(range(100)), protocol=4)
    ops, _ = disassemble(data)
    assert ops[1].name == "FRAME"
    broken = [ops[0], pickle_mutator.op("FRAME", struct.pack("<Q", 3)), *ops[2:]]
    assert assemble(broken) != data
    assert assemble(broken, frames=True) == data


def test_the_mutator_never_raises_and_reaches_every_container():
    rng = random.Random(7)
    corpus = read_seeds([SEEDS])
    seen = set()
    for _ in range(400):
        name, data = rng.choice(corpus)
        new_name, new = mutate_named(name, data, rng, corpus)
        assert isinstance(new_name, str)
        assert isinstance(new, bytes)
        seen.add(magic(new))
    assert {"zip", "npy", "tar", "gzip", "bz2", "xz", "pickle"} <= seen


def test_stream_mutations_keep_bytes_after_the_stop():
    data = pickle.dumps({"a": 1}, protocol=2) + b"TAIL"
    rng = random.Random(3)
    assert sum(mutate_stream(data, rng).endswith(b"TAIL") for _ in range(50)) > 25


def test_fuzz_inputs_carry_the_file_name():
    harness = _harness()
    assert harness.decode(harness.encode("pytorch_model.bin", b"PK\x03\x04\0")) == (
        "pytorch_model.bin",
        b"PK\x03\x04\0",
    )
    assert harness.decode(b"PK\x03\x04\0rest") == ("model.pkl", b"PK\x03\x04\0rest")
    assert harness.decode(b"NAME:../x\0data")[0] == "model.pkl"


def test_the_allowlists_hold_stchecks_table():
    assert set(ALLOWED) <= allowed_globals()
    assert ("posix", "system") not in allowed_globals()


# -- the oracle (slow: one torch import for the module) ------------------------------------
@pytest.fixture(scope="module")
def oracle():
    with Oracle(timeout=20.0) as started:
        yield started


def _benign(folder: Path) -> dict[str, Path]:
    import joblib
    import numpy as np
    import torch

    state = collections.OrderedDict(weight=torch.arange(4, dtype=torch.float32))
    paths = {name: folder / name for name in ("zip.pt", "legacy.bin", "obj.npy", "arrays.npz", "model.joblib", "p.pkl")}
    torch.save(state, paths["zip.pt"])
    torch.save(state, paths["legacy.bin"], _use_new_zipfile_serialization=False)
    np.save(paths["obj.npy"], np.array([1, "abc", {"a": 1}], dtype=object), allow_pickle=True)
    np.savez(paths["arrays.npz"], a=np.arange(3), b=np.array([None, 2], dtype=object))
    joblib.dump({"coef": np.arange(4.0)}, paths["model.joblib"])
    paths["p.pkl"].write_bytes(pickle.dumps(collections.OrderedDict(a={1, 2}), protocol=2))
    return paths


@pytest.mark.slow
def test_the_audit_hook_sees_every_loaders_globals(oracle, tmp_path):
    paths = _benign(tmp_path)
    seen = {name: oracle.run(path) for name, path in paths.items()}
    rebuild = ("torch._utils", "_rebuild_tensor_v2")
    ordered = ("collections", "OrderedDict")
    reconstruct = ("numpy._core.multiarray", "_reconstruct")
    wrapper = ("joblib.numpy_pickle", "NumpyArrayWrapper")
    expected = {
        ("zip.pt", "torch"): {rebuild, ordered},
        ("legacy.bin", "torch"): {rebuild, ordered},
        ("obj.npy", "numpy"): {reconstruct, ("numpy", "ndarray"), ("numpy", "dtype")},
        ("arrays.npz", "numpy"): {reconstruct, ("numpy", "ndarray"), ("numpy", "dtype")},
        ("model.joblib", "joblib"): {wrapper, ("numpy", "ndarray"), ("numpy", "dtype")},
        # protocol 2 names set by its Python 2 module: the event carries the name in the stream
        ("p.pkl", "pickle"): {ordered, ("__builtin__", "set")},
        ("p.pkl", "joblib"): {ordered, ("__builtin__", "set")},
    }
    for (name, loader), globals_ in expected.items():
        run = seen[name].run(loader)
        assert run is not None
        assert set(run.globals) == globals_, (name, loader, run)
        if globals_:
            assert run.status == "ok", (name, loader, run)
    assert seen["zip.pt"].run("torch-weights-only").status == "ok"
    assert seen["legacy.bin"].run("torch-weights-only").status == "ok"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "make"),
    [
        ("system.pkl", lambda marker: _call("posix", "system", f"touch {marker}")),
        ("open.pkl", lambda marker: _call("builtins", "open", str(marker), "w")),
        ("open_p0.pkl", lambda marker: f"cbuiltins\nopen\n(V{marker}\nVw\ntR.".encode()),
        ("system.npy", lambda marker: _npy_object(_call("posix", "system", f"touch {marker}"))),
    ],
)
def test_a_hostile_file_is_stopped_before_its_call(oracle, tmp_path, name, make):
    marker = tmp_path / "marker"
    path = tmp_path / name
    path.write_bytes(make(marker))
    outcome = oracle.run(path)
    assert not marker.exists()
    refused = {r.loader: r for r in outcome.refused}
    assert set(refused) >= ({"numpy"} if name.endswith(".npy") else {"pickle", "numpy", "joblib"})
    for run in refused.values():
        assert run.status == REFUSED_GLOBAL
        assert run.globals[-1] in {("posix", "system"), ("builtins", "open")}
    assert outcome.run("torch-weights-only").status == "error"


@pytest.mark.slow
def test_a_hostile_torch_zip_is_stopped_inside_torch_load(oracle, tmp_path):
    marker = tmp_path / "marker"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("archive/data.pkl", _call("posix", "system", f"touch {marker}"))
        archive.writestr("archive/version", "3\n")
    path = tmp_path / "model.pt"
    path.write_bytes(out.getvalue())
    run = oracle.run(path).run("torch")
    assert run.status == REFUSED_GLOBAL
    assert run.globals == (("posix", "system"),)
    assert not marker.exists()


@pytest.mark.slow
def test_the_event_fence_stops_a_call_the_allowlist_let_through(tmp_path):
    # An oracle that (wrongly) allows posix.system and builtins.open: the
    # process still stops at the audit event the call raises, before it acts.
    marker = tmp_path / "marker"
    (tmp_path / "system.pkl").write_bytes(_call("posix", "system", f"touch {marker}"))
    (tmp_path / "open.pkl").write_bytes(_call("builtins", "open", str(marker), "w"))
    with Oracle(allowed={("posix", "system"), ("builtins", "open")}) as lax:
        for name in ("system.pkl", "open.pkl"):
            run = lax.run(tmp_path / name, ["pickle"]).run("pickle")
            assert run.status == REFUSED_EVENT, run
    assert not marker.exists()


@pytest.mark.slow
def test_a_loader_that_hangs_is_stopped_at_its_deadline(tmp_path):
    fifo = tmp_path / "model.pkl"
    os.mkfifo(fifo)  # open() blocks until a writer comes: none does
    with Oracle(timeout=1.0) as quick:
        outcome = quick.run(fifo, ["pickle", "numpy"])
        assert [(r.loader, r.status) for r in outcome.runs] == [("pickle", "timeout"), ("numpy", "timeout")]
        assert quick.run(SEEDS / "y_memo_put_get.pkl", ["pickle"]).run("pickle").status == "ok"


@pytest.mark.slow
def test_an_allocation_past_the_memory_limit_fails_in_the_loader(oracle, tmp_path):
    path = tmp_path / "big.pkl"
    path.write_bytes(b"\x80\x02c__builtin__\nbytearray\n(\x8a\x06\x00\x00\x00\x00\x00\x04tR.")  # bytearray(2**42)
    run = oracle.run(path, ["pickle"]).run("pickle")
    assert (run.status, run.detail) == ("error", "MemoryError:")


@pytest.mark.slow
def test_the_abort_status_is_distinct(tmp_path):
    path = tmp_path / "evil.pkl"
    path.write_bytes(_call("os", "getcwd"))
    with Oracle() as fresh:
        assert fresh.run(path, ["pickle"]).run("pickle").status == REFUSED_GLOBAL
    assert ABORT_GLOBAL not in {0, 1, 2}


@pytest.mark.slow
def test_a_planted_false_clean_is_a_finding_with_a_reproducer(oracle, tmp_path):
    marker = tmp_path / "marker"
    path = tmp_path / "model.pkl"
    path.write_bytes(_call("posix", "system", f"touch {marker}"))
    assert claims(path).runs_no_code is False  # stcheck itself calls it an error
    found = check(path, oracle, tmp_path / "findings", said=_clean_claims())
    assert {d.what for d in found} == {"false-clean"}
    assert {d.loader for d in found} >= {"pickle", "numpy", "joblib"}
    reproducer = Path(found[0].reproducer)
    assert reproducer.read_bytes() == path.read_bytes()
    record = json.loads(reproducer.with_name(reproducer.name + ".json").read_text())
    assert record["claims"]["runs_no_code"] is True
    assert not marker.exists()


@pytest.mark.slow
def test_a_broken_torch_promise_is_a_finding(oracle, tmp_path):
    import torch

    path = tmp_path / "p4.pt"
    torch.save({"w": torch.zeros(2)}, path, pickle_protocol=4)
    said = _clean_claims(container="torch-zip", torch_promise=True)
    found = judge(path.name, said, oracle.run(path))
    assert [(d.what, d.loader) for d in found] == [("broken-promise", "torch-weights-only")]
    assert "Unsupported operand 149" in found[0].detail  # FRAME, which torch's weights-only unpickler lacks


@pytest.mark.slow
def test_malformed_data_that_no_torch_load_reads_breaks_no_promise(oracle, tmp_path):
    import torch

    buf = io.BytesIO()
    torch.save({"w": torch.arange(4.0)}, buf)
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():  # the storage cut to 4 of its 16 bytes
            dst.writestr(info.filename, src.read(info)[:4] if info.filename.endswith("data/0") else src.read(info))
    path = tmp_path / "short.pt"
    path.write_bytes(out.getvalue())
    outcome = oracle.run(path)
    assert outcome.run("torch").status == outcome.run("torch-weights-only").status == "error"
    assert judge(path.name, _clean_claims(container="torch-zip", torch_promise=True), outcome) == []


@pytest.mark.slow
def test_a_kept_promise_and_a_true_clean_are_no_findings(oracle, tmp_path):
    paths = _benign(tmp_path)
    said = _clean_claims(container="torch-zip", torch_promise=True, reader_clean=True)
    assert judge("zip.pt", said, oracle.run(paths["zip.pt"])) == []


@pytest.mark.slow
def test_the_seeds_match_their_generator(tmp_path):
    gen = load_script(SEEDS / "generate.py", "stcheck_differential_generate")
    manifest = gen.build(tmp_path)
    committed = json.loads((SEEDS / "MANIFEST.json").read_text())["files"]
    assert set(manifest) == set(committed)
    for name, entry in committed.items():
        if entry["deterministic"]:
            assert (tmp_path / name).read_bytes() == (SEEDS / name).read_bytes(), name


@pytest.mark.slow
def test_the_seed_replay_has_no_disagreement(oracle, tmp_path):
    # The brief CI campaign: every committed seed, judged once.  A failure
    # lists each disagreement's class and reproducer.
    stats = campaign(seconds=0, out=tmp_path, seeds=read_seeds([SEEDS]), oracle=oracle, mutate=False)
    assert stats.inputs == len(json.loads((SEEDS / "MANIFEST.json").read_text())["files"])
    lines = [f"{d.what} {d.name} {d.loader}: {d.detail[:100]}" for d in stats.disagreements]
    assert stats.classes == {}, "\n".join(lines)


@pytest.mark.slow
def test_a_brief_mutating_campaign_runs_and_keeps_what_it_finds(oracle, tmp_path):
    names = ("y_state_dict_p2.pkl", "y_zip_state_dict.pt", "y_npy_float.npy", "y_joblib_dump_plain.joblib")
    seeds = [s for s in read_seeds([SEEDS]) if s[0] in names]
    stats = campaign(seconds=2.0, out=tmp_path, seeds=seeds, oracle=oracle, rng_seed=1)
    assert stats.inputs > len(seeds)
    assert stats.rate > 1.0
    assert stats.corpus >= len(seeds)
    for d in stats.disagreements:
        assert Path(d.reproducer).is_file()
    assert sum(stats.classes.values()) >= len(stats.disagreements) > 0 or not stats.classes


@pytest.mark.slow
def test_the_fuzz_harness_replays_a_seed(oracle, tmp_path):
    harness = _harness()
    raw = harness.encode("model.pt", (SEEDS / "y_zip_state_dict.pt").read_bytes())
    assert harness.check_input(raw, oracle) == []
    evil = harness.encode("model.pkl", _call("posix", "system", f"touch {tmp_path / 'marker'}"))
    assert harness.check_input(evil, oracle) == []  # stcheck calls it an error: no disagreement
    assert not (tmp_path / "marker").exists()


def test_claims_of_a_clean_and_a_hostile_file(tmp_path):
    clean = tmp_path / "model.pkl"
    clean.write_bytes(pickle.dumps(collections.OrderedDict(a=1), protocol=2))
    evil = tmp_path / "evil.pkl"
    evil.write_bytes(_call("posix", "system", "true"))
    assert claims(clean).runs_no_code
    assert claims(clean).reader_clean
    said = claims(evil)
    assert "ST701" in said.codes
    assert not said.runs_no_code
    assert not said.reader_clean
    assert oracle_mod.CODE_LOADERS == CODE_LOADERS


CAMPAIGN = ROOT / "corpus" / "pickles" / "campaign"


@pytest.mark.slow
def test_the_committed_campaign_corpus_and_findings_replay_with_no_disagreement(oracle, tmp_path):
    # A sample of the hour-long campaign's corpus (corpus/pickles/campaign) and
    # every reproducer it or earlier campaigns kept (differential/findings):
    # each was a disagreement or new coverage once; none may disagree now.
    findings = SEEDS / "findings"
    kept = tmp_path / "kept"
    kept.mkdir()
    for path in findings.iterdir():
        if path.is_file() and path.suffix != ".json":
            (kept / path.name).write_bytes(path.read_bytes())
    seeds = read_seeds([CAMPAIGN, kept])
    assert len(seeds) > 100
    stats = campaign(seconds=0, out=tmp_path / "out", seeds=seeds, oracle=oracle, mutate=False)
    lines = [f"{d.what} {d.name} {d.loader}: {d.detail[:100]}" for d in stats.disagreements]
    assert stats.classes == {}, "\n".join(lines)
