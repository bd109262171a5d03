# Strategy: the value types that cross the public boundary.  A Finding is one
# problem at one place; a Report is everything one validation learned.  Both
# are frozen so they can be shared and compared in tests; a Finding is also
# hashable, a Report is not (it holds mappings).  ReportBase is what every
# report type (Report, the index's IndexReport, the scan's FileResult)
# derives from its findings: valid, errors, warnings and first_error.
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar

from validator._display import finding_line
from validator._dtypes import DTYPE_BITS
from validator._rules import PREFIX_LEN, Profile, Rule, Severity

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence

__all__ = [
    "REFERENCE_LOADS",
    "F_co",
    "Finding",
    "Report",
    "ReportBase",
    "TensorInfo",
    "TensorTable",
    "report_of",
    "strict_only_failure",
]


_ERROR: Final = Severity.ERROR  # a module global: an enum class attribute costs a lookup per use
_WARNING: Final = Severity.WARNING


@dataclass(frozen=True)
class Finding:
    """One problem found in a file.

    ``offset`` is the absolute byte offset in the file (for a JSON problem, the
    offset of the offending token; for a layout problem, where the tensor's
    bytes begin or end: 8 + N + the data offset), or None where no single
    place applies.  ``json_path`` is a
    JSON Pointer into the header where the problem sits in the header.
    ``path`` names the file when the finding came from a report of a named
    file (``validate(path)`` sets it); it is only shown, never compared.
    """

    rule: Rule
    message: str
    offset: int | None = None
    tensor: str | None = None
    json_path: str | None = None
    path: str | None = field(default=None, compare=False, repr=False)

    @property
    def code(self) -> str:
        """The rule's stable code, such as ``ST206``."""
        return self.rule.code

    @property
    def slug(self) -> str:
        """The rule's kebab-case name, such as ``json-depth``."""
        return self.rule.slug

    @property
    def severity(self) -> Severity:
        """The rule's severity."""
        return self.rule.severity

    def format(self, path: str | None = None) -> str:
        """Render as ``path:offset: CODE slug message``, the form editors parse
        (``path: CODE slug message`` when no single offset applies; the path
        escaped and the line printable, as the CLI prints it).  Without
        ``path``, the finding's own ``path``, or ``<bytes>``."""
        return finding_line(path if path is not None else self.path or "<bytes>", self)

    def __str__(self) -> str:
        """The one-line ``path:offset: CODE slug message`` form (see ``format``)."""
        return self.format()

    def to_json(self) -> dict[str, Any]:
        """The finding as a JSON-ready dict (see ``spec/report.schema.json``)."""
        where = {"offset": self.offset, "tensor": self.tensor, "json_path": self.json_path}
        return {"rule": self.slug, "code": self.code, "severity": self.severity.value, **where, "message": self.message}


@dataclass(frozen=True)
class TensorInfo:
    """One tensor entry of a parsed header."""

    dtype: str
    shape: tuple[int, ...]
    data_offsets: tuple[int, int]

    @property
    def begin(self) -> int:
        """Start of the tensor relative to the data region."""
        return self.data_offsets[0]

    @property
    def end(self) -> int:
        """End (exclusive) of the tensor relative to the data region."""
        return self.data_offsets[1]

    @property
    def nbytes(self) -> int:
        """Length of the declared byte range."""
        return self.data_offsets[1] - self.data_offsets[0]

    @property
    def numel(self) -> int:
        """Number of elements (1 for a scalar)."""
        n = 1
        for dim in self.shape:
            n *= dim
        return n

    @property
    def bits(self) -> int:
        """Bits per element."""
        return DTYPE_BITS[self.dtype]

    def to_json(self) -> dict[str, Any]:
        """The entry as it appears in a header."""
        return {"dtype": self.dtype, "shape": list(self.shape), "data_offsets": list(self.data_offsets)}


class _Severe(Protocol):
    @property
    def severity(self) -> Severity: ...


F_co = TypeVar("F_co", bound=_Severe, covariant=True)


