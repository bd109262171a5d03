# Strategy: hostile and unusual headers, side by side with the reference in
# one run.  Each case is written at a target header size (1 MB, 10 MB and
# 100 MB by default) to a temporary file; then, in a fresh child process
# each, `validator.validate(path, profile=...)` for both profiles and the
# reference (`safetensors.safe_open(path, "np").keys()`, safetensors 0.8.0)
# run; a child imports its library, records ru_maxrss as a baseline, and
# reports the best time over its repetitions and its RSS growth.  The
# reference's verdict (accept or reject) must equal the reference
# profile's.  Times are CPU seconds (process_time), best of the
# repetitions: on a shared, loaded machine wall time measures the load.  Run as a script:
#
#     nice python tests/benchmarks/bench_hostile.py [--sizes 1,10,100] [--cases a,b] [--reps 2] [--before OLD_CHECKOUT]
#
# Not collected by pytest (the file name does not start with test_).
from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, resource, sys, time
impl, path, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
if impl == "reference":
    import numpy
    import safetensors
    def run():
        try:
            with safetensors.safe_open(path, "np") as f:
                f.keys()
            return True
        except Exception:
            return False
else:
    import validator
    profile = "reference" if impl == "reference-profile" else impl
    def run():
        return validator.validate(path, profile=profile).valid
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
times, cpu = [], []
for _ in range(reps):
    t, c = time.perf_counter(), time.process_time()
    ok = run()
    times.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"ok": ok, "best": min(cpu), "wall": min(times), "rss_kb": peak - base}))
"""

ENTRY = '"{}":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}}'


def _file(header: bytes, data: bytes = b"") -> bytes:
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + data


def _entries(count: int, name: Callable[[int], str] = "t{}".format) -> str:
    return ",".join(ENTRY.format(name(i), 4 * i, 4 * i + 4) for i in range(count))


def numbers_in_unknown_field(size: int) -> bytes:
    """A flat array of about size/2 numbers in an unknown tensor field (valid in reference)."""
    body = ",".join("0123456789") + ","
    run = body * (size // len(body))
    return _file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[' + run.encode() + b"7]}}", b"\0")


def nested_arrays_in_unknown_field(size: int) -> bytes:
    """Arrays nested 100 deep, repeated, in an unknown field (valid in reference)."""
    unit = "[" * 100 + "1" + "]" * 100 + ","
    return _file(
        b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[' + (unit * (size // len(unit))).encode() + b"1]}}",
        b"\0",
    )


def nesting_128_repeated(size: int) -> bytes:
    """128-deep units repeated; the first unit is already too deep."""
    unit = "[" * 128 + "]" * 128 + ","
    return _file(b'{"x":[' + (unit * (size // len(unit))).encode() + b"1]}")


def _tensor_count(size: int, per: int = 0) -> int:
    """How many entries of the longest spelling fit in ``size`` bytes."""
    k = max(10, size // 60)
    longest = len(ENTRY.format(f"layer-0.\\ud83d\\ude00.{k}", 4 * k, 4 * k + 4)) + 1 + per
    return max(10, size // longest)


def unknown_dtype_in_middle(size: int) -> bytes:
    """One unknown dtype in the middle of many tensors."""
    k = _tensor_count(size)
    text = "{" + _entries(k) + "}"
    mid = text.find('"F32"', len(text) // 2)
    return _file((text[:mid] + '"X9"' + text[mid + 5 :]).encode(), b"\0" * (4 * k))


def stray_bytes_after_last(size: int) -> bytes:
    """Two stray bytes after the last of many tensors."""
    k = _tensor_count(size)
    return _file(("{" + _entries(k) + "}").encode(), b"\0" * (4 * k + 2))


def names_minus_zero_surrogates(size: int) -> bytes:
    """Valid tensors whose names hold `-0` and an escaped surrogate pair."""
    k = _tensor_count(size)
    text = "{" + _entries(k, "layer-0.\\ud83d\\ude00.{}".format) + "}"
    return _file(text.encode(), b"\0" * (4 * k))


def metadata_escaped_string(size: int) -> bytes:
    """A metadata string of `\\u00e9` escapes (valid)."""
    value = "\\u00e9" * (size // 6)
    text = '{"__metadata__":{"k":"' + value + '"},' + _entries(1) + "}"
    return _file(text.encode(), b"\0" * 4)


def duplicate_metadata_keys(size: int) -> bytes:
    """About size/8 duplicate metadata keys (valid in reference)."""
    pairs = '"k":"v",' * (size // 8)
    return _file(('{"__metadata__":{' + pairs + '"k":"v"},' + _entries(1) + "}").encode(), b"\0" * 4)


def duplicate_tensor_names(size: int) -> bytes:
    """About size/52 definitions of one tensor name (valid in reference)."""
    k = max(10, size // 53)
    return _file(("{" + ",".join([ENTRY.format("a", 0, 4)] * k) + "}").encode(), b"\0" * 4)


def unknown_fields_in_one_entry(size: int) -> bytes:
    """About size/8 unknown fields in one entry (valid in reference)."""
    fields = '"k":1,' * (size // 6)
    return _file(('{"a":{' + fields + '"dtype":"U8","shape":[1],"data_offsets":[0,1]}}').encode(), b"\0")


def shape_of_ones(size: int) -> bytes:
    """A shape of about size/2 ones (valid)."""
    dims = ",".join(["1"] * (size // 2))
    return _file(('{"a":{"dtype":"U8","shape":[' + dims + '],"data_offsets":[0,1]}}').encode(), b"\0")


def empty_arrays_in_unknown_field(size: int) -> bytes:
    """`[[],[],...]`: about size/3 empty arrays in an unknown field (valid in reference)."""
    return _file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":[' + b"[]," * (size // 3) + b"[]]}}", b"\0")


def valid_canonical(size: int) -> bytes:
    """Many valid tensors, the reference serializer's layout (the fast tier)."""
    k = _tensor_count(size)
    return _file(("{" + _entries(k) + "}").encode(), b"\0" * (4 * k))


