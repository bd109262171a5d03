# Strategy: pin every verdict of the static pickle reader (validator.pickles).
# The corpus (corpus/pickles, MANIFEST.json) is data: each file's verdict
# and named call must hold, regeneration must give the same bytes for the
# files the generator assembles, and reading every file with pickle, torch
# and numpy's loaders replaced by traps proves nothing is unpickled.  Benign
# files from the real writers are also made here, in every protocol; the
# bounds are checked by lowering them; Hypothesis feeds random bytes and
# mutations of benign files and checks the API never raises.
from __future__ import annotations

import _pickle
import collections
import io
import json
import os
import pickle
import struct
import time
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests._scripts import load_script
from validator.pickles import PickleVerdict, _allow, _ops, read_pickle_bytes, read_pickle_file, sniff_pickle

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "pickles"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))["files"]
TORCH_PHRASE = "holds only tensors: loads with torch.load(weights_only=True) (the default since torch 2.6)"
FRAME_REFUSAL = "refused: an opcode and its argument run past the end of their FRAME"
# Corpus files whose verdict changed with the data tier and the frame rule (issue 35):
# - an object dtype alone is the data tier now (its elements are pickled in the stream, read here);
# - generate.joblib_with splices its call into joblib's last protocol-4 frame without resizing it,
#   so joblib.load raises "pickle exhausted before end of frame" before the call (and pickle.load
#   reads other bytes): the reader refuses the frame instead of naming the call.
DATA_ONLY = {"n_pickle_numpy_object_dtype.pkl": "numpy object array"}
FRAME_REFUSED = {"n_pickle_joblib_builtins_exec.joblib"}


def _generate_module():
    return load_script(CORPUS / "generate.py", "stcheck_pickle_corpus_generate")


# -- the corpus ----------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_corpus_verdict(name):
    entry = MANIFEST[name]
    verdict = read_pickle_file(CORPUS / name)
    assert name.startswith("y_" if entry["expected"] == "weights-only" else "n_")
    assert verdict.weights_only is (entry["expected"] == "weights-only"), verdict.message()
    if name in DATA_ONLY:
        assert verdict.data_only
        assert verdict.rebuilds == (DATA_ONLY[name],)
        return
    if name in FRAME_REFUSED:
        assert verdict.message().startswith(FRAME_REFUSAL)
        return
    if entry["call"] is not None:
        assert entry["call"] in verdict.message()
    if verdict.weights_only:
        assert not verdict.unsafe
        assert verdict.problem is None
    else:
        assert verdict.unsafe or verdict.problem is not None


@pytest.mark.parametrize(
    ("name", "kind", "message"),
    [
        ("y_pickle_torch_zip.pt", "torch-zip", TORCH_PHRASE),
        ("y_pickle_torch_legacy.bin", "torch-legacy", TORCH_PHRASE),
        ("y_pickle_numpy.npy", "npy", "holds no pickled objects: loading it runs no code"),
        ("y_pickle_numpy.npz", "npz", "holds no pickled objects: loading it runs no code"),
        ("y_pickle_joblib.joblib", "joblib", "imports only allowlisted data types"),
        ("y_pickle_joblib_zlib.joblib", "joblib", "imports only allowlisted data types"),
        ("y_pickle_torch_tar_empty.tar", "torch-tar", "imports only allowlisted data types"),
        ("n_pickle_os_system.pkl", "pickle", "loading it calls os.system"),
        ("n_pickle_unusual_extension.png", "pickle", "loading it calls os.system"),
        ("n_pickle_builtins_eval_imported.pkl", "pickle", "loading it imports builtins.eval"),
        ("n_pickle_legacy_second_pickle.bin", "torch-legacy", "loading it calls os.system"),
        ("n_pickle_npy_object_evil.npy", "npy", "loading it calls os.system"),
        ("n_pickle_joblib_builtins_exec.joblib", "joblib", FRAME_REFUSAL),
        ("n_pickle_unknown_opcode.pkl", "pickle", "cannot be read to its STOP: unknown opcode 0xff at byte 2"),
        ("n_pickle_zip_bad_crc.pt", "torch-zip", "bad zip archive: the CRC32 of 'archive/data.pkl' does not match"),
    ],
)
def test_corpus_kind_and_message(name, kind, message):
    verdict = read_pickle_file(CORPUS / name)
    assert verdict.kind == kind
    assert verdict.message().startswith(message)


