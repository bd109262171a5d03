# Strategy: issue 35's reader cases, each built here by a small pickle byte
# builder (or pickle.dumps of our own benign objects), each checked twice:
# the static verdict in this process, and the real loader in a throwaway
# subprocess (python -I, cwd a temp dir) whose only possible effect is a
# marker file.  A "runs code" sample must create the marker under the real
# loader and get an error here; a data-tier sample must load with the loader
# the verdict names and get no error; an ST705 promise of
# torch.load(weights_only=True) must hold under torch.load itself.
from __future__ import annotations

import collections
import io
import pickle
import struct
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from validator.pickles import _dtypes, read_pickle_bytes, read_pickle_file

if TYPE_CHECKING:
    from pathlib import Path

np = pytest.importorskip("numpy")

# -- a pickle byte builder ------------------------------------------------------------
P2, P4, P5 = b"\x80\x02", b"\x80\x04", b"\x80\x05"
MARK, TUPLE, REDUCE, STOP, SETITEMS, BUILD, NONE = b"(", b"t", b"R", b".", b"u", b"b", b"N"
EMPTY_TUPLE, EMPTY_DICT, NEWOBJ, POP = b")", b"}", b"\x81", b"0"


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def text(s: str) -> bytes:
    data = s.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def raw(data: bytes) -> bytes:
    return b"B" + struct.pack("<I", len(data)) + data


def tup(*items: bytes) -> bytes:
    return MARK + b"".join(items) + TUPLE


def call(func: bytes, *args: bytes) -> bytes:
    return func + tup(*args) + REDUCE


def dict_of(**items: bytes) -> bytes:
    return EMPTY_DICT + MARK + b"".join(text(k) + v for k, v in items.items()) + SETITEMS


def opens(marker: Path) -> bytes:
    """builtins.open(marker, "w"): creates the marker file."""
    return call(glob("builtins", "open"), text(str(marker)), text("w"))


def legacy(obj: bytes) -> bytes:
    """A legacy torch.save stream whose object pickle is ``obj`` (no storages)."""
    magic = P2 + b"\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + STOP
    version = P2 + b"M\xe9\x03" + STOP
    sys_info = P2 + dict_of(little_endian=b"\x88") + STOP
    keys = P2 + b"]" + STOP
    return magic + version + sys_info + P2 + obj + STOP + keys


# -- the real loaders, in a throwaway process -----------------------------------------
LOADERS = {
    "pickle.load": "import pickle\nwith open(PATH, 'rb') as f: pickle.load(f)",
    # torch.load reads a zip's data.pkl from a BytesIO: no peek, so the C unpickler reads frames its own way
    "pickle.load(BytesIO)": "import io, pickle\nwith open(PATH, 'rb') as f: pickle.load(io.BytesIO(f.read()))",
    "torch.load": "import torch\ntorch.load(PATH, weights_only=False)",
    "torch.load(weights_only=True)": "import torch\ntorch.load(PATH, weights_only=True)",
    "joblib.load": "import joblib\njoblib.load(PATH)",
    "numpy.load(allow_pickle=True)": "import numpy\nnumpy.load(PATH, allow_pickle=True)",
}


