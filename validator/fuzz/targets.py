# Strategy: the fuzz targets, one plain function per invariant, each taking
# the bytes of a would-be file and returning None or raising InvariantError
# (any other exception escaping is itself a finding).  pytest calls them on
# seeds and saved regressions; atheris calls them through validator/fuzz/inprocess.py.  No
# global state, no swallowed exceptions: a target either checks an
# invariant or lets the failure escape to the engine.
#
# - validate: any bytes give a Report under both profiles, only StcheckError
#   may escape, the same bytes give the same report through a stream, the
#   reference profile's findings are a subset of the strict profile's, and an
#   accepted file's table really tiles the data region.
# - differential: the reference profile's verdict and error class equal those
#   of safetensors 0.8.0 (`safetensors.deserialize`); strict-accept implies
#   reference-accept; accepted tables equal the reference's.  Where the
#   reference itself is random (tensors tied on offsets, see tie_classes),
#   any class it can raise is accepted.
# - loader: the loader accepts exactly what the strict profile accepts and
#   every tensor's bytes are the file's bytes at the declared range (a
#   zero-element tensor numpy cannot shape may be refused cleanly).
# - roundtrip: an accepted file re-serialised canonically is strict-valid,
#   has the same table and metadata, and re-serialises to the same bytes.
# ruff: noqa: PLC0415
# Lazy imports: atheris, numpy, hypothesis and safetensors load, only where used.
from __future__ import annotations

import io
import json
import struct
import time
import zlib
from typing import TYPE_CHECKING, Any, Final

from validator._errors import InvalidFileError, StcheckError
from validator._rules import REFERENCE_ERRORS, REFERENCE_MESSAGES, Profile
from validator._validate import both_profiles, validate

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from validator._findings import Report

__all__ = [
    "FUZZ_TARGETS",
    "LOAD",
    "SAMPLE_EVERY",
    "TARGETS",
    "TIME_LIMIT_S",
    "InvariantError",
    "check_report",
    "fuzz_differential",
    "fuzz_validate",
    "numpy_representable",
    "numpy_views",
    "package_loader",
    "reference_class",
    "reference_load",
    "serialise",
    "target_differential",
    "target_loader",
    "target_roundtrip",
    "target_validate",
    "tensor_bytes",
    "tie_classes",
]

# A single input that takes longer than this is a finding even where the
# engine's own -timeout is larger (the validator reads at most 8 + N bytes).
TIME_LIMIT_S: Final = 10.0


class InvariantError(AssertionError):
    """A fuzz target's invariant does not hold for an input."""


def _fail(message: str) -> None:
    raise InvariantError(message)


# --- validate -------------------------------------------------------------


def check_report(report: Report, data: bytes, *, findings: bool = True) -> None:
    """Invariants every Report must satisfy, whatever the input.

    ``findings=False`` leaves out the checks of each finding (its offset,
    profile, formatting and JSON), for a report whose findings are known to
    equal findings already checked.
    """
    errors = report.errors
    valid = report.valid
    if valid == bool(errors):
        _fail(f"valid={valid} but {len(errors)} errors")
    if report.file_size != len(data):
        _fail(f"file_size {report.file_size} != {len(data)}")
    if findings:
        for finding in report.findings:
            if finding.offset is not None and (type(finding.offset) is not int or finding.offset < 0):
                _fail(f"finding {finding.code} has offset {finding.offset!r}")
            if not finding.rule.applies_to(report.profile):
                _fail(f"finding {finding.code} does not apply to profile {report.profile.value}")
            finding.format("f")
        json.dumps(report.to_json())
    if report.profile is Profile.REFERENCE and errors and report.reference_error not in REFERENCE_ERRORS:
        _fail(f"reference-profile error {errors[0].code} maps to no reference error class")
    if valid:
        _check_tiling(report)


def _check_tiling(report: Report) -> None:
    """An accepted file's tensors cover the data region exactly, without holes."""
    if report.header_size is None or report.tensors is None or report.data_start is None:
        _fail("an accepted report lacks its header size or table")
        return
    cursor = 0
    for name, info in sorted(report.tensors.items(), key=lambda kv: kv[1].data_offsets):
        if info.begin != cursor or info.end < info.begin:
            _fail(f"accepted file: tensor {name!r} {info.data_offsets} does not start at {cursor}")
        if info.numel * info.bits != 8 * info.nbytes:
            _fail(f"accepted file: tensor {name!r} has {info.numel} x {info.bits} bits in {info.nbytes} bytes")
        cursor = info.end
    if report.data_start + cursor != report.file_size:
        _fail(f"accepted file: tensors end at {report.data_start + cursor}, the file at {report.file_size}")