def test_corpus_is_small_and_named():
    files = [p for p in CORPUS.iterdir() if p.name.startswith(("y_", "n_"))]
    assert sorted(p.name for p in files) == sorted(MANIFEST)
    assert sum(p.stat().st_size for p in files) < 300_000
    assert all(p.name.split("_")[1] == "pickle" for p in files)


def test_regenerating_gives_byte_identical_files(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("joblib")
    fresh = _generate_module().build(tmp_path)
    assert fresh == MANIFEST
    for name, entry in MANIFEST.items():
        if entry["deterministic"]:
            assert (tmp_path / name).read_bytes() == (CORPUS / name).read_bytes(), name
        else:  # torch.save and numpy.savez: a serialization id, addresses, a timestamp; same verdict
            assert read_pickle_file(tmp_path / name).weights_only is (entry["expected"] == "weights-only"), name


def _trap(*_args, **_kwargs):
    raise AssertionError("a loader ran")


def test_nothing_is_unpickled(monkeypatch):
    monkeypatch.setattr(pickle, "load", _trap)
    monkeypatch.setattr(pickle, "loads", _trap)
    monkeypatch.setattr(pickle, "Unpickler", _trap)
    monkeypatch.setattr(_pickle, "load", _trap)
    monkeypatch.setattr(_pickle, "loads", _trap)
    monkeypatch.setattr(_pickle, "Unpickler", _trap)
    for module, names in (("torch", ("load",)), ("numpy", ("load",)), ("joblib", ("load",))):
        try:
            imported = __import__(module)
        except ImportError:
            continue
        for attr in names:
            monkeypatch.setattr(imported, attr, _trap)
    for name in sorted(MANIFEST):
        assert isinstance(read_pickle_file(CORPUS / name), PickleVerdict)
        assert isinstance(read_pickle_bytes((CORPUS / name).read_bytes()), PickleVerdict)


# -- benign files from the writers, every protocol ------------------------------------------
@pytest.mark.parametrize("protocol", range(6))
def test_pickle_dumps_of_tensors_every_protocol(protocol):
    torch = pytest.importorskip("torch")
    state = collections.OrderedDict(w=torch.ones(3), b=torch.zeros(2, dtype=torch.float16))
    verdict = read_pickle_bytes(pickle.dumps(state, protocol=protocol))
    assert verdict.weights_only
    assert verdict.kind == "pickle"
    assert not verdict.torch_weights_only  # torch.storage._load_from_bytes: torch.load(weights_only=True) refuses it
    names = {(g.module, g.name) for g in verdict.imports}
    assert ("torch.storage", "_load_from_bytes") in names
    assert ("torch", "FloatStorage") in names  # read from the nested torch.save stream


@pytest.mark.parametrize("legacy", [False, True])
def test_torch_save(legacy):
    torch = pytest.importorskip("torch")
    out = io.BytesIO()
    state = {"a": torch.arange(6).reshape(2, 3), "p": torch.nn.Parameter(torch.ones(2)), "size": torch.Size([2])}
    torch.save(state, out, _use_new_zipfile_serialization=not legacy)
    verdict = read_pickle_bytes(out.getvalue())
    assert verdict.kind == ("torch-legacy" if legacy else "torch-zip")
    assert verdict.weights_only
    assert verdict.torch_weights_only
    assert verdict.message() == TORCH_PHRASE


@pytest.mark.parametrize("protocol", range(6))
def test_malicious_reduce_every_protocol(protocol):
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    data = pickle.dumps(Evil(), protocol=protocol)  # dumping runs nothing
    verdict = read_pickle_bytes(data)
    target = f"{os.system.__module__}.system"  # posix.system on Linux
    assert not verdict.weights_only
    assert verdict.message() == f"loading it calls {target}"
    (g,) = verdict.unsafe
    assert (g.called, g.reason) == (True, "not on the allowlist")


def test_numpy_object_arrays_are_data_only():
    np = pytest.importorskip("numpy")
    out = io.BytesIO()
    np.save(out, np.array([1, "a"], dtype=object))
    verdict = read_pickle_bytes(out.getvalue())
    assert verdict.kind == "npy"
    assert (verdict.weights_only, verdict.data_only) == (False, True)
    assert verdict.message().startswith("loads with numpy.load(allow_pickle=True); rebuilds numpy object array")
    assert read_pickle_bytes(pickle.dumps(np.arange(3.0))).weights_only


def test_npz_member_with_an_object_array_is_read():
    out = io.BytesIO()
    evil = _generate_module().npy("|O", "(1,)", _generate_module().evil("os", "system"))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ok.npy", _generate_module().npy("<f4", "(1,)", b"\0\0\0\0"))
        archive.writestr("bad.npy", evil)
    verdict = read_pickle_bytes(out.getvalue())
    assert verdict.kind == "npz"
    assert verdict.message() == "loading it calls os.system"
    assert verdict.unsafe[0].member == "bad.npy"


def test_joblib_object_array_is_data_only(tmp_path):
    joblib = pytest.importorskip("joblib")
    np = pytest.importorskip("numpy")
    joblib.dump({"o": np.array([1, None], dtype=object), "f": np.ones(3)}, tmp_path / "m.joblib")
    verdict = read_pickle_file(tmp_path / "m.joblib")
    assert verdict.kind == "joblib"
    assert verdict.data_only
    assert verdict.message().startswith("loads with joblib.load; rebuilds numpy object array")


# -- places, members, offsets -----------------------------------------------------------------
def test_offsets_and_members():
    verdict = read_pickle_file(CORPUS / "n_pickle_zip_odd_member_name.pt")
    (g,) = verdict.unsafe
    assert (g.module, g.name, g.called, g.offset, g.member) == ("os", "system", True, 2, "foo/evil.pkl")
    memo = read_pickle_file(CORPUS / "n_pickle_stack_global_memo.pkl")
    assert [(g.module, g.name, g.offset) for g in memo.unsafe] == [("os", "system", 22)]  # the STACK_GLOBAL opcode
    nested = read_pickle_file(CORPUS / "n_pickle_load_from_bytes_evil.pkl")
    (g,) = nested.unsafe
    assert g.member == "stream: bytes at 40"  # where the BINBYTES data begins


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"(S'echo'\nios\nsystem\n.", "loading it calls os.system"),  # INST
        (b"\x80\x01(cos\nsystem\nS'echo'\no.", "loading it calls os.system"),  # OBJ
        (b"\x80\x02cos\nsystem\n)\x81.", "loading it calls os.system"),  # NEWOBJ
        (b"\x80\x04cos\nsystem\n)}\x92.", "loading it calls os.system"),  # NEWOBJ_EX
        (b"\x80\x02cos\nsystem\n}b.", "loading it calls os.system"),  # BUILD on the global itself
        (b"\x80\x02cos\nsystem\n.", "loading it imports os.system"),  # imported, never called
        (b"\x80\x02\x83\x01\x02.", "loading it imports copyreg._extension_registry[513]"),  # EXT2
        (b"\x80\x02\x84\x01\x00\x00\x00).", "loading it imports copyreg._extension_registry[1]"),  # EXT4
        (b"\x80\x02N)R.", "loading it calls an unresolved global (calls a value computed while loading)"),
        (b"\x80\x04\x8c\x02os\x8c\x06system\x93N\x85R.", "loading it calls os.system"),  # STACK_GLOBAL
        (b"ccopy_reg\n_reconstructor\n.", "loading it imports copyreg._reconstructor"),  # Python 2 name, protocol 0
        (b"\x80\x03ccopy_reg\n_reconstructor\n.", "loading it imports copy_reg._reconstructor"),  # not mapped at 3
    ],
)
def test_opcodes_that_import_and_call(data, message):
    verdict = read_pickle_bytes(data)
    assert not verdict.weights_only
    assert verdict.message().startswith(message)