def real_load(path: Path, loader: str, *more: Path) -> tuple[bool, str]:
    """(whether ``loader`` loaded every file without an exception, its stderr tail), in one process."""
    script = "import sys\nok = True\nfor PATH in sys.argv[1:]:\n    try:\n"
    script += "".join(f"        {line}\n" for line in LOADERS[loader].splitlines())
    script += (
        "    except Exception as exc:\n        ok = False\n        print(PATH, repr(exc)[:200], file=sys.stderr)\n"
    )
    script += "sys.exit(0 if ok else 1)\n"
    done = subprocess.run(
        [sys.executable, "-I", "-c", script, str(path), *map(str, more)],
        cwd=path.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode == 0, done.stderr[-400:]


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def assert_runs_code(tmp_path: Path, path: Path, loader: str, marker: Path) -> None:
    real_load(path, loader)
    assert marker.exists(), f"{loader} did not run the call: the sample does not show the hole"


# -- 1. arguments of allowed globals --------------------------------------------------------
def from_type_v2_of_load_from_bytes(marker: Path) -> bytes:
    # _rebuild_from_type_v2(_load_from_bytes, Tensor, (<legacy stream that opens marker>,), None)
    inner = legacy(opens(marker))
    return (
        P2
        + call(
            glob("torch._tensor", "_rebuild_from_type_v2"),
            glob("torch.storage", "_load_from_bytes"),
            glob("torch", "Tensor"),
            tup(raw(inner)),
            NONE,
        )
        + STOP
    )


def bytearray_overwritten(marker: Path) -> bytes:
    # _load_from_bytes(b) where b is a BYTEARRAY8 of a harmless legacy stream,
    # overwritten by SETITEMS b[slice(None)] = <legacy stream that opens marker>
    harmless = legacy(NONE)
    evil = legacy(opens(marker))
    array = b"\x96" + struct.pack("<Q", len(harmless)) + harmless
    whole = call(glob("builtins", "slice"), NONE, NONE, NONE)
    return (
        P5
        + glob("torch.storage", "_load_from_bytes")
        + MARK
        + array
        + MARK
        + whole
        + raw(evil)
        + SETITEMS
        + TUPLE
        + REDUCE
        + STOP
    )


def setstate_planted(marker: Path) -> bytes:
    # OrderedDict(); BUILD (None, {"__setstate__": _load_from_bytes}) sets an
    # instance attribute; a second BUILD then calls it with the state.
    plant = tup(NONE, dict_of(__setstate__=glob("torch.storage", "_load_from_bytes")))
    return P2 + call(glob("collections", "OrderedDict")) + plant + BUILD + raw(legacy(opens(marker))) + BUILD + STOP


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            from_type_v2_of_load_from_bytes,
            "loading it calls torch._tensor._rebuild_from_type_v2 (its function argument is not one of torch's",
        ),
        (bytearray_overwritten, "refused: SETITEMS on a value that is not a dict"),
        (setstate_planted, "refused: BUILD with a state whose keys are not plain attribute names"),
    ],
    ids=["from-type-v2-of-load-from-bytes", "bytearray-overwritten", "setstate-planted"],
)
def test_computed_arguments_are_refused(tmp_path, make, message):
    verdict = read_pickle_bytes(make(tmp_path / "marker"))
    assert not verdict.weights_only
    assert not verdict.data_only
    assert verdict.message().startswith(message), verdict.message()


@pytest.mark.slow
def test_computed_arguments_run_code_under_pickle_load(tmp_path):
    pytest.importorskip("torch")
    makers = [from_type_v2_of_load_from_bytes, bytearray_overwritten, setstate_planted]
    markers = [tmp_path / f"marker-{make.__name__}" for make in makers]
    paths = [write(tmp_path, f"{make.__name__}.pkl", make(m)) for make, m in zip(makers, markers, strict=True)]
    real_load(paths[0], "pickle.load", *paths[1:])
    assert [m.exists() for m in markers] == [True, True, True], "pickle.load did not run every call"


def test_build_on_a_global_is_refused():
    data = P2 + glob("collections", "OrderedDict") + tup(NONE, dict_of(x=NONE)) + BUILD + STOP
    (g,) = read_pickle_bytes(data).unsafe
    assert (g.qualname, g.called, g.reason) == (
        "collections.OrderedDict",
        True,
        "BUILD on the global itself: sets a class's attributes",
    )


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (
            call(glob("_codecs", "encode"), text("x"), text("rot13")),
            "its arguments are not (text, 'latin1'): a codec of the stream's choosing",
        ),
        (
            call(
                glob("torch._utils", "_rebuild_parameter"),
                NONE,
                b"\x88",
                call(glob("collections", "OrderedDict")) + MARK + text("h") + glob("torch", "Tensor") + SETITEMS,
            ),
            "its backward hooks are not empty: callables of the stream's choosing set on the tensor",
        ),
        (
            call(glob("torch._utils", "_rebuild_wrapper_subclass"), glob("collections", "OrderedDict")),
            "its class is not torch.Tensor or torch.nn.Parameter",
        ),
        (
            call(glob("numpy.core.multiarray", "_reconstruct"), glob("collections", "Counter"), tup(), text("b")),
            "its array type is not numpy.ndarray or numpy.matrix",
        ),
        (call(glob("numpy", "dtype"), text("object_")), "a dtype code this reader does not know"),
    ],
    ids=["codec", "hooks", "wrapper-class", "reconstruct-subtype", "dtype-name"],
)
def test_argument_surface_of_allowed_rows(data, reason):
    verdict = read_pickle_bytes(P2 + data + STOP)
    assert [g.reason for g in verdict.unsafe] == [reason]


