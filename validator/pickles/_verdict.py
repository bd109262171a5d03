# Strategy: the value types that cross the public boundary.  A Global is one
# import the pickle makes (where, and whether it is called); a PickleVerdict
# is everything one read learned.  Both are frozen.  verdict_from() is the
# one place a read becomes a verdict: the tiers (weights only, data only,
# neither), which loaders accept the file, and why torch.load(weights_only=
# True) would refuse it.  message() is the one sentence every caller shows:
# it names what would run first, then why the file could not be read, then,
# for a clean file, what loads it.  Names come from the file, so they are
# escaped before they reach a line.
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from validator._display import escape_line
from validator.pickles._allow import TORCH_OPCODES, allowed, torch_allows

if TYPE_CHECKING:
    from validator.pickles._ops import Reader

__all__ = ["LOADERS", "TORCH_KINDS", "TORCH_PHRASE", "Container", "Global", "PickleVerdict", "verdict_from"]

# The container a pickle-bearing file is: which loader unpickles what in it.
Container = Literal["pickle", "joblib", "npy", "npz", "torch-zip", "torch-tar", "torch-legacy"]

# Where a read stops naming unsafe globals in one message.
_NAMED: Final = 3
# torch.load(weights_only=True) reads these; it refuses the legacy tar form outright.
TORCH_KINDS: Final = frozenset({"torch-zip", "torch-legacy"})


@dataclass(frozen=True)
class Global:
    """One global a pickle imports.

    ``offset`` is the byte offset of the opcode that imports it, in the
    pickle stream that holds it: in the file for a plain pickle, a legacy
    torch file or an .npy, in the archive member ``member`` otherwise.
    ``called`` is True when the stream calls it (REDUCE, NEWOBJ,
    NEWOBJ_EX, INST, OBJ, or BUILD on the global itself).  ``reason`` is
    why it is unsafe, or None for an allowed import.  ``rebuilds`` names
    the library value a data-tier import rebuilds (None in the weights tier).
    """

    module: str
    name: str
    called: bool
    offset: int
    member: str | None = None
    reason: str | None = None
    rebuilds: str | None = None

    @property
    def qualname(self) -> str:
        """``module.name``, escaped for display ("an unresolved global" when it has no name)."""
        if (self.module, self.name) == ("?", "?"):
            return "an unresolved global"
        return escape_line(f"{self.module}.{self.name}")


@dataclass(frozen=True)
class PickleVerdict:
    """What a static read of a pickle-bearing file found.

    ``kind`` is the container: "pickle", "torch-zip", "torch-legacy",
    "torch-tar", "npy", "npz" or "joblib".  ``weights_only`` is True when
    the file was read to its end and every import is on the allowlist (so
    unpickling it runs no code of the file's choosing).  ``imports`` lists
    every global imported, in stream order; ``unsafe`` those refused (off
    the allowlist, a name that cannot be resolved statically, or an
    allowed global with arguments that are not).  ``problem`` says why the
    file could not be read to its end, or is None.  ``torch_weights_only``
    is True when torch.load(weights_only=True) itself accepts the file:
    a torch.save container other than the legacy tar form, whose every
    opcode and global its weights-only unpickler reads; ``torch_refusal``
    says why it would refuse, or is None.  ``data_only`` is True when the
    file is clean but needs the data tier: library constructors that
    rebuild data (``rebuilds`` names them) and call nothing of the file's
    choosing.  ``loaders`` names the loaders that load a clean file (empty
    for one that is not clean).  ``name`` is the path or name the caller
    gave, if any.
    """

    kind: Container
    weights_only: bool
    imports: tuple[Global, ...]
    unsafe: tuple[Global, ...]
    problem: str | None
    torch_weights_only: bool = False
    name: str | None = None
    data_only: bool = False
    rebuilds: tuple[str, ...] = ()
    loaders: tuple[str, ...] = ()
    torch_refusal: str | None = None

    def message(self) -> str:
        """One line naming what loading the file would run, or why it is safe."""
        parts: list[str] = []
        if self.unsafe:
            parts.append(_unsafe_phrase(self.unsafe))
        if self.problem is not None:
            parts.append(escape_line(self.problem))
        if parts:
            return "; ".join(parts)
        if not self.imports:
            return "holds no pickled objects: loading it runs no code"
        if self.torch_weights_only:
            return TORCH_PHRASE
        loads = " or ".join(self.loaders)
        if self.data_only:
            rebuilds = ", ".join(escape_line(r) for r in self.rebuilds)
            return f"loads with {loads}; rebuilds {rebuilds}: library constructors of data, none of the file's choosing"
        text = "imports only allowlisted data types: unpickling it runs no code of the file's choosing"
        if self.kind in TORCH_KINDS and self.torch_refusal is not None:
            return f"{text}, but torch.load(weights_only=True) refuses it ({self.torch_refusal}): loads with {loads}"
        return f"{text}; loads with {loads}"


