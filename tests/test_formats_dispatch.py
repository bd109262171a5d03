"""The loaders' dispatch (validator.formats): every byte a loader would
unpickle is read, from the byte that loader starts at (issue 35).

Every sample is built here: pickles by a tiny opcode assembler (nothing is
pickled from a live object), archives by zipfile/tarfile around those bytes,
with headers patched by hand where a case needs it; torch.save and np.save
only for benign files.  Each hostile case is judged statically in this
process (never loaded); the slow tests confirm, in a throwaway subprocess
whose only possible effect is a marker file in a temporary folder, that the
real loader does run the call.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import struct
import subprocess
import sys
import tarfile
import textwrap
import warnings
import zipfile
import zlib
from pathlib import Path

import pytest

from validator.cli.main import main
from validator.pickles import read_pickle_bytes
from validator.sources.kinds import classify


# -- a tiny pickle assembler --------------------------------------------------------------
def glob(module: str, name: str) -> bytes:
    """GLOBAL module name (protocol 0, readable by every protocol)."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def text(s: str) -> bytes:
    """UNICODE s (protocol 0)."""
    return b"V" + s.encode("raw_unicode_escape") + b"\n"


def call(module: str, name: str, *args: bytes) -> bytes:
    """module.name(*args): GLOBAL, MARK, the args, TUPLE, REDUCE."""
    return glob(module, name) + b"(" + b"".join(args) + b"tR"


def touch(marker: Path) -> bytes:
    """builtins.open(marker, "w"): the only effect a loader's run may have."""
    return call("builtins", "open", text(str(marker)), text("w"))


def system(cmd: str = "echo pwned") -> bytes:
    return call("posix", "system", text(cmd))


STOP = b"."
P2 = b"\x80\x02"
HARMLESS = P2 + b"}q\x00."  # an empty dict


def npy(descr: str, payload: bytes, *, shape: str = "(1,)") -> bytes:
    """An .npy (format 1.0) whose data is ``payload``."""
    header = f"{{'descr': {descr}, 'fortran_order': False, 'shape': {shape}, }}".encode()
    header = header.ljust(118 - 10) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header + payload


def zip_of(members: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, method)
    return buf.getvalue()


def torch_zip(pkl: bytes, *, first: dict[str, bytes] | None = None, pkl_name: str = "archive/data.pkl") -> bytes:
    return zip_of({**(first or {}), pkl_name: pkl, "archive/version": b"3\n"})


def set_flags(data: bytes, bits: int) -> bytes:
    """The zip with ``bits`` set in every local header and directory entry."""
    out = bytearray(data)
    for sig, at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        pos = out.find(sig)
        while pos >= 0:
            (flags,) = struct.unpack_from("<H", out, pos + at)
            struct.pack_into("<H", out, pos + at, flags | bits)
            pos = out.find(sig, pos + 4)
    return bytes(out)