def _same(a: Report, b: Report) -> bool:
    return (a.findings, a.tensors, a.metadata, a.header_size, a.file_size) == (
        b.findings,
        b.tensors,
        b.metadata,
        b.header_size,
        b.file_size,
    )


# Under the engine (FUZZ_TARGETS), the checks that repeat what another
# input or harness already checks run on one input in SAMPLE_EVERY, chosen
# by a hash of the input (so a replay repeats the choice).  In the validate
# harness: the two profiles' reports come from one check of the bytes
# (validator._validate.both_profiles: a profile only filters findings), and
# on the sample each profile is also validated alone, from bytes and from a
# stream, and must give the same report.  In the differential harness: the
# strict profile (the validate harness checks on every input that the
# reference findings are the strict findings they share, hence that
# strict-accept implies reference-accept).  Replays, pytest and the
# minimiser call TARGETS, which check everything on every input.
SAMPLE_EVERY: Final = 16


def _sampled(data: bytes) -> bool:
    return zlib.crc32(data) % SAMPLE_EVERY == 0


def target_validate(data: bytes) -> None:
    """Any bytes give a consistent Report under both profiles, in bounded time."""
    _validate(data, alone=True)


def fuzz_validate(data: bytes) -> None:
    """target_validate with the separate validations on a sample of inputs (the engine's)."""
    _validate(data, alone=_sampled(data))


def _validate(data: bytes, *, alone: bool) -> None:
    start = time.perf_counter()
    try:
        strict, ref = both_profiles(data)
    except StcheckError:
        return  # the project's own documented exceptions may escape
    check_report(strict, data)
    if ref.findings != tuple(f for f in strict.findings if Profile.REFERENCE in f.rule.profiles):
        _fail("the reference profile's findings are not the strict findings it shares")
    # Its findings equal strict findings, checked above: the rest only.
    check_report(ref, data, findings=False)
    if alone:
        for report in (strict, ref):
            if not _same(report, validate(data, profile=report.profile)):
                _fail(f"{report.profile.value}: validate() alone differs from the check of both profiles")
            if not _same(report, validate(io.BytesIO(data), profile=report.profile)):
                _fail(f"{report.profile.value}: bytes and stream sources give different reports")
    elapsed = time.perf_counter() - start
    if elapsed > TIME_LIMIT_S:
        _fail(f"validation of {len(data)} bytes took {elapsed:.1f}s")


# --- differential ---------------------------------------------------------


def reference_class(message: str) -> str:
    """The safetensors error class named by a SafetensorError message."""
    for needle, name in REFERENCE_MESSAGES:
        if needle in message:
            return name
    raise InvariantError(f"unrecognised safetensors message {message!r}")


def reference_load(data: bytes) -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
    """safetensors 0.8.0's verdict: (error class or None, tensors)."""
    import safetensors

    try:
        return None, safetensors.deserialize(data)  # type: ignore[no-untyped-call]  # untyped binding
    except safetensors.SafetensorError as exc:
        return reference_class(str(exc)), []
    except BaseException as exc:  # a Rust panic surfaces as a BaseException
        if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        return f"Panic({type(exc).__name__})", []


_OWN_ERRORS: Final = ("ValidationOverflow", "MisalignedSlice", "TensorInvalidInfo")


def tie_classes(ref: Report) -> set[str]:
    """The error classes safetensors 0.8.0 may raise when tensors tie on (begin, end).

    The reference sorts tensors by (begin, end) out of a HashMap whose order
    is random per process, so among tensors with equal offsets any one may be
    checked first: its own error (overflow, sub-byte, length) is raised, or,
    when it has none and the range is non-empty, the next one's InvalidOffset.
    Accepted behaviour (i_): the reference's class is not deterministic there;
    stcheck reports the first tensor in header order.  Empty when the first
    error involves no tie.
    """
    first = ref.first_error
    if first is None or first.tensor is None or ref.tensors is None or first.tensor not in ref.tensors:
        return set()
    offsets = ref.tensors[first.tensor].data_offsets
    group = {name for name, info in ref.tensors.items() if info.data_offsets == offsets}
    if len(group) < 2:
        return set()
    cursor = 0  # the tensors before the tie must end where it begins, or InvalidOffset comes first
    for begin, end in sorted(t.data_offsets for t in ref.tensors.values() if t.data_offsets < offsets):
        if begin != cursor:
            return set()
        cursor = end
    if cursor != offsets[0]:
        return set()
    own: dict[str, str] = {}
    for finding in ref.errors:
        cls = finding.rule.reference_error
        if finding.tensor in group and cls in _OWN_ERRORS:
            own.setdefault(finding.tensor, cls)
    classes = set(own.values())
    if offsets[1] > offsets[0] and len(own) < len(group):
        classes.add("InvalidOffset")
    return classes