TORCH_PHRASE: Final = "holds only tensors: loads with torch.load(weights_only=True) (the default since torch 2.6)"
# The loader that unpickles each kind of file (besides torch.load(weights_only=True)).
LOADERS: Final = {
    "pickle": "pickle.load",
    "joblib": "joblib.load",
    "npy": "numpy.load(allow_pickle=True)",
    "npz": "numpy.load(allow_pickle=True)",
    "torch-zip": "torch.load(weights_only=False)",
    "torch-legacy": "torch.load(weights_only=False)",
    "torch-tar": "torch.load(weights_only=False)",
}


def verdict_from(kind: Container, reader: Reader, problem: str | None, name: str | None) -> PickleVerdict:
    """The verdict on a read of a ``kind`` file that ``reader`` made, ``problem`` why it stopped early (or None)."""
    imports = tuple(
        Global(
            rec.module,
            rec.name,
            rec.called,
            rec.offset,
            rec.member,
            rec.reason
            if rec.reason is not None or rec.data is not None or allowed(rec.module, rec.name)
            else "not on the allowlist",
            rec.data,
        )
        for rec in reader.imports
    )
    unsafe = tuple(g for g in imports if g.reason is not None)
    clean = not unsafe and problem is None
    rebuilds = tuple(dict.fromkeys(g.rebuilds for g in imports if g.rebuilds is not None))
    refusal = _torch_refusal(kind, reader, imports)
    torch_ok = clean and refusal is None
    loaders: tuple[str, ...] = ()
    if clean:
        loaders = ("torch.load(weights_only=True)",) if torch_ok else (LOADERS.get(kind, "pickle.load"),)
    return PickleVerdict(
        kind=kind,
        weights_only=clean and not rebuilds,
        imports=imports,
        unsafe=unsafe,
        problem=problem,
        torch_weights_only=torch_ok,
        name=name,
        data_only=clean and bool(rebuilds),
        rebuilds=rebuilds,
        loaders=loaders,
        torch_refusal=refusal,
    )


def _torch_refusal(kind: Container, reader: Reader, imports: tuple[Global, ...]) -> str | None:
    # What torch.load(weights_only=True) (torch 2.13) would stop at, first found first.
    if kind == "torch-tar":
        return "it refuses the legacy tar form"
    if kind not in TORCH_KINDS:
        return "not a torch.save file"
    if reader.torch_refusal is not None:
        return reader.torch_refusal
    missing = sorted(reader.opcodes() - TORCH_OPCODES)
    if missing:
        listed = ", ".join(missing[:_NAMED])
        return f"its weights-only unpickler does not support the {listed} opcode" + ("s" if len(missing) > 1 else "")
    for rec, g in zip(reader.imports, imports, strict=True):
        if rec.renamed:
            return f"it does not map the Python 2 name of {g.qualname}"
        if not torch_allows(g.module, g.name):
            return f"{g.qualname} is not on its allowlist"
    return None


def _unsafe_phrase(unsafe: tuple[Global, ...]) -> str:
    # A call outside the allowlist first, then a bad argument, then a bare import.
    ordered = sorted(unsafe, key=lambda g: (not g.called, g.reason is not None and "argument" in g.reason))
    named: list[str] = []
    for g in ordered:
        verb = "calls" if g.called else "imports"
        text = f"{verb} {g.qualname}"
        if g.reason is not None and not g.reason.startswith("not on the allowlist"):
            text += f" ({escape_line(g.reason)})"
        if text not in named:
            named.append(text)
    more = len(named) - _NAMED
    head = " and ".join(named[:_NAMED])
    return f"loading it {head}" + (f" and {more} more" if more > 0 else "")
