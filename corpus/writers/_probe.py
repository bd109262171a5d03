# Strategy: the measuring side of corpus/writers/generate.py, run in the
# "loaders" environment as `python _probe.py ROOT PATHS FACTS`.
#
# For every file: whether safetensors 0.8.0 reads it (`deserialize`, all
# tensor bytes), what each installable loader makes of it (the conformance
# adapters in corpus/adapters/, each run once as a fork server: accept,
# reject, crash, or "misread" when it hands back other bytes than 0.8.0),
# and which constructs it holds that a strict-only or warning rule is about.
# For every index and folder: the index constructs (float total_size, the
# variant in its name, names that no shard holds, orphan shards, an empty
# weight_map) and the files that are not safetensors (pickles, ZIPs, code).
#
# The header is parsed here with the standard library only (struct, json
# with an object_pairs_hook to see duplicates): the corpus must not take
# stcheck's word for what a file contains.
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ADAPTERS = REPO / "corpus" / "adapters"
# name -> (adapter script, extra environment): the loaders installed in this environment
LOADERS = {
    "mlx": ("mlx_load.py", {}),
    "tinygrad": ("tinygrad_safe_load.py", {"DEV": "CPU"}),
    "gguf": ("gguf_local.py", {}),
    "huggingface_hub": ("hf_hub_metadata.py", {}),
    "torch-dcp-hf": ("torch_hf_utils.py", {}),
}
BITS = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64,
    "I64": 64, "U64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6,
}  # fmt: skip
# (exponent mask, mantissa mask) of each float dtype's bit pattern, for NaN/Inf
FLOAT_BITS = {"F16": (16, 0x7C00, 0x03FF), "BF16": (16, 0x7F80, 0x007F), "F32": (32, 0x7F800000, 0x007FFFFF)}
_SUSPICIOUS_NAME = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_INDEX_NAME = re.compile(r"^(?P<stem>.+)\.safetensors\.index(?:\.(?P<variant>.+))?\.json$")
_TIE_NAMES = ("lm_head.weight", "embed_out.weight", "output.weight")
# what a pickle, ZIP, ELF or PE file begins with (the ST604 construct)
_EMBEDDED = (b"\x80\x02", b"\x80\x03", b"\x80\x04", b"\x80\x05", b"PK\x03\x04", b"\x7fELF", b"MZ")
_TRAVERSAL = re.compile(r"(?:^|[/\\])\.\.(?:[/\\]|$)")


class Pairs(list):  # type: ignore[type-arg]
    """A JSON object as the list of its (key, value) pairs, duplicates kept."""


def _pairs(items: list[tuple[str, Any]]) -> Pairs:
    return Pairs(items)


def header(data: bytes) -> dict[str, Any]:
    """The header's constructs, measured without stcheck."""
    (n,) = struct.unpack("<Q", data[:8])
    raw = data[8 : 8 + n]
    text = raw.decode("utf-8")
    stripped = text.lstrip(" \t\r\n")
    body = stripped.rstrip(" \t\r\n")
    padding = text[len(text.rstrip(" \t\r\n")) :]
    top = json.loads(text, object_pairs_hook=_pairs)
    names = [k for k, _ in top]
    facts: dict[str, Any] = {
        "header_size": n,
        "header_size_mod_8": n % 8,
        "leading_whitespace": len(text) - len(stripped),
        "padding_bytes": len(padding),
        "padding_kinds": sorted({hex(ord(c)) for c in padding}),
        "duplicate_top_level_keys": sorted({k for k in names if names.count(k) > 1}),
        "json_compact": body == json.dumps(json.loads(body), separators=(",", ":")),
    }
    meta = [v for k, v in top if k == "__metadata__"]
    if not meta:
        facts["metadata"] = "absent"
    elif meta[-1] is None:
        facts["metadata"] = "null"
    elif isinstance(meta[-1], Pairs) and not meta[-1]:
        facts["metadata"] = "empty"
    else:
        keys = [k for k, _ in meta[-1]]
        facts["metadata"] = dict(meta[-1])
        facts["duplicate_metadata_keys"] = sorted({k for k in keys if keys.count(k) > 1})
    tensors = [(k, v) for k, v in top if k != "__metadata__"]
    forms = {"object": 0, "array": 0}
    unknown: set[str] = set()
    dtype_objects = 0
    entries = []
    for name, entry in tensors:
        if isinstance(entry, Pairs):
            forms["object"] += 1
            fields = dict(entry)
            unknown |= set(fields) - {"dtype", "shape", "data_offsets"}
            dtype, shape, offsets = fields["dtype"], fields["shape"], fields["data_offsets"]
        else:
            forms["array"] += 1
            dtype, shape, offsets = entry
        if not isinstance(dtype, str):
            dtype_objects += 1
            dtype = next(iter(dict(dtype)))
        entries.append((name, dtype, list(shape), list(offsets)))
    facts.update(
        tensors=len(entries),
        entry_forms=forms,
        unknown_fields=sorted(unknown),
        dtype_objects=dtype_objects,
        dtypes=sorted({e[1] for e in entries}),
        suspicious_names=[n for n, *_ in entries if n == "" or _SUSPICIOUS_NAME.search(n)],
        odd_names_or_metadata=_odd(entries, facts["metadata"]),
    )
    facts.update(_data_facts(data, 8 + n, entries))
    return facts