def valid_spaced(size: int) -> bytes:
    """Many valid tensors with ', ' and ': ' separators."""
    k = _tensor_count(size, 12)
    return _file(
        json.dumps(
            {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(k)}
        ).encode(),
        b"\0" * (4 * k),
    )


def padding_spaces(size: int) -> bytes:
    """One tensor, then about ``size`` bytes of space padding (valid)."""
    return _file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}' + b" " * size, b"\0")


def long_metadata_string(size: int) -> bytes:
    """One metadata string of about ``size`` plain bytes (valid)."""
    text = b'{"__metadata__":{"k":"' + b"x" * size + b'"},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    return _file(text, b"\0")


def long_unknown_string(size: int) -> bytes:
    """One string of about ``size`` bytes in an unknown tensor field (valid in reference)."""
    return _file(b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":"' + b"x" * size + b'"}}', b"\0")


def long_name(size: int) -> bytes:
    """One tensor whose name is about ``size`` bytes long (valid)."""
    return _file(b'{"' + b"x" * size + b'":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', b"\0")


CASES: dict[str, Callable[[int], bytes]] = {
    f.__name__: f
    for f in (
        numbers_in_unknown_field,
        nested_arrays_in_unknown_field,
        nesting_128_repeated,
        unknown_dtype_in_middle,
        stray_bytes_after_last,
        names_minus_zero_surrogates,
        metadata_escaped_string,
        duplicate_metadata_keys,
        duplicate_tensor_names,
        unknown_fields_in_one_entry,
        shape_of_ones,
        empty_arrays_in_unknown_field,
        valid_canonical,
        valid_spaced,
        padding_spaces,
        long_metadata_string,
        long_unknown_string,
        long_name,
    )
}


def measure(impl: str, path: Path, reps: int, root: Path = ROOT, timeout: float = 3600) -> dict[str, Any]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, impl, str(path), str(reps)],
            capture_output=True,
            text=True,
            env=env,
            cwd=root,  # `python -c` puts the working directory first on sys.path
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"ok": None, "best": float("nan"), "rss_kb": float("nan"), "error": f"over {timeout:.0f} s"}
    if proc.returncode:
        return {"ok": None, "best": float("nan"), "rss_kb": float("nan"), "error": proc.stderr[-300:]}
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def main() -> None:
    if sys.argv[1:2] == ["--write"]:
        Path(sys.argv[4]).write_bytes(CASES[sys.argv[2]](int(sys.argv[3])))
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1,10,100", help="header sizes in MB, comma-separated")
    parser.add_argument("--cases", default="", help="case names, comma-separated (default: all)")
    parser.add_argument("--reps", type=int, default=2, help="repetitions per child (1 for 100 MB)")
    parser.add_argument("--root", type=Path, default=ROOT, help="checkout whose validator is 'ours' (an older one)")
    parser.add_argument(
        "--before", type=Path, help="another checkout, measured in the same run (its 'time x' beside ours)"
    )
    parser.add_argument("--timeout", type=float, default=3600, help="seconds before a child is given up")
    args = parser.parse_args()
    names = args.cases.split(",") if args.cases else list(CASES)
    before = " before x" if args.before else ""
    print(
        f"{'case':32} {'MB':>4} {'ref cpu s':>9} {'strict':>8} {'ref-prof':>8} {'time x':>6}{before}"
        f" {'ref MB':>7} {'ours MB':>8} {'RSS x':>6} verdict"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for mb in (int(x) for x in args.sizes.split(",")):
            for name in names:
                path = Path(tmp) / f"{name}.safetensors"
                # Written in a child so this process stays small (ru_maxrss is inherited).
                # 98% of the size: a "100 MB" header must stay under the 10^8 limit.
                subprocess.run([sys.executable, __file__, "--write", name, str(mb * 980_000), str(path)], check=True)
                reps = 1 if mb >= 50 else args.reps
                ref = measure("reference", path, reps)
                strict = measure("strict", path, reps, args.root, args.timeout)
                refp = measure("reference-profile", path, reps, args.root, args.timeout)
                old = ""
                if args.before:
                    was = [measure(p, path, reps, args.before, args.timeout) for p in ("strict", "reference-profile")]
                    old = f" {max(was[0]['best'], was[1]['best']) / ref['best']:9.2f}"
                path.unlink()
                worst_t = max(strict["best"], refp["best"]) / ref["best"]
                ours_mb = max(strict["rss_kb"], refp["rss_kb"]) / 1024
                ref_mb = ref["rss_kb"] / 1024
                rss_x = ours_mb / ref_mb if ref_mb > 1 else float("nan")
                agree = "same" if refp.get("ok") == ref.get("ok") else f"DIFFERENT {refp} {ref}"
                print(
                    f"{name:32} {mb:>4} {ref['best']:9.3f} {strict['best']:8.3f} {refp['best']:8.3f} {worst_t:6.2f}{old}"
                    f" {ref_mb:7.1f} {ours_mb:8.1f} {rss_x:6.2f} {agree} (ref {'accepts' if ref['ok'] else 'rejects'})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