def test_stack_global_of_a_call_result_is_unresolved():
    verdict = read_pickle_file(CORPUS / "n_pickle_stack_global_computed.pkl")
    (g,) = verdict.unsafe
    assert (g.module, g.name) == ("?", "?")
    assert "cannot resolve the imported name" in verdict.message()


def test_names_are_escaped():
    verdict = read_pickle_bytes(b"\x80\x02c\x1b[31mos\nsystem\n)R.")
    assert verdict.message() == "loading it calls \\x1b[31mos.system"


# -- bounds ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bound", "value", "data", "problem"),
    [
        ("MAX_OPS", 100, b"\x80\x02" + b"N0" * 100 + b"N.", "more than 100 opcodes"),
        ("MAX_STACK", 50, b"\x80\x02" + b"N" * 60 + b".", "stack deeper than 50"),
        ("MAX_MEMO", 10, b"\x80\x04N" + b"\x94" * 20 + b".", "more than 10 memo entries"),
        ("MAX_MARKS", 10, b"\x80\x02" + b"(" * 20 + b"N.", "MARKs nested more than 10 deep"),
        ("MAX_IMPORTS", 10, b"\x80\x02" + b"cos\nsystem\n0" * 20 + b"N.", "more than 10 imports"),
    ],
)
def test_bounds(monkeypatch, bound, value, data, problem):
    monkeypatch.setattr(_ops, bound, value)
    verdict = read_pickle_bytes(data)
    assert verdict.problem is not None
    assert problem in verdict.problem
    assert not verdict.weights_only