def _odd(entries: list[tuple[str, str, list[int], list[int]]], metadata: object) -> list[str]:
    """'..' path components, control characters, very long names or values (the ST605 constructs)."""
    texts = [("name", n) for n, *_ in entries]
    if isinstance(metadata, dict):
        texts += [("metadata", f"{k}={v}") for k, v in metadata.items()]
    odd = []
    for where, text in texts:
        if _TRAVERSAL.search(text) or _SUSPICIOUS_NAME.search(text) or len(text) > 1 << 20:
            odd.append(f"{where}: {text[:60]!r}")
        elif where == "name" and len(text) > 1024:
            odd.append(f"{where}: {len(text)} characters")
    return odd


def _data_facts(data: bytes, start: int, entries: list[tuple[str, str, list[int], list[int]]]) -> dict[str, Any]:
    unaligned, zeros, nan_inf, zero_sized, embedded = [], [], [], [], []
    for name, dtype, shape, (begin, end) in sorted(entries, key=lambda e: e[3]):
        size = BITS[dtype] // 8
        blob = data[start + begin : start + end]
        if end == begin:
            zero_sized.append(name)
            continue
        if size > 1 and (start + begin) % size:
            unaligned.append({"name": name, "dtype": dtype, "absolute_offset": start + begin})
        if blob.count(0) == len(blob):
            zeros.append({"name": name, "dtype": dtype, "shape": shape, "nbytes": len(blob)})
        if dtype in {"U8", "I8"} and blob.startswith(_EMBEDDED):
            embedded.append(name)
        if dtype in FLOAT_BITS or dtype == "F64":
            bad = _nan_inf(blob, dtype)
            if bad:
                nan_inf.append({"name": name, "count": bad})
    region = data[start:]
    tail = len(region) - len(region.rstrip(b"\0"))
    return {
        "unaligned_tensors": unaligned,
        "all_zero_tensors": zeros,
        "nan_inf_tensors": nan_inf,
        "zero_sized_tensors": zero_sized,
        "byte_tensors_with_embedded_magic": embedded,
        "data_bytes": len(region),
        "data_zero_tail_bytes": tail,
    }


def _nan_inf(blob: bytes, dtype: str) -> int:
    if dtype == "F64":
        return sum(1 for (x,) in struct.iter_unpack("<d", blob) if not math.isfinite(x))
    bits, exp, _mant = FLOAT_BITS[dtype]
    fmt = "<H" if bits == 16 else "<I"
    return sum(1 for (x,) in struct.iter_unpack(fmt, blob) if x & exp == exp)


def reference(data: bytes) -> tuple[dict[str, Any], dict[str, str] | None]:
    """safetensors 0.8.0's verdict, and the sha256 of each tensor it returns."""
    import safetensors

    assert safetensors.__version__ == "0.8.0", safetensors.__version__
    try:
        out = safetensors.deserialize(data)
    except Exception as exc:  # noqa: BLE001 - SafetensorError, or whatever 0.8.0 raises
        return {"reads": False, "error": f"{type(exc).__name__}: {exc}"[:300]}, None
    digests = {name: hashlib.sha256(bytes(info["data"])).hexdigest() for name, info in out}
    return {"reads": True, "error": None}, digests