# -- 2. where the reader and the loader lose step ------------------------------------------
def joblib_unicode(marker: Path, count: int = 8) -> bytes:
    # A NumpyArrayWrapper of dtype('U1') and shape (count,): joblib reads
    # 4 * count raw bytes.  A reader that sizes U1 as 1 byte resumes inside
    # them, where a BINBYTES hides the call that joblib resumes at.
    wrapper = glob("joblib.numpy_pickle", "NumpyArrayWrapper") + EMPTY_TUPLE + NEWOBJ
    state = dict_of(
        subclass=glob("numpy", "ndarray"),
        shape=tup(b"K" + bytes([count])),
        order=text("C"),
        dtype=call(glob("numpy", "dtype"), text("U1"), b"\x89", b"\x88"),
        allow_mmap=b"\x89",
    )
    hidden = opens(marker) + POP
    head = b"a" * count + b"B"  # at count: BINBYTES covering the rest of the array and the call
    pad = 4 * count - len(head) - 4
    cover = struct.pack("<I", pad + len(hidden)) + b"\0" * pad
    return P2 + wrapper + state + BUILD + head + cover + hidden + POP + NONE + STOP


def frame_overrun(marker: Path) -> bytes:
    # FRAME of 2 bytes holding "B\x07"; read whole, the BINBYTES length is
    # 263 (07 01 00 00) and the call is data.  pickle.load of a stream that
    # cannot peek (a BytesIO, as torch.load reads a zip member; an unbuffered
    # file) drops the frame's last byte, reads the length 1 (01 00 00 00)
    # after the frame, one byte of data, then runs the call.
    hidden = POP + opens(marker) + STOP
    payload = b"\x00" + b"P" + hidden
    payload += b"\x00" * (263 - len(payload))
    return P4 + b"\x95" + struct.pack("<Q", 2) + b"B\x07" + b"\x01\x00\x00" + payload + STOP


def test_joblib_unicode_array_is_sized_as_numpy_sizes_it(tmp_path):
    verdict = read_pickle_bytes(joblib_unicode(tmp_path / "marker"))
    assert verdict.kind == "joblib"
    assert verdict.message() == "loading it calls builtins.open"


def test_frame_overrun_is_refused(tmp_path):
    verdict = read_pickle_bytes(frame_overrun(tmp_path / "marker"))
    assert not verdict.weights_only
    assert verdict.problem == (
        "refused: an opcode and its argument run past the end of their FRAME: "
        "pickle.load on a file and pickle.loads read different bytes at byte 11"
    )


def test_frame_with_bytes_left_at_stop_is_refused():
    body = b"N."  # STOP with 3 bytes of the frame left: pickle.load resumes after them
    data = P4 + b"\x95" + struct.pack("<Q", len(body) + 3) + body + b"NNN" + P2 + b"N."
    assert read_pickle_bytes(data).problem == (
        "refused: STOP inside a FRAME with bytes left: the loader resumes after the frame at byte 12"
    )


@pytest.mark.slow
def test_lost_step_samples_run_code(tmp_path):
    pytest.importorskip("joblib")
    marker = tmp_path / "m1"
    assert_runs_code(tmp_path, write(tmp_path, "u1.joblib", joblib_unicode(marker)), "joblib.load", marker)
    marker = tmp_path / "m2"
    path = write(tmp_path, "frame.pkl", frame_overrun(marker))
    assert_runs_code(tmp_path, path, "pickle.load(BytesIO)", marker)
    marker.unlink()
    pickle.loads(frame_overrun(marker))  # our own bytes: read whole, the call is data
    assert not marker.exists()


