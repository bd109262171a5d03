# Strategy: write the pickle corpus and MANIFEST.json from the recipes below.
# Hostile files are assembled opcode by opcode (the helpers below are a tiny
# assembler: nothing is pickled from a live object that would run at load),
# so they are byte-identical on every run.  Benign files come from the real
# writers (torch.save, pickle.dumps, numpy, joblib); torch.save's zip holds a
# serialization id and its legacy form memory addresses, and numpy's npz a
# timestamp, so those are marked "deterministic": false and the test checks
# only their verdicts.
#
#   python corpus/pickles/generate.py              # rewrite corpus/pickles/* and MANIFEST.json
#   python corpus/pickles/generate.py --out DIR    # write somewhere else (tests compare)
#
# Names: {y,n}_pickle_<writer-or-defect>.<ext>; y = must be weights-only,
# n = must be an error naming "call" in its message.
from __future__ import annotations

import argparse
import collections
import io
import json
import os
import pickle
import struct
import tarfile
import zipfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = "MANIFEST.json"
EPOCH = (1980, 1, 1, 0, 0, 0)

# -- a tiny pickle assembler ---------------------------------------------------------
P2 = b"\x80\x02"
P4 = b"\x80\x04"
MARK, TUPLE, REDUCE, STOP, SETITEMS, EMPTY_TUPLE = b"(", b"t", b"R", b".", b"u", b")"


def glob(module: str, name: str) -> bytes:
    """GLOBAL module name."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def text(s: str) -> bytes:
    """BINUNICODE s."""
    data = s.encode()
    return b"X" + struct.pack("<I", len(data)) + data


def raw(data: bytes) -> bytes:
    """BINBYTES data."""
    return b"B" + struct.pack("<I", len(data)) + data


def call(module: str, name: str, *args: bytes) -> bytes:
    """REDUCE of GLOBAL module name on a tuple of already-assembled arguments."""
    return glob(module, name) + MARK + b"".join(args) + TUPLE + REDUCE


def evil(module: str, name: str, arg: str = "echo pwned") -> bytes:
    """A protocol-2 pickle that calls module.name(arg)."""
    return P2 + call(module, name, text(arg)) + STOP


def ordered_dict(*items: bytes) -> bytes:
    return glob("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE + MARK + b"".join(items) + SETITEMS


def tensor(key: str, numel: int, *, legacy: bool = False) -> bytes:
    """torch._utils._rebuild_tensor_v2 of a float32 storage by persistent id, as torch.save writes it.

    The legacy format's persistent id has a sixth item, the view metadata (None).
    """
    storage = MARK + text("storage") + glob("torch", "FloatStorage") + text(key) + text("cpu") + b"K" + bytes([numel])
    storage += (b"N" if legacy else b"") + TUPLE + b"Q"  # BINPERSID
    return call(
        "torch._utils",
        "_rebuild_tensor_v2",
        storage,
        b"K\x00",
        b"K" + bytes([numel]) + b"\x85",
        b"K\x01\x85",
        b"\x89",
        glob("collections", "OrderedDict") + EMPTY_TUPLE + REDUCE,
    )


STATE_DICT = P2 + ordered_dict(text("weight") + tensor("0", 4)) + STOP
LEGACY_STATE_DICT = P2 + ordered_dict(text("weight") + tensor("0", 4, legacy=True)) + STOP


def torch_zip(members: dict[str, bytes]) -> bytes:
    """A zip laid out as torch.save writes it (stored members), with fixed timestamps."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members.items():
            archive.writestr(zipfile.ZipInfo(name, EPOCH), data)
    return out.getvalue()


def torch_members(pkl: bytes = STATE_DICT) -> dict[str, bytes]:
    return {
        "archive/data.pkl": pkl,
        "archive/byteorder": b"little",
        "archive/data/0": struct.pack("<4f", 1, 2, 3, 4),
        "archive/version": b"3\n",
    }


MAGIC = P2 + b"\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + STOP
LEGACY_PROTOCOL = P2 + b"M\xe9\x03" + STOP  # BININT2 1001
SYS_INFO = P2 + b"}" + MARK + text("little_endian") + b"\x88" + SETITEMS + STOP
KEYS = P2 + b"]" + MARK + text("0") + b"e" + STOP


