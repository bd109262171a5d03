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
from dataclasses import replace
from typing import IO, TYPE_CHECKING, Union

from validator._check import MAX_PER_RULE, Checker
from validator._entries import read_dtype
from validator._errors import InvalidFileError, SourceError
from validator._findings import Report, TensorTable
from validator._header import check_header, parse_kind
from validator._layout import check_layout
from validator._prefix import check_prefix, prefix_rule
from validator._rules import BY_SLUG, PREFIX_LEN, Profile, Severity
from validator._source import RegularFile, os_error, read_exact
from validator._tiers import Tier, fast_table

if TYPE_CHECKING:
    from collections.abc import Callable

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, IO[bytes]]


def _profile(profile: Profile | str) -> Profile:
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
    # A header of many tensors allocates many small, acyclic containers;
    # the cyclic collector would only rescan them, so it pauses meanwhile.
    paused = gc.isenabled()
    gc.disable()
    try:
        report = _check(prefix, read_header, file_size, profile, path=path, tiers=tiers, answered=answered)
        if report.reference_valid and not report.valid:
            # Strict-only errors and no reference error in this run.  The
            # reference profile is this same run's reference rules today; it
            # is asked again rather than assumed, so that reference_valid
            # stays exactly its verdict (a header read, only on this path).
            again = _check(prefix, read_header, file_size, Profile.REFERENCE, path=path, tiers=tiers, answered=None)
            report = replace(report, reference_valid=again.valid, _reference_error=again.reference_error)
        return report
    finally:
        if paused:
            gc.enable()


def _check(
    prefix: bytes,
    read_header: Callable[[int], bytes],
    file_size: int,
    profile: Profile,
    *,
    path: str | None,
    tiers: Tier,
    answered: list[Tier] | None,
) -> Report:
    out = Checker(limit=MAX_PER_RULE)
    n = check_prefix(prefix, file_size, out, read_header)
    table = None
    if n is not None:
        holder = [read_header(n)]  # the header's only owner: fast_table may let it go
        clean = fast_table(holder, n, file_size, tiers)
        if clean is not None:
            del holder
            if answered is not None:
                answered.append(Tier.CANONICAL)
            for name, dtype, at in clean.unknown:
                read_dtype(name, dtype, PREFIX_LEN + at, out)
            if not clean.checked:
                check_layout(clean.layout(), n, file_size, out)
            return _report(
                out,
                profile,
                file_size=file_size,
                n=n,
                path=path,
                tensors=clean.tensors(),
                metadata=clean.metadata,
                prefix=prefix,
            )
        scan = bool(tiers & Tier.SCAN)
        if answered is not None:
            answered.append(Tier.SCAN if scan else Tier.NONE)
        header = holder.pop()
        del holder
        table = check_header(header, out, scan=scan)
        del header
        if table is not None:
            check_layout(table.layout(), n, file_size, out)
    tensors = None
    metadata = None
    if table is not None:
        tensors = TensorTable(table.good(), table.kinds, table.begins, table.ends, parse_kind)  # type: ignore[arg-type]
        metadata = table.metadata
    return _report(out, profile, file_size=file_size, n=n, path=path, tensors=tensors, metadata=metadata, prefix=prefix)


def _report(
    out: Checker,
    profile: Profile,
    *,
    file_size: int,
    n: int | None,
    path: str | None,
    tensors: TensorTable | None,
    metadata: dict[str, str] | None,
    prefix: bytes,
) -> Report:
    # What safetensors 0.8.0 answers: the first error of a rule it enforces
    # (check order is its order); a foreign format's diagnosis stands in
    # for the length-prefix error, whose class it keeps.
    refused = next(
        (f for f in out.findings if f.rule.severity is Severity.ERROR and f.rule.applies_to(Profile.REFERENCE)), None
    )
    cls = None
    if refused is not None:
        failed = prefix_rule(prefix, file_size) if refused.rule.region == "format" else None
        cls = BY_SLUG[failed].reference_error if failed is not None else refused.rule.reference_error
    return Report(
        profile=profile,
        findings=tuple(f for f in out.findings if f.rule.applies_to(profile)),
        file_size=file_size,
        header_size=n,
        tensors=tensors,
        metadata=metadata,
        path=path,
        suppressed=sum(count for slug, count in out.dropped.items() if BY_SLUG[slug].applies_to(profile)),
        reference_valid=refused is None,
        _reference_error=cls,
    )


def _from_buffer(buf: bytes | bytearray | memoryview, profile: Profile, path: str | None) -> Report:
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
    prof = _profile(profile)
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