class ReportBase(Generic[F_co]):
    """What a report derives from its ``findings`` (anything with a ``severity``).

    Each report type keeps its findings in check order and names where it
    came from in ``path``.
    """

    __slots__ = ()

    if TYPE_CHECKING:

        @property
        def findings(self) -> Sequence[F_co]: ...

        @property
        def path(self) -> str | None: ...

    @property
    def valid(self) -> bool:
        """True when no finding is an error."""
        return self.first_error is None

    @property
    def errors(self) -> tuple[F_co, ...]:
        """The error findings, in check order."""
        return tuple(f for f in self.findings if f.severity is _ERROR)

    @property
    def warnings(self) -> tuple[F_co, ...]:
        """The warning findings, in check order."""
        return tuple(f for f in self.findings if f.severity is _WARNING)

    @property
    def first_error(self) -> F_co | None:
        """The first error in check order, or None."""
        return next((f for f in self.findings if f.severity is _ERROR), None)


def _as_is(kind: tuple[str, tuple[int, ...]]) -> tuple[str, tuple[int, ...]]:
    return kind


class TensorTable(Mapping[str, TensorInfo]):
    """A read-only name -> TensorInfo mapping over column lists.

    This is the type of every ``Report.tensors``.  The canonical fast path
    leaves a header as columns; a TensorInfo is made only when asked for, so
    a 100,000-tensor report costs no per-tensor objects until it is read.
    ``parse`` turns a kind column value into dtype and shape.
    """

    __slots__ = ("_begins", "_ends", "_index", "_kinds", "_parse")

    def __init__(
        self,
        index: dict[str, int],
        kinds: list[Any],
        begins: list[int],
        ends: list[int],
        parse: Callable[[Any], tuple[str, tuple[int, ...]]],
    ) -> None:
        self._index, self._kinds, self._begins, self._ends, self._parse = index, kinds, begins, ends, parse

    def __getitem__(self, name: str) -> TensorInfo:
        i = self._index[name]
        dtype, shape = self._parse(self._kinds[i])
        return TensorInfo(dtype, shape, (self._begins[i], self._ends[i]))

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    @classmethod
    def of(cls, infos: Mapping[str, TensorInfo]) -> TensorTable:
        """The table of a name -> TensorInfo mapping (in its order)."""
        index: dict[str, int] = {}
        kinds: list[tuple[str, tuple[int, ...]]] = []
        begins: list[int] = []
        ends: list[int] = []
        for name, info in infos.items():
            index[name] = len(kinds)
            kinds.append((info.dtype, info.shape))
            begins.append(info.data_offsets[0])
            ends.append(info.data_offsets[1])
        return cls(index, kinds, begins, ends, _as_is)


@dataclass(frozen=True)
class Report(ReportBase[Finding]):
    """The result of validating one file.

    ``findings`` are in check order: for the ``reference`` profile the first
    error is the one safetensors 0.8.0 raises.  ``tensors`` (name to entry,
    last definition winning, as in the reference) and ``metadata`` are set when
    the header parsed; entries that failed their own checks are left out.
    ``tensors`` is a read-only :class:`TensorTable` whatever mapping it was
    given.
    """

    profile: Profile
    findings: tuple[Finding, ...]
    file_size: int
    header_size: int | None = None
    tensors: Mapping[str, TensorInfo] | None = None
    metadata: Mapping[str, str] | None = None
    path: str | None = None
    suppressed: int = 0
    """Findings not kept because a rule fired more than 1000 times."""
    reference_valid: bool | None = None
    """Whether safetensors 0.8.0 reads the file, whatever the profile
    (``validate`` sets it; None for a report made without it)."""
    _reference_error: str | None = None
    """The class safetensors 0.8.0 raises (see ``reference_error``), set with ``reference_valid``."""

    def __post_init__(self) -> None:
        if self.tensors is not None and not isinstance(self.tensors, TensorTable):
            object.__setattr__(self, "tensors", TensorTable.of(self.tensors))
        where = self.path
        if where is not None and any(f.path is None for f in self.findings):
            # The report names its file: so do its findings, for str(finding).
            named = tuple(
                f if f.path is not None else Finding(f.rule, f.message, f.offset, f.tensor, f.json_path, where)
                for f in self.findings
            )
            object.__setattr__(self, "findings", named)

    @property
    def reference_error(self) -> str | None:
        """The error class safetensors 0.8.0 raises on the file, or None when it reads it.

        This is the class that ``safetensors.deserialize`` raises for the same
        bytes, under either profile (for a file that is another format
        altogether, the length-prefix class, such as ``HeaderTooLarge``).  A
        report made without ``reference_valid`` gives its first error's class.
        """
        if self.reference_valid is not None:
            return self._reference_error
        first = self.first_error
        return None if first is None else first.rule.reference_error

    @property
    def data_start(self) -> int | None:
        """Absolute offset where the data region begins (8 + header size)."""
        return None if self.header_size is None else PREFIX_LEN + self.header_size

    def to_json(self) -> dict[str, Any]:
        """The report as a JSON-ready dict (see ``spec/report.schema.json``)."""
        return {
            "path": self.path,
            "valid": self.valid,
            "profile": self.profile.value,
            "file_size": self.file_size,
            "header_size": self.header_size,
            "findings": [f.to_json() for f in self.findings],
            "tensors": None if self.tensors is None else {name: info.to_json() for name, info in self.tensors.items()},
            "metadata": None if self.metadata is None else dict(self.metadata),
            "suppressed": self.suppressed,
            "reference_valid": self.reference_valid,
        }


