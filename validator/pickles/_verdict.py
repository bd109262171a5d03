# Strategy: the value types that cross the public boundary.  A Global is one
# import the pickle makes (where, and whether it is called); a PickleVerdict
# is everything one read learned.  Both are frozen.  message() is the one
# sentence every caller shows: it names what would run first, then why the
# file could not be read, then, for a clean file, how it loads safely.
# Names come from the file, so they are escaped before they reach a line.
from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from validator._display import escape_line

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
    why it is unsafe, or None for an allowed import.
    """

    module: str
    name: str
    called: bool
    offset: int
    member: str | None = None
    reason: str | None = None

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
    is True when torch.load(weights_only=True) itself accepts every import (and the
    container: it refuses the legacy tar form).
    ``name`` is the path or name the caller gave, if any.
    """

    kind: str
    weights_only: bool
    imports: tuple[Global, ...]
    unsafe: tuple[Global, ...]
    problem: str | None
    torch_weights_only: bool = False
    name: str | None = None

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
        if self.torch_weights_only and self.kind in TORCH_KINDS:
            return "holds only tensors: loads with torch.load(weights_only=True) (the default since torch 2.6)"
        if self.torch_weights_only:
            return "imports only tensor and container types: torch.load(weights_only=True) accepts it"
        return "imports only allowlisted data types: unpickling it runs no code of the file's choosing"


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