def test_nesting_is_bounded():
    gen = _generate_module()
    data = gen.legacy()
    for _ in range(_ops.MAX_NESTED + 1):
        data = gen.legacy(obj=gen.P2 + gen.call("torch.storage", "_load_from_bytes", gen.raw(data)) + gen.STOP)
    verdict = read_pickle_bytes(data)
    assert f"pickles nested more than {_ops.MAX_NESTED} deep" in verdict.message()


def test_decompression_is_bounded(monkeypatch):
    from validator.formats import _compressed

    monkeypatch.setattr(_compressed, "MAX_INFLATE", 1000)
    import zlib

    verdict = read_pickle_bytes(zlib.compress(b"\x80\x02" + b"N0" * 5000 + b"N."))
    assert verdict.problem == "compressed with zlib: decompresses to over 0 MiB, not read"


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"", "an empty file: not a pickle"),
        (b"\x80\x06N.", "unsupported pickle protocol 6 at byte 0"),
        (b"\x80\x02N", "truncated: the stream ends before its STOP at byte 3"),
        (b"\x80\x02.", "stack underflow at byte 2"),
        (b"\x80\x02h\x05.", "memo key 5 is not set at byte 2"),
        (b"\x80\x02X\xff\xff\xff\x7fab.", "truncated argument at byte 2"),
        (b"\x80\x02\x8b\xff\xff\xff\xffN.", "negative length at byte 2"),
        (b"I12x\n.", "bad argument (ValueError) at byte 0"),
        (b"\x80\x04\x95\xff\x00\x00\x00\x00\x00\x00\x00N.", "FRAME runs past the end of the stream at byte 2"),
        (b"\x80\x02}(Nu.", "odd number of items for a dict at byte 5"),
        (b"PK\x05\x06" + bytes(18), "a zip archive with no .pkl or .npy member: not a torch.save archive or .npz"),
        (
            b"\x93NUMPY\x01\x00\x04\x00{}\n\n",
            "bad .npy: the header is not a dict with exactly descr, fortran_order and shape",
        ),
    ],
)
def test_unreadable(data, problem):
    verdict = read_pickle_bytes(data)
    assert not verdict.weights_only
    assert verdict.problem is not None
    assert verdict.problem.endswith(problem)


def test_read_pickle_file_raises_oserror_only_on_open(tmp_path):
    with pytest.raises(OSError, match="missing"):
        read_pickle_file(tmp_path / "missing")
    with pytest.raises(OSError):
        read_pickle_file(tmp_path)
    (tmp_path / "empty").write_bytes(b"")
    assert read_pickle_file(tmp_path / "empty").problem == "an empty file: not a pickle"