@pytest.mark.parametrize(
    "dtype",
    [
        "U1",
        "U7",
        "<U3",
        "S5",
        "a4",
        "V12",
        "M8",
        "m8[ns]",
        "b1",
        "?",
        "i1",
        "<i2",
        ">i4",
        "u8",
        "f2",
        "f4",
        "d",
        "c8",
        "c16",
        "D",
        "e",
        "h",
        "q",
        "O",
        np.dtype([("a", "i4"), ("b", "O")]),
        np.dtype(("f8", (2, 2))),
        np.dtype([("a", "U2"), ("b", [("c", "f8")])]),
    ],
    ids=str,
)
def test_dtype_sizes_match_numpy(dtype):
    expected = np.dtype(dtype)
    stream = pickle.dumps(expected, protocol=2)
    # the dtype value as the reader builds it from numpy's own pickle of it
    from validator.pickles._ops import Reader

    value, _ = Reader().stream(stream, 0, len(stream))
    assert _dtypes.facts(value) == (expected.itemsize, expected.hasobject)


@pytest.mark.parametrize("code", ["l", "L", "g", "G", "p", "P", "int64", "object", "U", "S0", "i3", "f[ns]"])
def test_dtypes_that_cannot_be_sized_exactly(code):
    parsed = _dtypes.parse_code(code)
    assert parsed is None or parsed[1] == 0  # unknown, or a flexible code of no size


def test_joblib_dtype_that_cannot_be_sized_is_refused():
    data = joblib_unicode(__import__("pathlib").Path("m")).replace(text("U1"), text("l"))
    assert read_pickle_bytes(data).problem == (
        "refused: joblib array wrapper whose dtype cannot be sized exactly: "
        "numpy dtype code 'l' is not one this reader can size at byte 154"
    )


# -- 3. the data tier: false alarms that are gone -----------------------------------------
def _old_reconstruct() -> bytes:
    data = pickle.dumps(np.arange(3), protocol=2)
    return data.replace(b"cnumpy._core.multiarray\n_reconstruct\n", b"cnumpy.core._internal\n_reconstruct\n")


def _ndarray_wrapper(tmp_path: Path) -> bytes:
    np.save(tmp_path / "arr.npy", np.arange(4))
    wrapper = glob("joblib.numpy_pickle", "NDArrayWrapper") + EMPTY_TUPLE + NEWOBJ
    state = dict_of(filename=text("arr.npy"), subclass=glob("numpy", "ndarray"), allow_mmap=b"\x88")
    return P2 + wrapper + state + BUILD + STOP


def _npy_objects() -> bytes:
    out = io.BytesIO()
    np.save(out, np.array([1, "abc", {"a": 1}], dtype=object), allow_pickle=True)
    return out.getvalue()


def _sparse(kind: str) -> bytes:
    sparse = pytest.importorskip("scipy.sparse")
    return pickle.dumps(getattr(sparse, kind)(np.eye(3)), protocol=2)


def _joblib_arrays() -> bytes:
    # a structured dtype with an object field (joblib pickles its elements: dtype.hasobject),
    # a unicode array (4 bytes a character) and a datetime array, read from the file after each wrapper
    joblib = pytest.importorskip("joblib")
    out = io.BytesIO()
    arrays = {
        "r": np.zeros(2, dtype=[("x", "f4"), ("o", "O")]),
        "u": np.array(["ab", "c"]),
        "m": np.array(["2020-01-01"], dtype="M8[D]"),
    }
    joblib.dump(arrays, out)
    return out.getvalue()


