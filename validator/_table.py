# Strategy: the header's tensors as the exact path collects them: columns
# (names, kinds, begins, ends), one row per distinct name in first-seen
# order, holding the name's last definition as the reference keeps it, for
# validator._layout and the report's TensorTable.  A regular entry's kind
# keeps its shape as the bytes between its brackets, parsed only when asked
# for; its size skips dimensions of 1, so that a shape of 50 million ones
# is one regex scan.
from __future__ import annotations

import re
from typing import Any, Final, TypeAlias

from validator._layout import Layout, size_of

__all__ = ["Kind", "Table", "kind_size", "parse_kind"]

_DIM: Final = re.compile(rb"[0-9]+")
_NOT_ONE: Final = re.compile(rb"(?<![0-9])(?!1(?![0-9]))[0-9]+")


# A row's kind: (dtype, shape), the shape as a tuple or, for a regular
# entry, as the text between its brackets.
Kind: TypeAlias = "tuple[str, tuple[int, ...] | bytes]"


def parse_kind(kind: Kind) -> tuple[str, tuple[int, ...]]:
    """(dtype, shape) of a kind."""
    dtype, shape = kind
    if isinstance(shape, bytes):
        return dtype, tuple(map(int, _DIM.findall(shape)))
    return dtype, shape


def kind_size(kind: Kind) -> tuple[int, int]:
    """(bytes or OVERFLOW or MISALIGNED, alignment) of a kind."""
    dtype, shape = kind
    if isinstance(shape, bytes):
        # Only dimensions other than 1 change the count: a shape of 50
        # million ones costs one regex scan, not 50 million ints.
        return size_of(dtype, (int(m.group()) for m in _NOT_ONE.finditer(shape)))
    return size_of(dtype, shape)


class Table:
    """The header's tensors as columns, one row per entry in first-seen order.

    A row holds the last definition of its name, as the reference keeps it.
    ``bad`` lists the rows whose entry failed its own checks.
    """

    __slots__ = ("bad", "begins", "ends", "index", "kinds", "metadata", "names")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.kinds: list[Any] = []
        self.begins: list[int | None] = []
        self.ends: list[int | None] = []
        self.bad: set[int] = set()
        self.index: dict[str, int] = {}  # name -> row
        self.metadata: dict[str, str] | None = None

    def add(self, name: str, kind: Kind | None, begin: int | None, end: int | None, *, ok: bool) -> None:
        row = self.index.get(name)
        if row is None:
            row = self.index[name] = len(self.names)
            self.names.append(name)
            self.kinds.append(kind)
            self.begins.append(begin)
            self.ends.append(end)
        else:
            self.kinds[row], self.begins[row], self.ends[row] = kind, begin, end
            self.bad.discard(row)
        if not ok:
            self.bad.add(row)

    def extend(self, names: list[str], kinds: list[Any], begins: list[int], ends: list[int], *, repeats: bool) -> None:
        """Rows of entries that all passed their checks; ``repeats``: some name was seen before."""
        index = self.index
        if repeats:
            # Repeated names: each distinct name once, with its last definition.
            last = dict(zip(names, range(len(names)), strict=True))
            for name, i in last.items():
                self.add(name, kinds[i], begins[i], ends[i], ok=True)
            return
        row = len(self.names)
        index.update(zip(names, range(row, row + len(names)), strict=True))
        self.names += names
        self.kinds += kinds
        self.begins += begins
        self.ends += ends

    def layout(self) -> Layout:
        return Layout(
            self.names, begins=self.begins, ends=self.ends, kinds=self.kinds, parse=parse_kind, size=kind_size
        )

    def good(self) -> dict[str, int]:
        """name -> row for the entries that passed their checks."""
        if not self.bad:
            return self.index
        good = dict(self.index)
        for row in self.bad:
            del good[self.names[row]]
        return good
