# Strategy: the public entry points.  The core (`check_buffer`) is given the
# length prefix, a way to read the header bytes and the file size, and does
# no I/O of its own; the wrappers below adapt paths, bytes, memoryviews and
# binary files to it.  Validation reads at most 8 + N bytes (N <= 10^8) and
# never reads tensor data; the file size comes from fstat.
from __future__ import annotations

import gc
import io
import os
import stat
from typing import IO, TYPE_CHECKING, Final, TypeAlias, Union

from validator._check import MAX_PER_RULE, Checker
from validator._entries import read_dtype
from validator._errors import InvalidFileError, SourceError
from validator._findings import Report, TensorTable, report_of
from validator._header import check_header
from validator._layout import check_layout
from validator._prefix import check_prefix, prefix_rule
from validator._rules import BY_SLUG, PREFIX_LEN, Profile, Severity
from validator._source import RegularFile, os_error, read_exact
from validator._table import parse_kind
from validator._tiers import Tier, fast_table

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Source", "as_profile", "both_profiles", "check_buffer", "ensure_valid", "is_valid", "validate"]

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]
_ALL: Final = Tier.ALL
_CANONICAL: Final = Tier.CANONICAL
_SCAN: Final = Tier.SCAN
_STRICT: Final = Profile.STRICT
# The profiles every rule applies to (strict): their findings need no filter.
_EVERY_RULE: Final = frozenset(p for p in Profile if all(p in rule.profiles for rule in BY_SLUG.values()))
_REFERENCE: Final = Profile.REFERENCE
_ERROR: Final = Severity.ERROR


def as_profile(profile: Profile | str) -> Profile:
    if isinstance(profile, Profile):
        return profile
    try:
        return Profile(profile)
    except ValueError:
        msg = f"unknown profile {profile!r}; choose 'strict' or 'reference'"
        raise ValueError(msg) from None


def check_buffer(
    prefix: bytes,
    read_header: Callable[[int], bytes],
    file_size: int,
    profile: Profile,
    path: str | None = None,
    *,
    tiers: Tier = Tier.ALL,
    answered: list[Tier] | None = None,
) -> Report:
    """Validate from the first 8 bytes, a header reader and the file size.

    ``tiers`` names the tiers that may answer (validator._tiers; without
    Tier.SCAN the tree path is the exact path); ``answered``, when given,
    receives the tier that did: Tier.CANONICAL, Tier.SCAN or Tier.NONE.
    """
    out, n, tensors, metadata = _checked(prefix, read_header, file_size, tiers, answered)
    return _report(out, profile, file_size, n, path, tensors, metadata, prefix)


def both_profiles(data: bytes) -> tuple[Report, Report]:
    """``validate(data)`` under the strict and the reference profile, from one check of the bytes.

    A profile only filters the findings (``_report``), so the two reports
    equal those of two validate() calls; the fuzz harness, which uses this,
    compares them with separate calls on a sample of inputs.
    """
    out, n, tensors, metadata = _checked(
        data[:PREFIX_LEN], lambda k: data[PREFIX_LEN : PREFIX_LEN + k], len(data), _ALL, None
    )
    return (
        _report(out, _STRICT, len(data), n, None, tensors, metadata, data[:PREFIX_LEN]),
        _report(out, _REFERENCE, len(data), n, None, tensors, metadata, data[:PREFIX_LEN]),
    )


_Checked: TypeAlias = "tuple[Checker, int | None, TensorTable | None, dict[str, str] | None]"


def _checked(
    prefix: bytes,
    read_header: Callable[[int], bytes],
    file_size: int,
    tiers: Tier,
    answered: list[Tier] | None,
) -> _Checked:
    """The findings, the header size, the table and the metadata."""
    # A header of many tensors allocates many small, acyclic containers;
    # the cyclic collector would only rescan them, so it pauses meanwhile.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _check(prefix, read_header, file_size, tiers, answered)
    finally:
        if paused:
            gc.enable()


def _check(
    prefix: bytes,
    read_header: Callable[[int], bytes],
    file_size: int,
    tiers: Tier,
    answered: list[Tier] | None,
) -> _Checked:
    out = Checker(limit=MAX_PER_RULE)
    n = check_prefix(prefix, file_size, out, read_header)
    table = None
    if n is not None:
        holder = [read_header(n)]  # the header's only owner: fast_table may let it go
        # Tier.ALL, the default, is tested by identity: flag arithmetic on an
        # IntFlag is a Python-level call per operator (and an enum class's
        # attribute lookup costs more than a module global's).
        clean = fast_table(holder, n, file_size) if tiers is _ALL or tiers & _CANONICAL else None
        if clean is not None:
            del holder
            if answered is not None:
                answered.append(Tier.CANONICAL)
            for name, dtype, at in clean.unknown:
                read_dtype(name, dtype, PREFIX_LEN + at, out)
            if not clean.checked:
                check_layout(clean.layout(), n, file_size, out)
            return out, n, clean.tensors(), clean.metadata
        scan = tiers is _ALL or bool(tiers & _SCAN)
        if answered is not None:
            answered.append(Tier.SCAN if scan else Tier.NONE)
        header = holder.pop()
        del holder
        table = check_header(header, out, scan=scan)
        del header
        if table is not None:
            check_layout(table.layout(), n, file_size, out)
    if table is None:
        return out, n, None, None
    tensors = TensorTable(table.good(), table.kinds, table.begins, table.ends, parse_kind)  # type: ignore[arg-type]
    return out, n, tensors, table.metadata