DATA_SAMPLES = {
    "joblib-arrays": (lambda _: _joblib_arrays(), "a.joblib", "joblib.load", ("numpy object array",)),
    "object-array-npy": (lambda _: _npy_objects(), "a.npy", "numpy.load(allow_pickle=True)", ("numpy object array",)),
    "object-array-pickle": (
        lambda _: pickle.dumps(np.array([1, "abc", {"a": 1}], dtype=object), protocol=2),
        "a.pkl",
        "pickle.load",
        ("numpy object array",),
    ),
    "matrix": (lambda _: pickle.dumps(np.matrix([[1, 2]]), protocol=2), "m.pkl", "pickle.load", ("numpy.matrix",)),
    "protocol-5-array": (lambda _: pickle.dumps(np.arange(3), protocol=5), "p5.pkl", "pickle.load", ("numpy.ndarray",)),
    "pre-1.0-reconstruct": (lambda _: _old_reconstruct(), "old.pkl", "pickle.load", ("numpy.ndarray",)),
    "ndarray-wrapper": (_ndarray_wrapper, "old.joblib", "joblib.load", ("joblib.NDArrayWrapper",)),
    "csr": (lambda _: _sparse("csr_matrix"), "csr.pkl", "pickle.load", ("scipy.sparse.csr_matrix",)),
    "coo-array": (lambda _: _sparse("coo_array"), "coo.pkl", "pickle.load", ("scipy.sparse.coo_matrix",)),
    "dict": (
        lambda _: P2 + call(glob("builtins", "dict")) + MARK + text("a") + b"K\x01" + SETITEMS + STOP,
        "d.pkl",
        "pickle.load",
        ("dict",),
    ),
    "deque": (lambda _: pickle.dumps(collections.deque([1, 2], maxlen=5), protocol=2), "q.pkl", "pickle.load", ()),
}
# collections.deque: ("collections.deque",) -- filled below so the tuple reads once
DATA_SAMPLES["deque"] = (*DATA_SAMPLES["deque"][:3], ("collections.deque",))


@pytest.mark.parametrize("name", sorted(DATA_SAMPLES))
def test_data_tier_is_a_warning_not_an_error(tmp_path, name):
    make, filename, loader, rebuilds = DATA_SAMPLES[name]
    verdict = read_pickle_file(write(tmp_path, filename, make(tmp_path)))
    assert not verdict.unsafe, verdict.message()
    assert verdict.problem is None
    assert (verdict.weights_only, verdict.data_only, verdict.rebuilds) == (False, True, rebuilds)
    assert verdict.loaders == (loader,)
    assert verdict.message() == (
        f"loads with {loader}; rebuilds {', '.join(rebuilds)}: library constructors of data, none of the file's choosing"
    )


@pytest.mark.slow
def test_data_tier_samples_load_with_the_named_loader(tmp_path):
    by_loader: dict[str, list[Path]] = collections.defaultdict(list)
    for name in sorted(DATA_SAMPLES):
        make, filename, loader, _ = DATA_SAMPLES[name]
        folder = tmp_path / name
        folder.mkdir()
        by_loader[loader].append(write(folder, filename, make(folder)))
    for loader, paths in by_loader.items():
        ok, err = real_load(paths[0], loader, *paths[1:])
        assert ok, (loader, err)