def legacy(*, second: bytes = LEGACY_PROTOCOL, obj: bytes = LEGACY_STATE_DICT) -> bytes:
    """torch.save's legacy stream: five pickles, then the storages' raw bytes."""
    return MAGIC + second + SYS_INFO + obj + KEYS + struct.pack("<q4f", 4, 1, 2, 3, 4)


def npy(descr: str, shape: str, data: bytes) -> bytes:
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}".encode()
    header += b" " * (63 - (10 + len(header)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + data


def tar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def with_bad_crc() -> bytes:
    data = bytearray(torch_zip(torch_members()))
    at = data.index(b"weight")
    data[at] = ord("W")  # the CRC in both headers still says "weight"
    return bytes(data)


def with_local_mismatch() -> bytes:
    data = bytearray(torch_zip(torch_members()))
    at = data.index(b"archive/data.pkl")  # the local header's copy of the name comes first
    data[at : at + 7] = b"archivX"
    return bytes(data)


# -- benign files from the real writers --------------------------------------------------
def _torch_state() -> collections.OrderedDict[str, object]:
    import torch

    torch.manual_seed(0)
    return collections.OrderedDict(weight=torch.randn(4, 3), bias=torch.zeros(4, dtype=torch.bfloat16))


def by_torch_zip() -> bytes:
    import torch

    out = io.BytesIO()
    torch.save(_torch_state(), out)
    return out.getvalue()


def by_torch_legacy() -> bytes:
    import torch

    out = io.BytesIO()
    torch.save(_torch_state(), out, _use_new_zipfile_serialization=False)
    return out.getvalue()


def by_pickle(protocol: int) -> Callable[[], bytes]:
    def make() -> bytes:
        return pickle.dumps(_torch_state(), protocol=protocol)

    return make


def by_numpy_npy() -> bytes:
    import numpy as np

    out = io.BytesIO()
    np.save(out, np.arange(12, dtype=np.float32).reshape(3, 4))
    return out.getvalue()


def by_numpy_npz() -> bytes:
    import numpy as np

    out = io.BytesIO()
    np.savez(out, a=np.arange(6, dtype=np.int16), b=np.ones((2, 2)))
    return out.getvalue()


def by_numpy_pickle() -> bytes:
    import numpy as np

    return pickle.dumps({"a": np.arange(3, dtype=np.float64), "s": np.float32(1.5)}, protocol=4)


def by_joblib(compress: object = 0) -> Callable[[], bytes]:
    def make() -> bytes:
        import joblib
        import numpy as np

        out = io.BytesIO()
        joblib.dump({"coef": np.arange(8, dtype=np.float64), "names": ["a", "b"]}, out, compress=compress)
        return out.getvalue()

    return make


def joblib_with(extra: bytes) -> bytes:
    """A joblib.dump stream whose dict gains the key "x" with an assembled value (before its final STOP)."""
    data = by_joblib()()
    assert data.endswith(b"u."), data[-4:]  # the dict's SETITEMS, then STOP
    return data[:-2] + text("x") + extra + b"s" + data[-2:]  # SETITEM before SETITEMS closes


def versions() -> dict[str, str]:
    import joblib
    import numpy as np
    import torch

    return {"torch": torch.__version__, "numpy": np.__version__, "joblib": joblib.__version__}


# name -> (make, expected "weights-only" or "error", named call or phrase, provenance, deterministic)
Recipe = tuple[Callable[[], bytes], str, "str | None", str, bool]


def recipes(v: dict[str, str]) -> dict[str, Recipe]:
    torch_v, np_v, jl_v = f"torch {v['torch']}", f"numpy {v['numpy']}", f"joblib {v['joblib']}"
    hand = "assembled by corpus/pickles/generate.py"
    y: dict[str, Recipe] = {
        "y_pickle_torch_zip.pt": (by_torch_zip, "weights-only", None, f"torch.save ({torch_v})", False),
        "y_pickle_torch_legacy.bin": (
            by_torch_legacy,
            "weights-only",
            None,
            f"torch.save _use_new_zipfile_serialization=False ({torch_v})",
            False,
        ),
        "y_pickle_torch_zip_assembled.pt": (lambda: torch_zip(torch_members()), "weights-only", None, hand, True),
        "y_pickle_torch_legacy_assembled.bin": (legacy, "weights-only", None, hand, True),
        "y_pickle_torch_tar_empty.tar": (
            lambda: tar(
                {
                    "sys_info": SYS_INFO,
                    "pickle": P2 + ordered_dict() + STOP,
                    "storages": P2 + b"K\x00." + P2 + b"].",
                    "tensors": P2 + b"K\x00.",
                }
            ),
            "weights-only",
            None,
            f"{hand}: the legacy tar form (torch < 0.4) with no storages",
            True,
        ),
        "y_pickle_numpy.npy": (by_numpy_npy, "weights-only", None, f"numpy.save ({np_v})", True),
        "y_pickle_numpy.npz": (by_numpy_npz, "weights-only", None, f"numpy.savez ({np_v})", False),
        "y_pickle_numpy_arrays_protocol_4.pkl": (by_numpy_pickle, "weights-only", None, f"pickle.dumps ({np_v})", True),
        "y_pickle_joblib.joblib": (by_joblib(), "weights-only", None, f"joblib.dump ({jl_v}, {np_v})", True),
        "y_pickle_joblib_zlib.joblib": (by_joblib(3), "weights-only", None, f"joblib.dump compress=3 ({jl_v})", True),
        "y_pickle_joblib_xz.joblib": (
            by_joblib(("xz", 3)),
            "weights-only",
            None,
            f"joblib.dump compress=('xz', 3) ({jl_v})",
            True,
        ),
    }
    for p in range(6):
        y[f"y_pickle_pickle_dumps_protocol_{p}.pkl"] = (
            by_pickle(p),
            "weights-only",
            None,
            f"pickle.dumps protocol={p} of an OrderedDict of tensors ({torch_v})",
            False,
        )
    memo_global = P4 + b"\x8c\x02os\x94\x8c\x06system\x94" + b"00" + b"h\x00h\x01\x93" + text("echo pwned") + b"\x85R."
    computed = P4 + ordered_dict() + b"\x8c\x06system\x93" + text("echo") + b"\x85R."
    n: dict[str, Recipe] = {
        "n_pickle_os_system.pkl": (lambda: evil("os", "system"), "error", "calls os.system", hand, True),
        "n_pickle_pip_main.pkl": (lambda: evil("pip", "main", "install"), "error", "calls pip.main", hand, True),
        "n_pickle_runpy_run_code.pkl": (
            lambda: evil("runpy", "_run_code", "import os"),
            "error",
            "calls runpy._run_code",
            hand,
            True,
        ),
        "n_pickle_pydoc_locate.pkl": (
            lambda: evil("pydoc", "locate", "os.system"),
            "error",
            "calls pydoc.locate",
            hand,
            True,
        ),
        "n_pickle_operator_attrgetter.pkl": (
            lambda: evil("operator", "attrgetter", "system"),
            "error",
            "calls operator.attrgetter",
            hand,
            True,
        ),
        "n_pickle_torch_hub_load.pkl": (
            lambda: evil("torch.hub", "load", "attacker/repo"),
            "error",
            "calls torch.hub.load",
            hand,
            True,
        ),
        "n_pickle_builtins_getattr.pkl": (
            lambda: P2 + call("builtins", "getattr", glob("os", "path"), text("join")) + STOP,
            "error",
            "calls builtins.getattr",
            hand,
            True,
        ),
        "n_pickle_importlib_import_module.pkl": (
            lambda: evil("importlib", "import_module", "antigravity"),
            "error",
            "calls importlib.import_module",
            hand,
            True,
        ),
        "n_pickle_builtins_eval_imported.pkl": (
            lambda: P2 + b"}" + text("f") + glob("builtins", "eval") + b"s.",
            "error",
            "imports builtins.eval",
            hand,
            True,
        ),
        "n_pickle_python2_builtin_eval.pkl": (
            lambda: b"c__builtin__\neval\n(S'1'\ntR.",
            "error",
            "calls builtins.eval",
            f"{hand}: protocol 0, Python 2 module name",
            True,
        ),
        "n_pickle_stack_global_memo.pkl": (lambda: memo_global, "error", "calls os.system", hand, True),
        "n_pickle_stack_global_computed.pkl": (
            lambda: computed,
            "error",
            "cannot resolve the imported name",
            hand,
            True,
        ),
        "n_pickle_ext_registry.pkl": (
            lambda: P2 + b"\x82\x01" + text("x") + b"\x85R.",
            "error",
            "extension registry",
            hand,
            True,
        ),
        "n_pickle_nested_pickle_loads.pkl": (
            lambda: P2 + call("pickle", "loads", raw(evil("os", "system"))) + STOP,
            "error",
            "calls pickle.loads",
            hand,
            True,
        ),
        "n_pickle_nested__pickle_loads.pkl": (
            lambda: P2 + call("_pickle", "loads", raw(evil("os", "system"))) + STOP,
            "error",
            "calls _pickle.loads",
            hand,
            True,
        ),
        "n_pickle_load_from_bytes_evil.pkl": (
            lambda: P2 + call("torch.storage", "_load_from_bytes", raw(legacy(obj=evil("os", "system")))) + STOP,
            "error",
            "calls os.system",
            f"{hand}: pickle.dumps's tensor form, its nested torch.save stream calling os.system",
            True,
        ),
        "n_pickle_numpy_object_dtype.pkl": (
            lambda: evil("numpy", "dtype", "O8"),
            "error",
            "an object dtype",
            hand,
            True,
        ),
        "n_pickle_truncated.pkl": (lambda: STATE_DICT[:-9], "error", "truncated", hand, True),
        "n_pickle_unknown_opcode.pkl": (lambda: P2 + b"\xff" + STOP, "error", "unknown opcode 0xff", hand, True),
        "n_pickle_trailing_garbage.pkl": (lambda: STATE_DICT + b"\x00garbage", "error", "trailing bytes", hand, True),
        "n_pickle_trailing_second_pickle.pkl": (
            lambda: STATE_DICT + evil("os", "system"),
            "error",
            "calls os.system",
            hand,
            True,
        ),
        "n_pickle_unusual_extension.png": (lambda: evil("os", "system"), "error", "calls os.system", hand, True),
        "n_pickle_zip_bad_crc.pt": (with_bad_crc, "error", "CRC32", hand, True),
        "n_pickle_zip_local_header_mismatch.pt": (
            with_local_mismatch,
            "error",
            "does not match the central",
            hand,
            True,
        ),
        "n_pickle_zip_odd_member_name.pt": (
            lambda: torch_zip({**torch_members(), "foo/evil.pkl": evil("os", "system")}),
            "error",
            "calls os.system",
            hand,
            True,
        ),
        "n_pickle_zip_pickle_elsewhere.pt": (
            lambda: torch_zip({"x/data.pkl": evil("os", "system"), "x/version": b"3\n"}),
            "error",
            "calls os.system",
            hand,
            True,
        ),
        "n_pickle_legacy_second_pickle.bin": (
            lambda: legacy(second=evil("os", "system")),
            "error",
            "calls os.system",
            hand,
            True,
        ),
        "n_pickle_legacy_object_pickle.bin": (
            lambda: legacy(obj=evil("subprocess", "getoutput", "id")),
            "error",
            "calls subprocess.getoutput",
            hand,
            True,
        ),
        "n_pickle_tar_storages.tar": (
            lambda: tar(
                {"sys_info": SYS_INFO, "pickle": STATE_DICT, "storages": P2 + b"K\x01.", "tensors": P2 + b"K\x00."}
            ),
            "error",
            "interleaves pickles with raw bytes",
            hand,
            True,
        ),
        "n_pickle_npy_object_evil.npy": (
            lambda: npy("|O", "(1,)", evil("os", "system")),
            "error",
            "calls os.system",
            f"{hand}: an .npy header with descr '|O' over a pickle",
            True,
        ),
        "n_pickle_joblib_builtins_exec.joblib": (
            lambda: joblib_with(call("builtins", "exec", text("print(1)"))),
            "error",
            "calls builtins.exec",
            f"joblib.dump ({jl_v}), then a builtins.exec call assembled into its dict",
            True,
        ),
        "n_pickle_joblib_lz4.joblib": (
            lambda: b"\x04\x22\x4d\x18" + bytes(16),
            "error",
            "lz4",
            f"{hand}: lz4 frame magic (joblib compress='lz4')",
            True,
        ),
    }
    return {**y, **n}


def build(out: Path) -> dict[str, dict[str, object]]:
    out.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, dict[str, object]] = {}
    for name, (make, expected, named, provenance, deterministic) in sorted(recipes(versions()).items()):
        (out / name).write_bytes(make())
        manifest[name] = {
            "provenance": provenance,
            "expected": expected,
            "call": named,
            "deterministic": deterministic,
        }
    (out / MANIFEST).write_text(json.dumps({"files": manifest}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=HERE)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONHASHSEED", "0")
    build(args.out)


if __name__ == "__main__":
    main()
