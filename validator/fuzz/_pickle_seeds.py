# Strategy: the pickle campaign's seeds (validator/fuzz/pickle_mutator.py):
# clean state dicts as torch, numpy and joblib write them, hostile streams
# (each a harmless callable where a loader must refuse), and files written
# by the installed libraries themselves.  Nothing here unpickles.
from __future__ import annotations

import bz2
import gzip
import io
import lzma
import random
import struct
import zipfile
import zlib

from validator.fuzz._pickle_containers import COMPRESSORS, npy_bytes, tar_bytes, zip_bytes, zip_members
from validator.fuzz._pickle_ops import assemble, bytes_op, call_ops, global_ops, int_op, op, stream, text_op
from validator.fuzz._pickle_streams import nested

__all__ = ["seed_files"]


# -- seeds ---------------------------------------------------------------------------------
def _state_dict(protocol: int, tensor_global: tuple[str, str] = ("torch._utils", "_rebuild_tensor_v2")) -> bytes:
    """An OrderedDict of one float tensor by persistent id, as torch.save writes it."""
    storage = [
        op("MARK"),
        text_op("storage"),
        *global_ops("torch", "FloatStorage"),
        text_op("0"),
        text_op("cpu"),
        int_op(4),
        op("TUPLE"),
        op("BINPERSID"),
    ]
    body = [*call_ops("collections", "OrderedDict", []), op("MARK"), text_op("weight")]
    tensor_ops = call_ops(
        *tensor_global,
        [
            *storage,
            int_op(0),
            int_op(4),
            op("TUPLE1"),
            int_op(1),
            op("TUPLE1"),
            op("NEWFALSE"),
            *call_ops("collections", "OrderedDict", []),
        ],
    )
    body += [*tensor_ops, op("SETITEMS")]
    head = [op("PROTO", bytes([protocol]))]
    if protocol >= 4:
        head.append(op("FRAME", struct.pack("<Q", 0)))
    return assemble([*head, *body, op("STOP")], frames=protocol >= 4)