def v7_tar(members: dict[str, bytes]) -> bytes:
    """A tar whose headers carry no "ustar" magic (pre-POSIX), checksums recomputed."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    out = bytearray(buf.getvalue())
    at = 0
    while at + 512 <= len(out) and any(out[at : at + 512]):
        block = out[at : at + 512]
        block[257:265] = bytes(8)  # no magic, no version
        block[148:156] = b" " * 8
        block[148:156] = b"%06o\x00 " % sum(block)
        out[at : at + 512] = block
        (size,) = (int(bytes(block[124:136]).rstrip(b"\x00 ") or b"0", 8),)
        at += 512 + (size + 511) // 512 * 512
    return bytes(out)


def _judged(tmp_path: Path, name: str, data: bytes) -> tuple[str, list[str], str]:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    other = classify(str(path), frozenset({path.name}))
    return other.kind, [f.code for f in other.findings], " ".join(f.message for f in other.findings)


# -- the samples: (id, file name, bytes, loader that runs the call) --------------------------
def samples(marker: Path) -> list[tuple[str, str, bytes, str]]:
    evil = touch(marker)
    n0 = P2 + b"N0" * 4 + evil + STOP
    return [
        ("n0_prefix_pkl", "evil.pkl", b"N0" + evil + STOP, "pickle"),
        ("n0_prefix_pt", "model.pt", b"N0" + evil + STOP, "pickle"),
        ("proto2_n0x4_bin", "pytorch_model.bin", n0, "torch"),
        ("proto0_then_junk", "notes.txt", evil + b"\xff\xfe junk", "pickle"),
        ("npy_descr_object", "x.npy", npy("'object'", P2 + evil + STOP), "numpy"),
        ("npy_structured_O", "x.npy", npy("[('a', '<i4'), ('b', '|O')]", P2 + evil + STOP), "numpy"),
        ("npz_member_without_npy", "x.npz", zip_of({"x": npy("'|O'", P2 + evil + STOP)}), "numpy:x"),
        (
            "npz_beside_pkl",
            "x.npz",
            zip_of({"a.pkl": HARMLESS, "b.npy": npy("'|O'", P2 + evil + STOP)}),
            "numpy:b",
        ),
        ("npz_bzip2", "x.npz", zip_of({"x.npy": npy("'|O'", P2 + evil + STOP)}, zipfile.ZIP_BZIP2), "numpy:x"),
        ("npz_lzma", "x.npz", zip_of({"x.npy": npy("'|O'", P2 + evil + STOP)}, zipfile.ZIP_LZMA), "numpy:x"),
        (
            "npz_eocd_counts_spell_sig",
            "x.npz",
            _counts_spell_sig(zip_of({"x.npy": npy("'|O'", P2 + evil + STOP)})),
            "numpy:x",
        ),
        (
            "torch_zip_big_first_member",
            "weights.bin",
            torch_zip(P2 + evil + STOP, first={"archive/data/0": bytes(8192)}),
            "torch",
        ),
        (
            "torch_zip_upper_case_pkl",
            "model.pt",
            zip_of({"archive/other.pkl": HARMLESS, "archive/DATA.PKL": P2 + evil + STOP, "archive/version": b"3\n"}),
            "torch",
        ),
        (
            "tar_without_ustar_reading_as_a_pickle",
            "model.pt",
            v7_tar({"N.": b"", "storages": b"K\x00.]q\x00.", "tensors": b"K\x00.", "pickle": P2 + evil + STOP}),
            "torch",
        ),
        ("gzip", "model.pkl.gz", gzip.compress(P2 + evil + STOP), "joblib"),
        ("bz2", "model.pkl.bz2", bz2.compress(P2 + evil + STOP), "joblib"),
        ("xz", "model.pkl.xz", lzma.compress(P2 + evil + STOP), "joblib"),
        ("lzma_alone", "model.pkl.lzma", lzma.compress(P2 + evil + STOP, format=lzma.FORMAT_ALONE), "joblib"),
        ("joblib_zlib", "model.joblib", zlib.compress(P2 + evil + STOP), "joblib"),
        ("joblib_bz2_two_streams", "blob", bz2.compress(P2 + b"N0") + bz2.compress(evil + STOP), "joblib"),
        ("joblib_zf", "model.joblib", _zf(P2 + evil + STOP), "joblib"),
    ]


def _counts_spell_sig(data: bytes) -> bytes:
    # The end record's "entries on this disk" and "entries" read "PK" and "\x05\x06".
    end = data.rindex(b"PK\x05\x06")
    return data[: end + 8] + b"PK\x05\x06" + data[end + 12 :]


def _zf(pickled: bytes) -> bytes:
    return b"ZF" + f"{len(pickled):#x}".ljust(19).encode() + zlib.compress(pickled)


CASES = samples(Path("/nonexistent/marker"))


@pytest.mark.parametrize(("name", "data"), [pytest.param(n, d, id=i) for i, n, d, _ in CASES])
def test_a_call_any_loader_runs_is_an_error_naming_it(tmp_path: Path, name: str, data: bytes) -> None:
    kind, codes, message = _judged(tmp_path, name, data)
    assert kind == "pickle"
    assert "ST701" in codes
    assert "builtins.open" in message


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("x.gz", gzip.compress(P2 + system() + STOP)),
        ("x.bz2", bz2.compress(P2 + system() + STOP)),
        ("x.xz", lzma.compress(P2 + system() + STOP)),
        ("x.lzma", lzma.compress(P2 + system() + STOP, format=lzma.FORMAT_ALONE)),
        ("x.z", zlib.compress(P2 + system() + STOP)),
        ("x.dat", _zf(P2 + system() + STOP)),
    ],
    ids=["gz", "bz2", "xz", "lzma", "z", "zf"],
)
def test_a_compressed_pickle_beside_a_checkpoint_fails_the_scan(tmp_path: Path, name: str, data: bytes) -> None:
    torch = pytest.importorskip("torch")
    folder = tmp_path / "m"
    folder.mkdir()
    torch.save({"w": torch.zeros(2)}, folder / "model.pt")
    (folder / name).write_bytes(data)
    assert main(["scan", "--no-config", "-j", "1", "--progress", "never", str(folder)]) == 1


def test_a_torch_zip_pickle_that_cannot_be_checked_is_an_error_under_any_name(tmp_path: Path) -> None:
    data = bytearray(torch_zip(HARMLESS))
    data[data.index(b"}q")] = ord("]")  # the CRC no longer matches
    kind, codes, message = _judged(tmp_path, "weights.bin", bytes(data))
    assert (kind, codes) == ("pickle", ["ST701"])
    assert "CRC32 of 'archive/data.pkl'" in message


# -- what must stay quiet -----------------------------------------------------------------
def test_torch_save_legacy_protocol_3_reads_clean() -> None:
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"w": torch.zeros(3)}, buf, pickle_protocol=3, _use_new_zipfile_serialization=False)
    verdict = read_pickle_bytes(buf.getvalue())
    assert verdict.problem is None
    assert verdict.kind == "torch-legacy"
    assert verdict.weights_only


def test_a_newline_after_an_npy_pickle_is_ignored_as_numpy_ignores_it() -> None:
    verdict = read_pickle_bytes(npy("'|O'", P2 + b"]q\x00(K\x01K\x02e." + b"\n"))
    assert verdict.problem is None
    assert verdict.kind == "npy"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("README", b"Copyright 2024 the authors.\nLicensed under the Apache License.\n"),
        ("LICENSE", b"MIT License\n\nPermission is hereby granted, free of charge, to any person\n"),
        ("config.json", b'{"model_type": "bert"}'),
        ("modeling.py", b"x = 1\nimport os\n"),  # starts like zlib's magic: no zlib stream
        ("weights.bin", bytes(range(256)) * 16),  # raw weights (OpenVINO, GGML): .bin is judged by content
    ],
    ids=["readme", "license", "json", "python", "raw-bin"],
)
def test_files_no_loader_unpickles_are_not_pickles(tmp_path: Path, name: str, data: bytes) -> None:
    kind, codes, _ = _judged(tmp_path, name, data)
    assert kind != "pickle"
    assert "ST701" not in codes


# -- archives that cannot be read, and names that climb out -----------------------------------
@pytest.mark.parametrize(
    ("name", "data", "words"),
    [
        ("weights.zip", set_flags(zip_of({"evil.pkl": P2 + system() + STOP}), 0x01), "encrypted"),
        ("weights.zip", set_flags(zip_of({"evil.pkl": P2 + system() + STOP}), 0x20), "0x20"),
        ("weights.zip", set_flags(zip_of({"evil.pkl": P2 + system() + STOP}), 0x40), "0x40"),
        ("weights.dat", zip_of({"evil.bin": P2 + system() + STOP}), "no model loader reads"),
        ("weights.7z", b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(24), "7-Zip"),
    ],
    ids=["encrypted", "flag-0x20", "flag-0x40", "zip-named-dat", "7z"],
)
def test_an_archive_stcheck_cannot_read_is_a_warning(tmp_path: Path, name: str, data: bytes, words: str) -> None:
    _, codes, message = _judged(tmp_path, name, data)
    assert codes == ["ST708"]
    assert words in message


def test_a_member_that_climbs_out_is_an_error(tmp_path: Path) -> None:
    _, codes, message = _judged(tmp_path, "extra.zip", zip_of({"../../.bashrc": b"echo hi\n"}))
    assert codes == ["ST708", "ST709"]  # a plain zip's members are not vetted (ST708), and one climbs out
    assert "'../../.bashrc'" in message


# -- the zip reader ---------------------------------------------------------------------------
def test_member_lookup_folds_case_as_miniz_does() -> None:
    from validator.formats._zip import open_zip

    archive = open_zip(zip_of({"archive/DATA.PKL": HARMLESS, "archive/version": b"3\n"}))
    assert [m.name for m in archive.find("archive/data.pkl")] == ["archive/DATA.PKL"]


@pytest.mark.parametrize(
    ("patch", "problem"),
    [
        # zipfile takes the last signature, too close to the end to be a record; miniz the real one
        (lambda d: d + b"PK\x05\x06" + bytes(4), "no end of central directory record"),
        (lambda d: b"JUNK" + d, "data before the archive"),
        (lambda d: d.replace(b"PK\x03\x04", b"PK\x03\x05", 1), "does not match the central directory"),
    ],
    ids=["signature-in-the-tail", "prepended", "local-header"],
)
def test_archives_read_differently_by_the_loaders_are_refused(patch, problem) -> None:
    from validator.formats import ArchiveError
    from validator.formats._zip import open_zip

    with pytest.raises(ArchiveError, match=problem):
        open_zip(patch(zip_of({"x.npy": npy("'<f4'", bytes(4))})))


# -- one judgement, however the file arrives -------------------------------------------------
def test_the_same_bytes_give_the_same_codes_as_argument_member_blob_and_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.scan_fixtures import fake_hf_cache, sha256

    evil = b"N0" + P2 + system() + STOP
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "evil.pt").write_bytes(evil)
    codes = {}
    for how, argv in (
        ("argument", ["check", "--no-config", str(folder / "evil.pt")]),
        ("argument-scan", ["scan", "--no-config", "-j", "1", "--progress", "never", str(folder / "evil.pt")]),
        ("member", ["check", "--no-config", str(folder)]),
    ):
        assert main(argv) == 1, how
        codes[how] = sorted({w for w in capsys.readouterr().out.split() if w.startswith("ST")})
    fake_hf_cache(tmp_path / "hub", corrupt=False)
    repo = tmp_path / "hub" / "models--acme--tiny"
    (repo / "blobs" / sha256(evil)).write_bytes(evil)
    (repo / "snapshots" / ("a" * 40) / "evil.pt").symlink_to(Path("..", "..", "blobs", sha256(evil)))
    assert main(["scan", "--no-config", "-j", "1", "--progress", "never", "--hf-cache", str(tmp_path / "hub")]) == 1
    codes["blob"] = sorted({w for w in capsys.readouterr().out.split() if w.startswith("ST7")})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(evil)))
    assert main(["check", "--no-config", "-"]) == 1
    codes["stdin"] = sorted({w for w in capsys.readouterr().out.split() if w.startswith("ST")})
    assert codes == {how: ["ST701"] for how in codes}


# -- the real loaders run the call (throwaway subprocesses) --------------------------------------
# One subprocess per loader loads every sample of that loader, each with its
# own marker, each in try/except: the samples' only possible effect is
# creating their marker files in tmp_path.
_LOADER = textwrap.dedent(
    """
    import sys, warnings
    warnings.simplefilter("ignore")
    loader = sys.argv[1]
    for path, key in zip(sys.argv[2::2], sys.argv[3::2]):
        try:
            if loader == "pickle":
                import pickle
                with open(path, "rb") as f:
                    pickle.load(f)
            elif loader == "torch":
                import torch
                torch.load(path, weights_only=False)
            elif loader == "numpy":
                import numpy
                got = numpy.load(path, allow_pickle=True)
                if key:
                    got[key]
            elif loader == "joblib":
                import joblib
                joblib.load(path)
        except Exception:
            pass
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("loader", ["pickle", "torch", "numpy", "joblib"])
def test_the_real_loader_runs_the_call(tmp_path: Path, loader: str) -> None:
    if loader in {"torch", "joblib"}:
        pytest.importorskip(loader)
    argv, markers = [], {}
    for case, *_ in CASES:
        folder = tmp_path / case
        folder.mkdir()
        marker = folder / "ran"
        (_, name, data, how) = next(c for c in samples(marker) if c[0] == case)
        if how.split(":")[0] != loader:
            continue
        (folder / name).write_bytes(data)
        argv += [str(folder / name), how.partition(":")[2]]
        markers[case] = marker
    subprocess.run([sys.executable, "-c", _LOADER, loader, *argv], check=False, timeout=300, cwd=tmp_path)
    assert [case for case, marker in markers.items() if not marker.exists()] == []