def _report(  # noqa: PLR0917 - positional: called once per validate(), on the hot path
    out: Checker,
    profile: Profile,
    file_size: int,
    n: int | None,
    path: str | None,
    tensors: TensorTable | None,
    metadata: dict[str, str] | None,
    prefix: bytes,
) -> Report:
    # What safetensors 0.8.0 answers: the first error of a rule it enforces
    # (check order is its order); a foreign format's diagnosis stands in
    # for the length-prefix error, whose class it keeps.  The findings do not
    # depend on the profile (a profile only filters them), so this run's
    # reference-rule errors are the reference profile's verdict.
    found = out.findings
    refused = None
    for f in found:
        rule = f.rule
        if rule.severity is _ERROR and _REFERENCE in rule.profiles:
            refused = f
            break
    cls = None
    if refused is not None:
        failed = prefix_rule(prefix, file_size) if refused.rule.region == "format" else None
        cls = BY_SLUG[failed].reference_error if failed is not None else refused.rule.reference_error
    if profile in _EVERY_RULE:
        findings = tuple(found)
    else:
        findings = tuple(f for f in found if profile in f.rule.profiles) if found else ()
    dropped = out.dropped
    suppressed = sum(count for slug, count in dropped.items() if BY_SLUG[slug].applies_to(profile)) if dropped else 0
    return report_of(profile, findings, file_size, n, tensors, metadata, path, suppressed, refused is None, cls)


def _from_buffer(buf: bytes | bytearray | memoryview, profile: Profile, path: str | None) -> Report:
    if type(buf) is bytes:  # immutable: slices are the bytes, no view needed
        return check_buffer(buf[:PREFIX_LEN], lambda n: buf[PREFIX_LEN : PREFIX_LEN + n], len(buf), profile, path)
    view = memoryview(buf)
    if not view.c_contiguous:  # a strided view: only a copy can be cast to bytes
        view = memoryview(view.tobytes())
    elif view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return check_buffer(
        bytes(view[:PREFIX_LEN]),
        lambda n: bytes(view[PREFIX_LEN : PREFIX_LEN + n]),
        len(view),
        profile,
        path,
    )


def _from_fd(fd: int, profile: Profile, path: str | None) -> Report:
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        msg = f"{path or fd}: not a regular file"
        raise SourceError(msg)
    size = st.st_size
    prefix = read_exact(fd, 0, min(PREFIX_LEN, size))

    def read_header(n: int) -> bytes:
        header = read_exact(fd, PREFIX_LEN, n)
        if len(header) != n:
            msg = f"{path or fd}: file shrank while it was being read"
            raise SourceError(msg)
        return header

    return check_buffer(prefix, read_header, size, profile, path)


def _from_stream(stream: IO[bytes], profile: Profile, path: str | None) -> Report:
    if not stream.seekable():
        return _from_buffer(stream.read(), profile, path)
    here = stream.tell()
    try:
        size = stream.seek(0, io.SEEK_END)
        stream.seek(0)
        prefix = stream.read(PREFIX_LEN)

        def read_header(n: int) -> bytes:
            stream.seek(PREFIX_LEN)
            return stream.read(n)

        return check_buffer(prefix, read_header, size, profile, path)
    finally:
        stream.seek(here)


def validate(source: Source, *, profile: Profile | str = Profile.STRICT) -> Report:
    """Validate a safetensors file and return a Report.

    ``source`` is a path, ``bytes``/``bytearray``/``memoryview`` of the whole
    file, or a binary file object (read from its start; its position is
    restored).  Bad bytes never raise: they produce findings.  Raises
    SourceError when the source cannot be read, and ValueError for an unknown
    profile.

    >>> import validator
    >>> validator.validate(b"\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00{}").valid
    True
    """
    prof = as_profile(profile)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _from_buffer(source, prof, None)
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with RegularFile(path) as (fd, _):
            try:
                return _from_fd(fd, prof, path)
            except SourceError:
                raise
            except OSError as exc:
                raise os_error(path, exc) from exc
    if hasattr(source, "read"):
        name = getattr(source, "name", None)
        where = name if isinstance(name, str) else None
        try:
            fileno = source.fileno()
        except (OSError, AttributeError, io.UnsupportedOperation):
            fileno = None
        try:
            if fileno is not None:
                return _from_fd(fileno, prof, where)
            return _from_stream(source, prof, where)
        except SourceError:
            raise
        except OSError as exc:
            msg = f"{where or 'stream'}: {exc}"
            raise SourceError(msg) from exc
    msg = f"cannot validate a {type(source).__name__}; pass a path, bytes, memoryview or binary file"
    raise SourceError(msg)


def ensure_valid(source: Source, *, profile: Profile | str = Profile.STRICT) -> Report:
    """Like validate, but raise InvalidFileError when the file is invalid."""
    report = validate(source, profile=profile)
    if not report.valid:
        raise InvalidFileError(report)
    return report


def is_valid(source: Source, *, profile: Profile | str = Profile.STRICT) -> bool:
    """True when ``source`` has no error findings under ``profile``."""
    return validate(source, profile=profile).valid