# The one phrase every output uses (check, inspect, scan, SARIF, JUnit,
# validator.compat) when the strict profile fails a file that safetensors
# 0.8.0 reads: "My file loads fine, so why does stcheck fail it?"
REFERENCE_LOADS: Final = "safetensors 0.8.0 loads it: strict-only findings"


def strict_only_failure(reference_valid: bool | None, errors: Iterable[Finding]) -> bool:  # noqa: FBT001 - a verdict, not a flag
    """True when safetensors 0.8.0 reads the file and an error is of a
    strict-only rule: then the text says REFERENCE_LOADS."""
    return reference_valid is True and any(not f.rule.applies_to(Profile.REFERENCE) for f in errors)


_REPORT_ARGS: Final = (
    "profile",
    "findings",
    "file_size",
    "header_size",
    "tensors",
    "metadata",
    "path",
    "suppressed",
    "reference_valid",
    "_reference_error",
)
# Fields of Report that report_of does not take: their defaults.
_REPORT_REST: Final = {f.name: f.default for f in fields(Report) if f.name not in _REPORT_ARGS}


def report_of(  # noqa: PLR0917 - positional: the hot path of validate(), no keyword dict per call
    profile: Profile,
    findings: tuple[Finding, ...],
    file_size: int,
    header_size: int | None,
    tensors: TensorTable | None,
    metadata: Mapping[str, str] | None,
    path: str | None,
    suppressed: int,
    reference_valid: bool | None,  # noqa: FBT001 - a verdict, positional on the hot path
    reference_error: str | None,
) -> Report:
    """``Report(...)`` with these fields, built without a frozen setattr per field.

    The hot path of validate(): a dataclass's frozen __init__ costs a
    setattr through object.__setattr__ per field.  ``tensors`` must already
    be a TensorTable (so __post_init__ has nothing to do); every other field
    takes its default (a plain one: a default_factory would show as
    MISSING).  tests/test_tiers.py checks the result equals Report's own
    construction.
    """
    if path is not None and findings:
        # As Report.__post_init__: the report names its file, so do its findings.
        findings = tuple(
            f if f.path is not None else Finding(f.rule, f.message, f.offset, f.tensor, f.json_path, path)
            for f in findings
        )
    report: Report = object.__new__(Report)
    values = report.__dict__
    values.update(
        profile=profile,
        findings=findings,
        file_size=file_size,
        header_size=header_size,
        tensors=tensors,
        metadata=metadata,
        path=path,
        suppressed=suppressed,
        reference_valid=reference_valid,
        _reference_error=reference_error,
    )
    if _REPORT_REST:
        values.update(_REPORT_REST)
    return report
