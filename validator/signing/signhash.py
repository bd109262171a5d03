# Strategy: the digests a model signature (OpenSSF Model Signing, OMS, as
# model_signing 1.1.1 writes it) lists for a file, computed during the
# scan's one read of that file.  A signature made "by files" holds one
# digest of each whole file; one made "by shards" holds one digest per range
# [k*s, min((k+1)*s, size)) of shard size s, named `path:start:end` (an
# empty file has no shard at all).  The hash types are the three
# model_signing 1.1.1 can write: sha256, blake2b (hashlib's default 64-byte
# digest) and blake3 (the blake3 package, a dependency of model_signing,
# which never shards blake3).  A DigestSpec names one such set of digests;
# the SignedDigester feeds each chunk of the read to the file's sha256
# (integrity.Digester, reused when the signature asks for exactly that) and
# to every other set, in the one hashing thread of the read.
# Nothing here imports model_signing: this runs in the scan's workers.
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from validator.read.integrity import Digester

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from validator._findings import TensorInfo

__all__ = [
    "HASH_TYPES",
    "WHOLE_SHA256",
    "DigestSpec",
    "SignedDigester",
    "make_digester",
    "new_hash",
    "shard_ranges",
    "tensor_inventory",
]

HASH_TYPES: Final = ("sha256", "blake2b", "blake3")
_PARALLEL: Final = 1 << 20  # bytes: a chunk this large is hashed by two threads at once


class _Hash(Protocol):
    def update(self, data: memoryview, /) -> object: ...
    def hexdigest(self) -> str: ...


@dataclass(frozen=True, order=True)
class DigestSpec:
    """One set of digests a signature lists for a file: whole (``shard_size``
    None) or per shard."""

    algorithm: str  # one of HASH_TYPES
    shard_size: int | None = None

    @property
    def label(self) -> str:
        """The algorithm name a signature's resources carry: ``sha256``,
        ``sha256-sharded-1000000000``."""
        return self.algorithm if self.shard_size is None else f"{self.algorithm}-sharded-{self.shard_size}"


WHOLE_SHA256: Final = DigestSpec("sha256")


def shard_ranges(size: int, shard_size: int) -> list[tuple[int, int]]:
    """The shards a file of ``size`` bytes is cut into (none when empty)."""
    return [(start, min(start + shard_size, size)) for start in range(0, size, shard_size)]


def new_hash(algorithm: str) -> _Hash:
    """A fresh hash object of one of HASH_TYPES."""
    if algorithm == "sha256":
        return hashlib.sha256()
    if algorithm == "blake2b":
        return hashlib.blake2b()
    import blake3  # noqa: PLC0415 - model_signing's dependency, loaded only for a blake3 signature

    hasher: _Hash = blake3.blake3()
    return hasher


class _Shards:
    """Per-shard digests of one file, fed in order."""

    __slots__ = ("_at", "_end", "_hash", "_size", "algorithm", "digests", "shard_size")

    def __init__(self, spec: DigestSpec, size: int) -> None:
        assert spec.shard_size is not None
        self.algorithm = spec.algorithm
        self.shard_size = spec.shard_size
        self._size = size
        self._at = 0
        self._end = min(self.shard_size, size)
        self._hash = new_hash(self.algorithm)
        self.digests: list[str] = []

    def update(self, data: memoryview) -> None:
        while len(data):
            take = min(len(data), self._end - self._at)
            if take <= 0:  # bytes past the size the read began with: the caller fails the read
                return
            self._hash.update(data[:take])
            self._at += take
            data = data[take:]
            if self._at == self._end:
                self.digests.append(self._hash.hexdigest())
                self._hash = new_hash(self.algorithm)
                self._end = min(self._at + self.shard_size, self._size)


class _Whole:
    __slots__ = ("_hash",)

    def __init__(self, algorithm: str) -> None:
        self._hash = new_hash(algorithm)

    def update(self, data: memoryview) -> None:
        self._hash.update(data)

    @property
    def digests(self) -> list[str]:
        return [self._hash.hexdigest()]


class SignedDigester(Digester):
    """A Digester that also computes the digest sets a signature lists.

    The other sets hash each large chunk in a thread of their own while the
    file's sha256 hashes it in the caller's (hashlib releases the GIL), so
    a signature by shards costs a core, not the read's time."""

    __slots__ = ("_pool", "_sets", "_specs")

    def __init__(self, size: int, specs: Sequence[DigestSpec], *, git_blob: bool = False) -> None:
        super().__init__(size, git_blob=git_blob)
        self._specs = tuple(dict.fromkeys(specs))
        self._sets: dict[DigestSpec, _Shards | _Whole] = {
            spec: _Whole(spec.algorithm) if spec.shard_size is None else _Shards(spec, size)
            for spec in self._specs
            if spec != WHOLE_SHA256  # the file's own sha256 is that digest
        }
        self._pool: ThreadPoolExecutor | None = None

    def _update_sets(self, data: memoryview) -> None:
        for digests in self._sets.values():
            digests.update(data)

    def update(self, data: memoryview) -> None:
        if not self._sets or len(data) < _PARALLEL:
            super().update(data)
            self._update_sets(data)
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stcheck-sign-hash")
        beside = self._pool.submit(self._update_sets, data)
        super().update(data)
        beside.result()

    def signed(self) -> dict[str, list[str]]:
        """Each set's digests (a whole file's: one), by the set's label."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        return {
            spec.label: [self.sha256()] if spec == WHOLE_SHA256 else self._sets[spec].digests for spec in self._specs
        }


def make_digester(size: int, specs: Sequence[DigestSpec], *, git_blob: bool) -> Digester:
    """The digester of one read: a SignedDigester when a signature lists the file."""
    return SignedDigester(size, specs, git_blob=git_blob) if specs else Digester(size, git_blob=git_blob)


def tensor_inventory(tensors: Mapping[str, TensorInfo] | None) -> dict[str, list[int]] | None:
    """dtype -> [tensors, parameters] of a file's header, for an inventory
    (the CycloneDX BOM); None when the header did not parse."""
    if tensors is None:
        return None
    counts: dict[str, list[int]] = {}
    for info in tensors.values():
        entry = counts.setdefault(info.dtype, [0, 0])
        entry[0] += 1
        entry[1] += info.numel
    return dict(sorted(counts.items()))
