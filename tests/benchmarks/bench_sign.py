# Strategy: what verifying an OpenSSF model signature costs a deep scan, side
# by side in one run, in two parts.
#   1. The read.  `scan_file` (the scan's worker) on one ~1 GB safetensors
#      file of random values (as bench_scan.py makes it) with --deep, in
#      this process, interleaved, best of --repeat: without signed digests,
#      then with the digests a signature lists (sha256 by files: the scan's
#      own sha256; sha256 by shards of 256 MiB; blake2b by files).  This is
#      the per-byte cost, and the bytes each pass read.
#   2. The command.  `stcheck scan --deep` of a folder holding that file, in
#      child processes, alone and with its signature verified (by files, by
#      shards), and the same for a folder of two small files: the latter's
#      difference is the fixed cost of a verification (importing
#      model_signing and sigstore, checking the signature), which does not
#      grow with the model.
# `model_signing verify` (the library hashing the folder itself, a second
# read after any scan) is timed for reference.
#
#   python tests/benchmarks/bench_sign.py [--size-mib 1024] [--repeat 3]
#
# Not collected by pytest (bench_*.py).
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_scan import make_file, measure  # noqa: E402 - after the path is set
from tests.sign_fixtures import ec_keys, sign_with_key  # noqa: E402 - as above
from validator.pipeline.engine import Job, Options, scan_file  # noqa: E402 - as above
from validator.signing.signhash import WHOLE_SHA256, DigestSpec  # noqa: E402 - as above

SHARD = 256 << 20
READS = (
    ("deep scan", ()),
    ("deep scan + sha256 by files", (WHOLE_SHA256,)),
    ("deep scan + sha256 by shards", (DigestSpec("sha256", SHARD),)),
    ("deep scan + blake2b by files", (DigestSpec("blake2b"),)),
)


def part_one(path: Path, repeat: int) -> None:
    size = path.stat().st_size
    best: dict[str, tuple[float, int]] = {}
    for _ in range(repeat):
        for name, specs in READS:
            job = Job(str(path), ((str(path), None),), digests=specs)
            started = time.perf_counter()
            result = scan_file(job, Options(deep=True))
            seconds = time.perf_counter() - started
            assert result.error is None, result.error
            assert result.valid
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, result.bytes_read)
    base = best[READS[0][0]][0]
    mib = size / 2**20
    print(f"\n1. the read: {size} bytes ({mib:.0f} MiB), scan_file in this process, best of {repeat}, interleaved")
    print(f"{'pass':32} {'seconds':>8} {'MiB/s':>8} {'vs deep scan':>13} {'bytes read':>12}")
    for name, (seconds, read) in best.items():
        print(f"{name:32} {seconds:8.2f} {mib / seconds:8.0f} {seconds / base:12.3f}x {read / size:11.2f}x")


def part_two(work: Path, path: Path, repeat: int) -> None:
    keys = ec_keys(work)
    folder = work / "model"
    folder.mkdir()
    shutil.move(str(path), folder / "model.safetensors")
    (folder / "config.json").write_text('{"model_type": "bench"}\n')
    files_sig = sign_with_key(folder, keys, signature=work / "files.sig")
    shards_sig = sign_with_key(folder, keys, signature=work / "shards.sig", shard_size=SHARD)
    tiny = work / "tiny"
    tiny.mkdir()
    shutil.copy(ROOT / "tests" / "data" / "valid" / "two_tensors_with_metadata.safetensors", tiny / "m.safetensors")
    (tiny / "config.json").write_text("{}\n")
    tiny_sig = sign_with_key(tiny, keys, signature=work / "tiny.sig")
    py = sys.executable
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    scan = [py, "-m", "validator", "scan", "--progress", "never", "--no-config", "--deep"]
    key = ["--public-key", str(keys.public)]
    runs = [
        ("scan --deep", [*scan, str(folder)]),
        ("scan --deep, signed by files", [*scan, *key, "--signature", str(files_sig), str(folder)]),
        ("scan --deep, signed by shards", [*scan, *key, "--signature", str(shards_sig), str(folder)]),
        ("tiny folder: scan --deep", [*scan, str(tiny)]),
        ("tiny folder: scan --deep, signed", [*scan, *key, "--signature", str(tiny_sig), str(tiny)]),
    ]
    cli = shutil.which("model_signing") or str(Path(py).parent / "model_signing")
    if Path(cli).exists():
        verify = [cli, "verify", "key", str(folder), "--signature", str(files_sig), "--public_key", str(keys.public)]
        runs.append(("model_signing verify key", verify))
    results = [measure(name, argv, env) for _ in range(repeat) for name, argv in runs]
    best: dict[str, dict[str, object]] = {}
    for r in results:
        name = str(r["tool"])
        if name not in best or float(r["seconds"]) < float(best[name]["seconds"]):  # type: ignore[arg-type]
            best[name] = r
    seconds = {name: float(r["seconds"]) for name, r in best.items()}  # type: ignore[arg-type]
    base = seconds["scan --deep"]
    print(f"\n2. the command: child processes, default -j, warm page cache, best of {repeat}, interleaved")
    print(f"{'run':34} {'seconds':>8} {'vs scan --deep':>15} {'peak RSS MiB':>13} {'rc':>3}")
    for name, r in best.items():
        ratio = "" if name.startswith("tiny") else f"{seconds[name] / base:14.3f}x"
        print(f"{name:34} {seconds[name]:8.2f} {ratio:>15} {float(r['peak_rss_mib']):13.0f} {r['rc']:>3}")  # type: ignore[arg-type]
    fixed = seconds["tiny folder: scan --deep, signed"] - seconds["tiny folder: scan --deep"]
    print(f"fixed cost of a verification (tiny folder, signed - unsigned): {fixed:+.2f} s")
    for name, r in best.items():
        print(f"-- {name}: {r['tail'][-1:]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="stcheck-bench-sign-"))
    try:
        path = work / "model.safetensors"
        print(f"generating {args.size_mib} MiB at {path} ...", flush=True)
        make_file(path, args.size_mib)
        with path.open("rb") as fh:  # warm the page cache
            while fh.read(64 << 20):
                pass
        part_one(path, args.repeat)
        part_two(work, path, args.repeat)
    finally:
        shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
