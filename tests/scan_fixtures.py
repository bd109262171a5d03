# Strategy: byte-exact files for the scan tests, built with _stbytes's
# tensors_file (prefix, space-padded JSON header, data) so a test controls
# every byte, including dtypes numpy cannot write and data the reference
# would never produce.
from __future__ import annotations

import hashlib
import io
import os
import pickle
import struct
import zipfile
from pathlib import Path

from _stbytes import tensors_file as build  # the scan tests' name for the one builder

Tensor = tuple[str, str, list[int], bytes]


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def f32(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def nan_inf_file() -> bytes:
    """F32 with 2 NaN and 1 Inf; F16 with 1 -Inf; BF16 with 1 NaN; a clean F32."""
    nan = float("nan")
    inf = float("inf")
    return build(
        [
            ("f32", "F32", [6], f32(1.0, nan, inf, -2.0, nan, 0.5)),
            ("f16", "F16", [4], struct.pack("<4e", 1.0, -inf, 2.0, 3.0)),
            ("bf16", "BF16", [2], bytes.fromhex("803f c07f".replace(" ", ""))),  # 1.0, NaN
            ("clean", "F32", [2], f32(1.0, 2.0)),
        ],
    )


def all_zero_file() -> bytes:
    """Two whole weight matrices of zeros (tensor-all-zero reports matrices of 64 x 64 or more)."""
    return build([("a", "F32", [64, 64], bytes(16384)), ("b", "U8", [64, 64], bytes(4096))])


def pickle_payload() -> bytes:
    class Evil:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (os.system, ("echo pwned",))

    return pickle.dumps(Evil(), protocol=2)


def pickle_in_u8_file() -> bytes:
    payload = pickle_payload()
    return build([("weight", "F32", [2], f32(1.0, 2.0)), ("blob", "U8", [len(payload)], payload)])


def zip_payload() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("run.py", "import os; os.system('echo pwned')\n")
    return buf.getvalue()


def zip_last_tensor_file() -> bytes:
    archive = zip_payload()
    return build([("weight", "F32", [2], f32(1.0, 2.0)), ("extra", "U8", [len(archive)], archive)])


def f64_file() -> bytes:
    return build([("w", "F32", [2], f32(1.0, 2.0)), ("d", "F64", [1], struct.pack("<d", 1.5))], {"format": "pt"})


def clean_file() -> bytes:
    return build([("w", "F32", [2, 2], f32(1.0, 2.0, 3.0, 4.0))], {"format": "pt"})


def fake_hf_cache(root: Path, *, corrupt: bool = True) -> dict[str, bytes]:
    """A hub cache with one model, two snapshots sharing a blob, and a
    corrupted LFS blob (its bytes no longer match its sha256 name)."""
    repo = root / "models--acme--tiny"
    good = clean_file()
    other = build([("x", "F32", [1], f32(7.0))], {"format": "pt"})
    config = b'{"model_type": "tiny"}\n'
    files = {"good": good, "other": other, "config": config}
    blobs = repo / "blobs"
    blobs.mkdir(parents=True)
    good_name = sha256(good)
    other_name = sha256(other)
    config_name = hashlib.sha1(b"blob %d\0" % len(config) + config, usedforsecurity=False).hexdigest()
    (blobs / good_name).write_bytes(good)
    (blobs / config_name).write_bytes(config)
    # Corruption: one byte of the data region flipped after download.
    (blobs / other_name).write_bytes(other[:-1] + bytes([other[-1] ^ 0xFF]) if corrupt else other)
    for rev, names in (
        ("a" * 40, ["model.safetensors", "config.json"]),
        ("b" * 40, ["model.safetensors", "sub/other.safetensors"]),
    ):
        snap = repo / "snapshots" / rev
        for name in names:
            target = {"model.safetensors": good_name, "config.json": config_name, "sub/other.safetensors": other_name}[
                name
            ]
            link = snap / name
            link.parent.mkdir(parents=True, exist_ok=True)
            depth = name.count("/")
            link.symlink_to(Path(*([".."] * (depth + 2))) / "blobs" / target)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("b" * 40)
    return files