def _hostile_seeds() -> dict[str, bytes]:
    """Assembled files whose loading calls a harmless global off the allowlists (os.getcwd, builtins.len)."""
    cwd = [*call_ops("os", "getcwd", []), op("POP")]
    length = [*call_ops("builtins", "len", [text_op("x")]), op("POP")]
    state = _state_dict(2)
    fixed = random.Random(1)  # noqa: S311 - a fixed seed: the same file on every run
    return {
        "n_call_reduce_p2.pkl": stream([*cwd, op("NONE")]),
        "n_call_inst_p0.pkl": stream([*call_ops("os", "getcwd", [], "i"), op("POP"), op("NONE")], 0),
        "n_call_obj_p1.pkl": stream(
            [*call_ops("builtins", "len", [text_op("x", how="U")], "o"), op("POP"), op("NONE")], 1
        ),
        "n_call_newobj_p2.pkl": stream([*call_ops("builtins", "len", [text_op("x")], "\x81"), op("POP"), op("NONE")]),
        "n_call_stack_global_p4.pkl": stream(
            [*call_ops("builtins", "len", [text_op("x")], "\x93"), op("POP"), op("NONE")], 4
        ),
        "n_call_stack_global_memo_p5.pkl": assemble(
            [
                op("PROTO", b"\x05"),
                text_op("builtins", how="\x8c"),
                op("MEMOIZE"),
                op("POP"),
                op("BINGET", b"\x00"),
                text_op("len", how="\x8c"),
                op("STACK_GLOBAL"),
                text_op("x"),
                op("TUPLE1"),
                op("REDUCE"),
                op("STOP"),
            ]
        ),
        "n_call_build_setstate_p2.pkl": stream(
            [*global_ops("builtins", "len"), op("EMPTY_DICT"), op("BUILD"), op("POP"), op("NONE")]
        ),
        "n_leading_push_pop.pkl": b"N0" + stream([*length, op("NONE")], 0),
        "n_leading_push_pop.txt": b"N0" + stream([*length, op("NONE")], 0),
        "n_proto2_push_pop_then_call.bin": b"\x80\x02" + b"N0" * 4 + stream([*length, op("NONE")], 0),
        "n_protocol0_call_then_junk.pkl": stream([*call_ops("os", "getcwd", [], "i")], 0)[:-1] + b"0\xff\xff",
        "y_frame_ends_inside_binbytes_length.pkl": _frame_desync(),
        "n_state_dict_then_call_after_stop.pt": state + stream([*cwd, op("NONE")]),
        "n_load_from_bytes_nested.pkl": stream([*nested(fixed), op("NONE")]),
        "n_rebuild_from_type_v2_load_from_bytes.pkl": stream([*nested(fixed, stream([*cwd, op("NONE")])), op("NONE")]),
        "n_ext_code_1.pkl": stream([op("EXT1", b"\x01"), op("POP"), op("NONE")]),
        "n_zip_upper_data_pkl.pt": zip_bytes(
            [
                ("archive/DATA.PKL", stream([*cwd, op("NONE")]), 0),
                ("archive/other.pkl", state, 0),
                ("archive/version", b"3\n", 0),
            ]
        ),
        "n_zip_call.pt": zip_bytes(
            [("archive/data.pkl", stream([*cwd, op("NONE")]), 0), ("archive/version", b"3\n", 0)]
        ),
        "n_npy_descr_object_word.npy": npy_bytes("object", "(1,)", stream([*cwd, op("NONE")])),
        "n_npy_structured_object_field.npy": _npy_struct_object(stream([*cwd, op("NONE")])),
        "n_npz_member_without_npy.npz": zip_bytes([("a", npy_bytes("|O", "(1,)", stream([*cwd, op("NONE")])), 0)]),
        "n_npz_member_bzip2.npz": zip_bytes(
            [("a.npy", npy_bytes("|O", "(1,)", stream([*cwd, op("NONE")])), zipfile.ZIP_BZIP2)]
        ),
        "n_tar_no_ustar_storages.tar": tar_bytes(
            [("storages", stream([*cwd, op("EMPTY_LIST")])), ("tensors", stream([op("EMPTY_LIST")]))], ustar=False
        ),
        "n_gzip_call.pkl.gz": gzip.compress(stream([*cwd, op("NONE")]), mtime=0),
        "n_bz2_call.pkl.bz2": bz2.compress(stream([*cwd, op("NONE")])),
        "n_xz_call.pkl.xz": lzma.compress(stream([*cwd, op("NONE")])),
        "n_lzma_call.joblib": lzma.compress(stream([*cwd, op("NONE")]), format=lzma.FORMAT_ALONE),
        "n_joblib_zf_call.joblib": COMPRESSORS["joblib-zf"][0](stream([*cwd, op("NONE")])),
        "n_joblib_zlib_call.joblib": zlib.compress(stream([*cwd, op("NONE")])),
        "n_joblib_zf_call_named.bin": COMPRESSORS["joblib-zf"][0](stream([*cwd, op("NONE")])),
    }


def _frame_desync() -> bytes:
    """A FRAME of 2 bytes that ends inside a BINBYTES length.

    pickle.load on a file drops what is left of a frame when a read runs
    past it, so it reads a zero length from the 4 bytes after the frame,
    then the call.  Read as one stream, the length is 1 + the call's size:
    the call is data.
    """
    hidden = assemble([*call_ops("builtins", "len", [text_op("x")]), op("POP")])
    frame = b"B" + bytes([1 + len(hidden)])
    return b"\x80\x04" + op("FRAME", struct.pack("<Q", len(frame))).encode() + frame + bytes(4) + hidden + b"N."


