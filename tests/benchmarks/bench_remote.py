# Strategy: the three targets of remote checks, measured against the test
# servers (tests/remote_servers.py) on 127.0.0.1, the server in a child
# process so that it does not share the client's interpreter lock.
#   1. A remote check of a 1 GiB file (synthesized, never on disk): bytes the
#      server sent, against the bound header + 64 KiB.
#   2. A 100-shard remote index with LATENCY added to every request: wall time
#      at concurrency 1 and 16, against the bound
#      (1 index + shards / concurrency) round trips x latency.
#   3. `download` (sha256 + deep checks + write) against a plain streaming
#      download (urllib3, 1 MiB reads, write) of the same file from the same
#      server: throughput ratio, best of --repeat; unpaced (loopback, the
#      server and client sharing the cores) and with the server paced to each
#      link rate of --links (Gbit/s), as a real network would.
#
#   python tests/benchmarks/bench_remote.py [--size-mib 512] [--latency 0.05] [--repeat 3] [--links 1,4]
#
# Not collected by pytest (bench_*.py).
from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing as mp
import os
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.remote_servers import Server, from_bytes, synthesized  # noqa: E402


def header(entries: dict[str, object]) -> bytes:
    raw = json.dumps(entries).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def serve(conn: object, big_file: str, latency: float) -> None:
    import numpy as np  # noqa: F401 - keeps the child's import cost out of the timings

    size = 1 << 30
    big = header({"w": {"dtype": "U8", "shape": [size], "data_offsets": [0, size]}})
    with Server() as s:
        s.site.resources["/big.safetensors"] = synthesized(big, len(big) + size)
        data = Path(big_file).read_bytes()
        s.site.resources["/dl.safetensors"] = from_bytes(data)
        weight_map = {}
        for i in range(100):
            name = f"model-{i + 1:05d}-of-00100.safetensors"
            head = header({f"layer.{i}": {"dtype": "F32", "shape": [256], "data_offsets": [0, 1024]}})
            s.site.resources[f"/ckpt/{name}"] = synthesized(head, len(head) + 1024)
            weight_map[f"layer.{i}"] = name
        index = {"metadata": {"total_size": 100 * 1024}, "weight_map": weight_map}
        s.site.resources["/ckpt/model.safetensors.index.json"] = from_bytes(json.dumps(index).encode())
        conn.send(s.url)  # type: ignore[attr-defined]
        while True:
            msg = conn.recv()  # type: ignore[attr-defined]
            if msg == "sent":
                conn.send(dict(s.site.sent))  # type: ignore[attr-defined]
                s.site.sent.clear()
            elif msg == "latency-on":
                s.site.latency = latency
                conn.send("ok")  # type: ignore[attr-defined]
            elif msg == "latency-off":
                s.site.latency = 0.0
                conn.send("ok")  # type: ignore[attr-defined]
            elif isinstance(msg, tuple) and msg[0] == "rate":
                s.site.rate = msg[1]
                conn.send("ok")  # type: ignore[attr-defined]
            else:
                return


def make_download_file(path: Path, size_mib: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    per = 16 << 20
    n = max(1, (size_mib << 20) // per)
    entries = {
        f"t{i}": {"dtype": "F32", "shape": [per // 4], "data_offsets": [i * per, (i + 1) * per]} for i in range(n)
    }
    with path.open("wb") as fh:
        fh.write(header(entries))
        for _ in range(n):
            fh.write(rng.standard_normal(per // 4, dtype=np.float32).tobytes())


def plain_download(url: str, dest: str) -> None:
    import urllib3

    http = urllib3.PoolManager()
    resp = http.request("GET", url, preload_content=False)
    with open(dest, "wb") as fh:  # noqa: PTH123
        while True:
            chunk = resp.read1(1 << 20)
            if not chunk:
                break
            fh.write(chunk)
    resp.release_conn()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mib", type=int, default=512)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--links", default="1,4", help="link rates in Gbit/s to pace the server to (besides unpaced)")
    args = parser.parse_args()
    from validator.remote import Options, download, validate_remote_index, validate_url

    with tempfile.TemporaryDirectory() as tmp:
        big_file = Path(tmp) / "dl.safetensors"
        make_download_file(big_file, args.size_mib)
        parent, child = mp.Pipe()
        proc = mp.get_context("fork").Process(target=serve, args=(child, str(big_file), args.latency), daemon=True)
        proc.start()
        url = parent.recv()
        try:
            report = validate_url(url + "/big.safetensors")
            parent.send("sent")
            sent = sum(parent.recv().values())
            bound = report.data_start + 64 * 1024
            print("## 1. remote check of a 1 GiB file")
            print(f"valid={report.valid}; server sent {sent:,} bytes; bound header + 64 KiB = {bound:,} bytes")

            print(f"\n## 2. 100-shard remote index, {args.latency * 1000:.0f} ms added per request")
            parent.send("latency-on")
            parent.recv()
            print("| concurrency | wall | bound (1 + 100/c) x latency | ratio |")
            print("|---:|---:|---:|---:|")
            for conc in (1, 16, 32):
                start = time.perf_counter()
                index = validate_remote_index(
                    url + "/ckpt/model.safetensors.index.json", options=Options(concurrency=conc)
                )
                wall = time.perf_counter() - start
                assert index.valid, index.findings[:3]
                bound_s = (1 + -(-100 // conc)) * args.latency
                print(f"| {conc} | {wall:.2f} s | {bound_s:.2f} s | {wall / bound_s:.2f} |")
            parent.send("latency-off")
            parent.recv()

            print(f"\n## 3. download of a {args.size_mib} MiB file")
            size = big_file.stat().st_size
            digest = hashlib.sha256(big_file.read_bytes()).hexdigest()
            print(
                "| link | plain streaming download (urllib3, write) | stcheck download (sha256 + deep + write) | ratio |"
            )
            print("|---|---:|---:|---:|")
            for gbit in [0.0, *(float(x) for x in args.links.split(",") if x)]:
                parent.send(("rate", gbit * 1e9 / 8))
                parent.recv()
                plain, ours = [], []
                for _ in range(args.repeat):
                    dest = Path(tmp) / "plain.bin"
                    start = time.perf_counter()
                    plain_download(url + "/dl.safetensors", str(dest))
                    plain.append(time.perf_counter() - start)
                    dest.unlink()
                    out = Path(tmp) / "out"
                    start = time.perf_counter()
                    done = download(url + "/dl.safetensors", str(out), sha256=digest, deep=True)
                    ours.append(time.perf_counter() - start)
                    assert done[0].sha256 == digest
                    (out / "dl.safetensors").unlink()
                p, o = min(plain), min(ours)
                link = f"{gbit:g} Gbit/s" if gbit else "unpaced loopback"
                mib = 2**20
                print(
                    f"| {link} | {p:.2f} s, {size / p / mib:,.0f} MiB/s | {o:.2f} s, {size / o / mib:,.0f} MiB/s | {p / o:.2f} |"
                )
        finally:
            parent.send("stop")
            proc.join(10)
            if proc.is_alive():
                os.kill(proc.pid, 9)


if __name__ == "__main__":
    main()