class Server:
    """One conformance adapter run as a fork server (--serve)."""

    def __init__(self, script: str, env: dict[str, str]) -> None:
        full = {**os.environ, **env}
        full["PYTHONPATH"] = os.pathsep.join([str(REPO), full.get("PYTHONPATH", "")])
        cmd = [sys.executable, str(ADAPTERS / script)]
        probe = subprocess.run([*cmd, "--probe"], capture_output=True, text=True, env=full, check=False)
        self.version = json.loads(probe.stdout)["version"] if probe.returncode == 0 else None
        self.why = None if probe.returncode == 0 else (probe.stderr.strip().splitlines() or ["?"])[-1]
        self.proc = None
        if self.version is not None:
            pipe = subprocess.PIPE
            self.proc = subprocess.Popen([*cmd, "--serve"], stdin=pipe, stdout=pipe, text=True, env=full)

    def run(self, path: str, digests: dict[str, str] | None) -> dict[str, Any]:
        assert self.proc is not None
        assert self.proc.stdin is not None
        assert self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"path": path, "timeout": 60, "memory_mb": 4096}) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        if answer["rc"] == 0:
            tensors = json.loads(answer["stdout"])["tensors"]
            got = {t["name"]: t["sha256"] for t in tensors}
            header_only = all(t["sha256"] is None for t in tensors)
            if header_only and digests is not None:  # a header-only loader: compare the names
                got = {n: digests.get(n) for n in got}
            if digests is not None and got != digests:
                wrong = sorted(n for n in set(got) | set(digests) if got.get(n) != digests.get(n))
                return {"result": "misread", "detail": f"differs from 0.8.0 on {wrong[:5]}"}
            return {"result": "accept", **({"detail": "header only"} if header_only and tensors else {})}
        err = answer["stderr"].strip().splitlines()
        line = (err[0] if err else f"signal {answer['signal']}")[:200]
        kind = "reject" if answer["rc"] == 1 else "crash"
        return {"result": kind, "detail": line.replace(f"{path}", "FILE")}

    def close(self) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def index_facts(path: Path) -> dict[str, Any]:
    raw = path.read_text(encoding="utf-8")
    index = json.loads(raw)
    m = _INDEX_NAME.match(path.name)
    variant = m.group("variant") if m else None
    weight_map: dict[str, str] = index.get("weight_map", {})
    meta = index.get("metadata", {})
    total = meta.get("total_size")
    shards = sorted(set(weight_map.values()))
    held: dict[str, set[str]] = {}
    true_size = 0
    missing_files = []
    for shard in shards:
        file = path.parent / shard
        if not file.is_file():
            missing_files.append(shard)
            continue
        data = file.read_bytes()
        (n,) = struct.unpack("<Q", data[:8])
        top = json.loads(data[8 : 8 + n])
        names = {k for k in top if k != "__metadata__"}
        held[shard] = names
        true_size += sum(v["data_offsets"][1] - v["data_offsets"][0] for k, v in top.items() if k != "__metadata__")
    not_stored = sorted(n for n, s in weight_map.items() if s in held and n not in held[s])
    listed = set(shards)
    here = sorted(p.name for p in path.parent.glob("*.safetensors"))
    prefix = f"{m.group('stem')}." if m and variant else f"{m.group('stem')}-" if m else ""
    same_family = [n for n in here if n.startswith(prefix) or n == f"{m.group('stem') if m else ''}.safetensors"]
    return {
        "index_name_variant": variant,
        "index_name_variant_dotted": bool(variant and "." in variant),
        "weight_map_entries": len(weight_map),
        "weight_map_empty": not weight_map,
        "metadata_keys": sorted(meta),
        "total_size": total,
        "total_size_type": type(total).__name__ if total is not None else "absent",
        "total_size_true": true_size if not missing_files else None,
        "shards_listed": shards,
        "shard_files_missing": missing_files,
        "names_listed_not_stored": not_stored,
        "names_listed_not_stored_tie_like": [n for n in not_stored if n.endswith(_TIE_NAMES)],
        "orphan_shards": [n for n in same_family if n not in listed],
    }


_MAGIC = (
    (b"PK\x03\x04", "zip"),
    (b"\x80\x02", "pickle"),
    (b"\x80\x03", "pickle"),
    (b"\x80\x04", "pickle"),
    (b"\x80\x05", "pickle"),
)


def folder_facts(path: Path) -> dict[str, Any]:
    kinds: dict[str, str] = {}
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        head = file.read_bytes()[:8]
        rel = str(file.relative_to(path))
        # A safetensors file's length prefix can begin with the bytes of a pickle protocol mark.
        kind = (
            "safetensors" if file.suffix == ".safetensors" else next((k for m, k in _MAGIC if head.startswith(m)), None)
        )
        if kind == "zip" and b"data.pkl" in file.read_bytes():
            kind = "pytorch-zip-pickle"
        if kind is None:
            kind = {".py": "python", ".json": "json", ".safetensors": "safetensors"}.get(file.suffix, "other")
        kinds[rel] = kind
    pickles = sorted(k for k, v in kinds.items() if "pickle" in v)
    return {
        "file_kinds": kinds,
        "pickles": pickles,
        "python_files": sorted(k for k, v in kinds.items() if v == "python"),
    }


def main() -> int:
    root, request, answer = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    paths = json.loads(request.read_text(encoding="utf-8"))
    servers = {name: Server(script, env) for name, (script, env) in LOADERS.items()}
    facts: dict[str, Any] = {}
    try:
        for rel in paths:
            if rel.endswith("/"):
                facts[rel[:-1]] = folder_facts(root / rel)
                continue
            path = root / rel
            if rel.endswith(".json"):
                facts[rel] = index_facts(path)
                continue
            data = path.read_bytes()
            verdict, digests = reference(data)
            entry: dict[str, Any] = {"safetensors_0_8_0": verdict, "sha256": hashlib.sha256(data).hexdigest()}
            entry["size"] = len(data)
            try:
                entry["constructs"] = header(data)
            except (ValueError, KeyError, TypeError, struct.error) as exc:
                entry["constructs"] = {"unparsable": f"{type(exc).__name__}: {exc}"[:200]}
            loaders = {}
            for name, server in servers.items():
                if server.version is None:
                    loaders[name] = {"result": "unavailable", "detail": server.why}
                else:
                    loaders[name] = {"version": server.version, **server.run(str(path), digests)}
            entry["loaders"] = loaders
            facts[rel] = entry
    finally:
        for server in servers.values():
            server.close()
    answer.write_text(json.dumps(facts), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