def target_differential(data: bytes) -> None:
    """The reference profile agrees with safetensors 0.8.0 on verdict, error class and table."""
    _differential(data, strict=True)


def fuzz_differential(data: bytes) -> None:
    """target_differential with the strict profile on a sample of inputs (the engine's)."""
    _differential(data, strict=_sampled(data))


def _differential(data: bytes, *, strict: bool) -> None:
    ref = validate(data, profile=Profile.REFERENCE)
    if strict and validate(data, profile=Profile.STRICT).valid and not ref.valid:
        _fail(f"strict accepts what the reference profile rejects ({ref.reference_error})")
    theirs, tensors = reference_load(data)
    ours = ref.reference_error
    if ours != theirs and not {ours, theirs} <= tie_classes(ref):
        first = ref.first_error
        detail = "accepts" if first is None else f"says {ours} ({first.code} {first.slug}: {first.message})"
        _fail(f"reference profile {detail}; safetensors 0.8.0 says {theirs or 'valid'}")
    if theirs is None and ref.tensors is not None and ref.data_start is not None:
        if sorted(ref.tensors) != sorted(name for name, _ in tensors):
            _fail(f"tensor names differ: ours {sorted(ref.tensors)}, safetensors {sorted(n for n, _ in tensors)}")
        for name, value in tensors:
            info = ref.tensors[name]
            if (value["dtype"], tuple(value["shape"])) != (info.dtype, info.shape):
                _fail(f"tensor {name!r}: ours {info.dtype} {info.shape}, safetensors {value['dtype']} {value['shape']}")
            if bytes(value["data"]) != data[ref.data_start + info.begin : ref.data_start + info.end]:
                _fail(f"tensor {name!r}: safetensors returns other bytes than the declared range")


# --- loader ---------------------------------------------------------------


def _numpy_dtype(name: str) -> Any:  # noqa: ANN401 - a numpy dtype
    """The numpy dtype of a byte-sized safetensors dtype; None for F4 and F6_*."""
    from validator.io.dtypes_np import SUBBYTE, numpy_dtype

    return None if name in SUBBYTE else numpy_dtype(name)


_INTP_MAX: Final = 2**63 - 1