def _npy_struct_object(body: bytes) -> bytes:
    text = b"{'descr': [('a', '|O')], 'fortran_order': False, 'shape': (1,), }"
    text += b" " * (63 - (10 + len(text)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + body


def _clean_seeds() -> dict[str, bytes]:
    """Assembled files that load without calling anything off the allowlists."""
    state2, state4 = _state_dict(2), _state_dict(4)
    return {
        "y_state_dict_p2.pkl": state2,
        "y_state_dict_p4_frame.pkl": state4,
        "y_builtins_p0.pkl": stream(
            [op("MARK"), int_op(1), text_op("a", how="V"), op("LIST"), op("NONE"), op("POP")], 0
        ),
        "y_set_frozenset_p4.pkl": stream(
            [op("EMPTY_SET"), op("MARK"), int_op(1), op("ADDITEMS"), op("POP"), op("MARK"), int_op(2), op("FROZENSET")],
            4,
        ),
        "y_bytearray8_p5.pkl": stream([bytes_op(b"abc", how="\x96")], 5),
        "y_memo_put_get.pkl": stream([text_op("a"), op("BINPUT", b"\x01"), op("BINGET", b"\x01"), op("TUPLE2")]),
        "y_zip_state_dict.pt": zip_bytes(
            [
                ("archive/data.pkl", state2, 0),
                ("archive/byteorder", b"little", 0),
                ("archive/data/0", bytes(16), 0),
                ("archive/version", b"3\n", 0),
            ]
        ),
        "y_zip_state_dict_p4.pt": zip_bytes(
            [("archive/data.pkl", state4, 0), ("archive/data/0", bytes(16), 0), ("archive/version", b"3\n", 0)]
        ),
        "y_npy_float.npy": npy_bytes("<f4", "(2,)", bytes(8)),
        "y_npz_float_deflate.npz": zip_bytes([("a.npy", npy_bytes("<f4", "(2,)", bytes(8)), zipfile.ZIP_DEFLATED)]),
        "y_gzip_builtins.pkl.gz": gzip.compress(stream([op("EMPTY_DICT")]), mtime=0),
    }


def _writer_seeds() -> dict[str, bytes]:
    """Files the real writers make (torch.save, pickle, numpy, joblib), for whichever are installed."""
    import pickle  # noqa: PLC0415 - pickle.dumps of plain values only

    out: dict[str, bytes] = {}
    value = {"a": [1, 2.5, "x", b"y", None, True], "s": {1, 2}, "f": frozenset({3}), "c": 1j, "b": bytearray(b"z")}
    for protocol in range(6):
        out[f"y_pickle_dumps_builtins_p{protocol}.pkl"] = pickle.dumps(value, protocol=protocol)
    try:
        import numpy as np  # noqa: PLC0415
    except ImportError:
        return out
    buf = io.BytesIO()
    np.save(buf, np.arange(4, dtype=np.float32))
    out["y_np_save_float.npy"] = buf.getvalue()
    buf = io.BytesIO()
    np.save(buf, np.array([1, "abc", {"a": 1}], dtype=object), allow_pickle=True)
    out["d_np_save_object_builtins.npy"] = buf.getvalue()
    buf = io.BytesIO()
    np.savez_compressed(buf, a=np.arange(3), b=np.ones(2, dtype=np.float16))
    out["y_np_savez_compressed.npz"] = _rezip_fixed(buf.getvalue())
    out["y_pickle_numpy_array_p2.pkl"] = pickle.dumps(np.arange(3, dtype=np.int32), protocol=2)
    out["y_pickle_numpy_array_p5.pkl"] = pickle.dumps(np.arange(3, dtype=np.int32), protocol=5)
    try:
        import joblib  # type: ignore[import-untyped]  # noqa: PLC0415 - no stubs published
    except ImportError:
        joblib = None
    if joblib is not None:
        for compress in (0, "zlib", "gzip", "bz2", "xz", "lzma"):
            buf = io.BytesIO()
            joblib.dump({"coef": np.arange(4, dtype=np.float64)}, buf, compress=(compress, 3) if compress else 0)
            out[f"y_joblib_dump_{compress or 'plain'}.joblib"] = buf.getvalue()
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return out
    state = {"w": torch.arange(4, dtype=torch.float32), "b": torch.zeros(2, dtype=torch.bfloat16)}
    for protocol in (2, 3, 4):
        buf = io.BytesIO()
        torch.save(state, buf, pickle_protocol=protocol)
        out[f"y_torch_save_zip_p{protocol}.pt"] = buf.getvalue()
        buf = io.BytesIO()
        torch.save(state, buf, pickle_protocol=protocol, _use_new_zipfile_serialization=False)
        out[f"y_torch_save_legacy_p{protocol}.bin"] = buf.getvalue()
    out["y_pickle_dumps_tensor_p2.pkl"] = pickle.dumps(torch.arange(3, dtype=torch.float32), protocol=2)
    return out


def _rezip_fixed(data: bytes) -> bytes:
    """The same members with fixed timestamps, so the file is the same on every run."""
    read = zip_members(data) or []
    return zip_bytes([(i.filename, body, i.compress_type) for i, body in read])


def seed_files() -> dict[str, bytes]:
    """The campaign's seeds by file name: ``n_`` a loader calls a global off the allowlists,
    ``y_`` none does, ``d_`` only data-tier constructors (numpy object arrays of builtins).

    Hostile and assembled files are the same bytes on every run; files from
    torch.save (a serialization id, storage keys), numpy and joblib depend on
    those libraries' versions.
    """
    return {**_clean_seeds(), **_hostile_seeds(), **_writer_seeds()}