# -- sniffing -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("y_pickle_torch_zip.pt", "torch-zip"),
        ("y_pickle_torch_legacy.bin", "torch-legacy"),
        ("y_pickle_torch_tar_empty.tar", "torch-tar"),
        ("y_pickle_numpy.npy", "npy"),
        ("y_pickle_numpy.npz", "npz"),
        ("y_pickle_joblib.joblib", "joblib"),
        ("y_pickle_joblib_zlib.joblib", "joblib"),
        ("y_pickle_joblib_xz.joblib", "joblib"),
        ("y_pickle_pickle_dumps_protocol_0.pkl", "pickle"),
        ("y_pickle_pickle_dumps_protocol_1.pkl", "pickle"),
        ("y_pickle_pickle_dumps_protocol_5.pkl", "pickle"),
        ("n_pickle_unusual_extension.png", "pickle"),
        ("n_pickle_python2_builtin_eval.pkl", "pickle"),
    ],
)
def test_sniff(name, kind):
    assert sniff_pickle((CORPUS / name).read_bytes()[:4096]) == kind


@pytest.mark.parametrize(
    "head",
    [b"", b"hello world", b'{"a": 1}', struct.pack("<Q", 2) + b"{}", b"\x7fELF\x02\x01", b"GGUF\x03\x00", b"\x80\x09x"],
)
def test_sniff_other(head):
    assert sniff_pickle(head) is None


# -- the allowlist ------------------------------------------------------------------------------------
def test_torch_rows_are_torch_allowlist():
    unpickler = pytest.importorskip("torch._weights_only_unpickler")
    torch_names = {tuple(k.rsplit(".", 1)) for k in unpickler._get_allowed_globals()}
    ours = {key for key, (_, torch_allows) in _allow.ALLOWED.items() if torch_allows}
    assert ours == torch_names


def test_allowlist_is_exact():
    assert _allow.allowed("torch._utils", "_rebuild_tensor_v2")
    assert not _allow.allowed("torch._utils", "_rebuild_tensor_v2.__globals__")
    assert not _allow.allowed("torch", "load")
    assert not _allow.allowed("builtins", "getattr")
    assert all(source for source, _ in _allow.ALLOWED.values())


def test_data_tier_is_sourced_and_apart_from_the_weights_tier():
    assert not _allow.DATA_TIER.keys() & _allow.ALLOWED.keys()
    assert all(rebuilds and source for rebuilds, source in _allow.DATA_TIER.values())
    # constructors that call what the stream gives them are in neither table
    for key in [("functools", "partial"), ("copyreg", "_reconstructor"), ("numpy.core", "_ufunc_reconstruct")]:
        assert key not in _allow.DATA_TIER
        assert key not in _allow.ALLOWED


def test_torch_opcodes_are_what_its_unpickler_reads():
    unpickler = pytest.importorskip("torch._weights_only_unpickler")
    source = Path(unpickler.__file__).read_text(encoding="utf-8")
    read = {name for name, _ in _ops._OPCODES.values() if f"key[0] == {name}[0]" in source}
    read |= {name for name in ("BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT") if f"{name}[0]" in source}
    assert read == _allow.TORCH_OPCODES


def test_every_opcode_has_a_handler():
    names = {name for name, _ in _ops._OPCODES.values()}
    assert names - set(_ops._HANDLERS) == {"STOP"}


# -- never raises ---------------------------------------------------------------------------------------
_SEEDS = [(CORPUS / name).read_bytes() for name in sorted(MANIFEST) if (CORPUS / name).stat().st_size < 20_000]


def _bounded(data: bytes) -> None:
    start = time.perf_counter()
    verdict = read_pickle_bytes(data)
    assert isinstance(verdict, PickleVerdict)
    assert verdict.message()
    assert verdict.weights_only + verdict.data_only == (not verdict.unsafe and verdict.problem is None)
    sniff_pickle(data[:4096])
    assert time.perf_counter() - start < 2.0


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_random_bytes_never_raise(data):
    _bounded(data)


@settings(max_examples=300, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_SEEDS),
    st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255), st.sampled_from(["set", "insert", "delete"]))),
)
def test_mutated_corpus_never_raises(seed, edits):
    data = bytearray(seed)
    for where, value, how in edits:
        at = where % (len(data) + 1)
        if how == "insert":
            data.insert(at, value)
        elif at < len(data):
            if how == "set":
                data[at] = value
            else:
                del data[at]
    _bounded(bytes(data))