# -- a forgiven byte-0 read must be one pickle itself fails on (found by the oracle's campaign) --
_MAGIC = b"\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little")


def _frame(n: int) -> bytes:
    return b"\x95" + n.to_bytes(8, "little")


@pytest.mark.parametrize(
    ("name", "data"),
    [
        # The GLOBAL's argument straddles the end of its FRAME: the reader refuses the frame
        # before the import, pickle.load (a buffered file) reads across and imports it.
        ("notes.txt", b"\x80\x04" + _frame(len(_MAGIC) + 1) + _MAGIC + system() + STOP),
        # torch's magic number in a straddled frame, then a second stream that calls:
        # torch.load reads on after its magic number, so must the second opinion.
        ("weights.bin", _frame(len(_MAGIC) + 1) + b"\x80\x04" + _MAGIC + STOP + P2 + system() + STOP),
        # The magic number twice (pickle returns the top of the stack): torch reads on all the same.
        (
            "weights.bin",
            b"\x80\x04" + _frame(2 * len(_MAGIC) - 1) + _MAGIC * 2 + STOP + P2 + system() + STOP,
        ),
    ],
    ids=["global-straddles-frame", "magic-then-call", "magic-twice-then-call"],
)
def test_a_read_the_reader_refuses_before_an_import_pickle_makes_is_not_forgiven(
    tmp_path: Path, name: str, data: bytes
) -> None:
    kind, codes, message = _judged(tmp_path, name, data)
    assert kind == "pickle"
    assert codes == ["ST701"], message