@pytest.mark.parametrize("command", ["check", "scan"])
def test_a_data_only_pickle_in_a_folder_is_st710(tmp_path, capsys, command):
    import json

    from validator.cli.main import main

    write(tmp_path, "objects.pkl", pickle.dumps(np.array([1, "abc", {"a": 1}], dtype=object), protocol=2))
    argv = [command, "--no-config", "--format", "json", str(tmp_path)]
    assert main(argv if command == "check" else [*argv[:1], "-j", "1", *argv[1:]]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["findings_by_rule"] == {"ST710 pickle-data-only": 1}


def _pandas_frame() -> bytes:
    # pandas is not installed here: a DataFrame with one int64 column "a" and
    # a RangeIndex, as pandas 2.x pickles it (NDFrame state through
    # object.__reduce_ex__, BlockManager.__reduce__, SharedBlock.__reduce__ ->
    # _unpickle_block, Index.__reduce__ -> _new_Index), read from its source.
    values = pickle.dumps(np.arange(3).reshape(1, 3), protocol=2)[2:-1]
    columns = call(
        glob("pandas.core.indexes.base", "_new_Index"),
        glob("pandas.core.indexes.base", "Index"),
        dict_of(data=pickle.dumps(np.array(["a"], dtype=object), protocol=2)[2:-1], name=NONE),
    )
    index = call(
        glob("pandas.core.indexes.base", "_new_Index"),
        glob("pandas.core.indexes.range", "RangeIndex"),
        dict_of(name=NONE, start=b"K\x00", stop=b"K\x03", step=b"K\x01"),
    )
    block = call(
        glob("pandas._libs.internals", "_unpickle_block"),
        values,
        call(glob("builtins", "slice"), b"K\x00", b"K\x01", b"K\x01"),
        b"K\x02",
    )
    manager = call(
        glob("pandas.core.internals.managers", "BlockManager"), tup(block), b"]" + MARK + columns + index + b"e"
    )
    state = dict_of(
        _mgr=manager,
        _typ=text("dataframe"),
        _metadata=b"]",
        attrs=EMPTY_DICT,
        _flags=dict_of(allows_duplicate_labels=b"\x88"),
    )
    return P2 + glob("pandas.core.frame", "DataFrame") + EMPTY_TUPLE + NEWOBJ + state + BUILD + STOP


def test_pandas_frame_is_data_only():
    verdict = read_pickle_bytes(_pandas_frame())
    assert not verdict.unsafe, verdict.message()
    assert verdict.data_only
    assert verdict.rebuilds == ("pandas.DataFrame", "pandas.Index", "numpy object array", "pandas.RangeIndex")


def test_pandas_index_of_another_class_is_refused():
    data = P2 + call(glob("pandas.core.indexes.base", "_new_Index"), glob("builtins", "dict"), dict_of()) + STOP
    (g,) = read_pickle_bytes(data).unsafe
    assert g.reason == "its class is not pandas.Index or pandas.RangeIndex"


def test_ndarray_wrapper_of_another_file_is_refused(tmp_path):
    data = _ndarray_wrapper(tmp_path).replace(text("arr.npy"), text("../x.npy"))
    (g,) = read_pickle_bytes(data).unsafe
    assert g.qualname == "joblib.numpy_pickle.NDArrayWrapper"
    assert g.reason is not None
    assert g.reason.startswith("its file name is not a plain sibling .npy name")


# -- 4. what torch.load(weights_only=True) accepts --------------------------------------------
torch = pytest.importorskip("torch")


def _torch_save(path: Path, protocol: int, *, legacy: bool = False) -> Path:
    state = collections.OrderedDict(weight=torch.arange(4.0))
    torch.save(state, path, pickle_protocol=protocol, _use_new_zipfile_serialization=not legacy)
    return path


@pytest.mark.parametrize(("protocol", "legacy"), [(2, False), (2, True), (3, True), (4, False), (5, False), (4, True)])
def test_torch_promise_only_where_torch_accepts(tmp_path, protocol, legacy):
    verdict = read_pickle_file(_torch_save(tmp_path / "m.pt", protocol, legacy=legacy))
    assert verdict.weights_only
    if protocol < 4:
        assert verdict.torch_weights_only
        assert verdict.loaders == ("torch.load(weights_only=True)",)
        return
    assert not verdict.torch_weights_only
    assert verdict.loaders == ("torch.load(weights_only=False)",)
    assert "FRAME" in (verdict.torch_refusal or "")
    assert "but torch.load(weights_only=True) refuses it (its weights-only unpickler does not support" in (
        verdict.message()
    )


_TORCH_BOTH = """
import sys, torch
for path in sys.argv[1:]:
    torch.load(path, weights_only=False)
    try:
        torch.load(path, weights_only=True)
        print("accepts")
    except Exception:
        print("refuses")
"""


@pytest.mark.slow
def test_torch_promise_agrees_with_torch(tmp_path):
    cases = [(2, False), (2, True), (3, True), (4, False), (5, False), (4, True)]
    paths = [_torch_save(tmp_path / f"m{p}{legacy}.pt", p, legacy=legacy) for p, legacy in cases]
    done = subprocess.run(
        [sys.executable, "-I", "-c", _TORCH_BOTH, *map(str, paths)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    accepts = [line == "accepts" for line in done.stdout.split()]
    expected = [True, True, True, False, False, False]
    assert accepts == [read_pickle_file(path).torch_weights_only for path in paths] == expected


def test_torch_refusal_names_a_global_off_its_list(tmp_path):
    path = tmp_path / "np.pt"
    torch.save({"a": np.arange(3)}, path)
    verdict = read_pickle_file(path)
    assert verdict.weights_only
    assert not verdict.torch_weights_only
    assert verdict.torch_refusal == "numpy._core.multiarray._reconstruct is not on its allowlist"
    assert verdict.message().endswith(": loads with torch.load(weights_only=False)")