def numpy_representable(shape: tuple[int, ...], bits: int) -> bool:
    """Whether numpy can build an array of ``shape``.

    numpy refuses a shape whose non-zero dimensions times the element size
    pass 2^63-1, even when another dimension is 0.  A valid file can hold
    such a tensor only with zero elements, e.g. F32 [0, 2^61]: an accepted
    behaviour (i_) the loader refuses cleanly instead of loading.
    """
    total = max(1, bits // 8)
    for dim in shape:
        if dim > _INTP_MAX:
            return False
        total *= dim or 1
    return total <= _INTP_MAX


def numpy_views(data: bytes) -> dict[str, Any]:
    """The interim loader: numpy views of the file bytes at each declared range.

    Raises InvalidFileError for a file the strict profile rejects, and
    StcheckError for a tensor numpy cannot represent (numpy_representable).
    Sub-byte dtypes (F4, F6_*) come back as their raw bytes.
    """
    import numpy as np

    report = validate(data)
    if not report.valid or report.tensors is None or report.data_start is None:
        raise InvalidFileError(report)
    buf = np.frombuffer(data, dtype=np.uint8)
    start = report.data_start
    out: dict[str, Any] = {}
    for name, info in report.tensors.items():
        raw = buf[start + info.begin : start + info.end]
        dtype = _numpy_dtype(info.dtype)
        if dtype is not None and not numpy_representable(info.shape, info.bits):
            msg = f"tensor {name!r}: numpy cannot represent shape {list(info.shape)} of {info.dtype}"
            raise StcheckError(msg)
        out[name] = raw if dtype is None else raw.view(dtype).reshape(info.shape)
    return out


def package_loader(data: bytes) -> dict[str, Any]:
    """The package's own loader (``validator.open``) over a temporary copy of ``data``."""
    import importlib
    import tempfile

    import numpy as np

    open_file = importlib.import_module("validator.io.loader").open_file
    with tempfile.NamedTemporaryFile(suffix=".safetensors") as tmp:
        tmp.write(data)
        tmp.flush()
        with open_file(tmp.name) as handle:
            return {name: np.array(handle.get(name), copy=True) for name in handle.keys()}  # noqa: SIM118


# The loader under test: the package's own (validator.open).  numpy_views,
# the interim loader used before it landed, is one line away (a loader must
# raise StcheckError on a rejected file).
LOAD: Callable[[bytes], Mapping[str, Any]] = package_loader


def tensor_bytes(value: Any) -> bytes:  # noqa: ANN401 - any tensor-like object
    """The raw bytes of a loaded tensor: numpy, torch, or a buffer."""
    if hasattr(value, "detach") and hasattr(value, "view"):  # torch.Tensor
        import torch

        flat = value.detach().contiguous().reshape(-1)
        return bytes(flat.view(torch.uint8).numpy().tobytes()) if flat.numel() else b""
    if hasattr(value, "tobytes"):
        return bytes(value.tobytes())
    return bytes(memoryview(value))


def target_loader(data: bytes) -> None:
    """The loader accepts exactly what validation accepts, with the declared bytes."""
    report = validate(data)
    try:
        loaded = LOAD(data)
    except StcheckError as exc:
        unrepresentable = any(not numpy_representable(t.shape, t.bits) for t in (report.tensors or {}).values())
        if report.valid and not unrepresentable:
            _fail(f"the loader refuses a file the strict profile accepts: {exc}")
        return
    if not report.valid or report.tensors is None or report.data_start is None:
        _fail(f"the loader accepts a file the strict profile rejects ({report.errors[0].slug})")
        return
    if sorted(loaded) != sorted(report.tensors):
        _fail(f"the loader returns tensors {sorted(loaded)}, the header declares {sorted(report.tensors)}")
    for name, info in report.tensors.items():
        value = loaded[name]
        want = data[report.data_start + info.begin : report.data_start + info.end]
        if tensor_bytes(value) != want:
            _fail(f"tensor {name!r}: loaded bytes differ from the file's bytes at {info.data_offsets}")
        shape = getattr(value, "shape", None)
        if info.bits % 8 == 0 and shape is not None and tuple(shape) != info.shape:
            _fail(f"tensor {name!r}: loaded shape {tuple(shape)}, declared {info.shape}")


# --- roundtrip ------------------------------------------------------------


def serialise(report: Report, data: bytes) -> bytes:
    """A canonical file with ``report``'s table and metadata and ``data``'s tensor bytes.

    Compact JSON, ``__metadata__`` first, tensors in offset order, padded
    with spaces to a multiple of 8.
    """
    if report.tensors is None or report.data_start is None:
        msg = "cannot serialise a file whose header did not parse"
        raise ValueError(msg)
    header: dict[str, Any] = {}
    if report.metadata is not None:
        header["__metadata__"] = dict(report.metadata)
    end = 0
    for name, info in sorted(report.tensors.items(), key=lambda kv: (kv[1].data_offsets, kv[0])):
        header[name] = info.to_json()
        end = max(end, info.end)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data[report.data_start : report.data_start + end]


def target_roundtrip(data: bytes) -> None:
    """parse -> serialise -> parse gives the same table, and serialising is idempotent."""
    first = validate(data, profile=Profile.REFERENCE)
    if not first.valid:
        return
    out = serialise(first, data)
    again = validate(out)
    if not again.valid:
        _fail(f"the canonical form of an accepted file is invalid: {again.errors[0].format()}")
    if dict(again.tensors or {}) != dict(first.tensors or {}):
        _fail("the re-parsed table differs from the original")
    if again.metadata != first.metadata:
        _fail("the re-parsed metadata differs from the original")
    if serialise(again, out) != out:
        _fail("serialising the canonical form again changes its bytes")


TARGETS: Final[Mapping[str, Callable[[bytes], None]]] = {
    "validate": target_validate,
    "differential": target_differential,
    "loader": target_loader,
    "roundtrip": target_roundtrip,
}
# What the engine runs: the same, with the sampled checks above.
FUZZ_TARGETS: Final[Mapping[str, Callable[[bytes], None]]] = {
    **TARGETS,
    "validate": fuzz_validate,
    "differential": fuzz_differential,
}