def test_a_legacy_stream_with_a_persistent_id_outside_its_object_gets_no_torch_promise() -> None:
    torch = pytest.importorskip("torch")
    out = io.BytesIO()
    torch.save({"w": torch.ones(2)}, out, _use_new_zipfile_serialization=False)
    data = out.getvalue()
    assert read_pickle_bytes(data).torch_weights_only
    # One more stream ("N.") after sys_info: torch takes it for the object, and then
    # unpickles the real object as the storage keys, with no persistent_load.
    cut = data.index(b"uu.") + 3  # the end of sys_info
    verdict = read_pickle_bytes(data[:cut] + b"N." + data[cut:])
    assert verdict.weights_only  # still nothing off the allowlist
    assert not verdict.torch_weights_only
    assert verdict.torch_refusal == "a persistent id outside the legacy stream's object pickle"


def test_a_member_stcheck_cannot_read_beside_its_namesake_numpy_reads_is_an_error(tmp_path: Path) -> None:
    # zipfile (numpy.load) takes the last of two members of one name; the first
    # one's header is no literal.  Found by the oracle's campaign.
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as zf:
        warnings.simplefilter("ignore")  # "Duplicate name"
        zf.writestr("obj.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': (((\n")
        zf.writestr("obj.npy", npy("|O", P2 + system() + STOP))
    kind, codes, _ = _judged(tmp_path, "pytorch_model.bin", buf.getvalue())
    assert (kind, codes) == ("pickle", ["ST701"])


def test_a_torch_zip_whose_persistent_id_is_not_a_storage_gets_no_torch_promise() -> None:
    # torch.load(weights_only=True) takes ("storage", type, key, location, numel) only;
    # the campaign's mutant put the storage type first.  Both torch loaders refuse it.
    torch = pytest.importorskip("torch")
    out = io.BytesIO()
    torch.save({"w": torch.ones(2)}, out)
    data = out.getvalue()
    assert read_pickle_bytes(data).torch_weights_only
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        members = {info.filename: zf.read(info) for info in zf.infolist()}
    pkl = next(name for name in members if name.endswith("data.pkl"))
    storage = b"X\x07\x00\x00\x00storage"
    assert storage in members[pkl]
    members[pkl] = members[pkl].replace(storage, b"X\x07\x00\x00\x00storagf")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, body in members.items():
            zf.writestr(name, body)
    verdict = read_pickle_bytes(buf.getvalue())
    assert verdict.weights_only
    assert not verdict.torch_weights_only
    assert verdict.torch_refusal == "a persistent id that is not a storage's"
