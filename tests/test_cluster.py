# `stcheck scan --cluster`: the same 500 mixed files give the same JSON
# report locally, on local:2, on a cluster of separate `dask scheduler` and
# `dask worker` processes, and from a warm cache; a worker killed mid-scan
# loses and doubles nothing; a scheduler that goes away ends the scan with
# exit 2 and a cache that resumes; a --deep scan of a large file split by
# tensor range equals the whole-file scan.
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_fixtures import mixed_tree, normalised
from scan_fixtures import build, f32, pickle_payload, sha256, write

from validator.cli.main import main
from validator.pipeline.engine import Job, Options, scan_file
from validator.pipeline.ranges import Plan, cut, plan, scan_split
from validator.read.integrity import Expected

distributed = pytest.importorskip(
    "distributed", reason="the cluster tests need dask[distributed]: pip install '.[cluster]' from this checkout"
)

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def scan(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["scan", "--progress", "never", "--no-config", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dask() -> list[str]:
    script = BIN / "dask"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dask"]


def _stop(proc: subprocess.Popen) -> None:
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def external_cluster(workers: int):
    """A `dask scheduler` and `dask worker` processes on 127.0.0.1."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": ENV}
    sched = subprocess.Popen(
        [*_dask(), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet
    )
    worker = subprocess.Popen(
        [
            *_dask(),
            "worker",
            address,
            "--nworkers",
            str(workers),
            "--nthreads",
            "1",
            "--host",
            "127.0.0.1",
            "--no-dashboard",
            "--death-timeout",
            "60",
        ],
        **quiet,
    )
    try:
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address, sched
    finally:
        for proc in (worker, sched):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in (worker, sched):
            _stop(proc)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    files = mixed_tree(root, copies=2)
    assert len(files) >= 500
    return root


def _without_clock(text: str) -> str:
    doc = json.loads(text)
    doc["summary"].pop("seconds")
    return json.dumps(doc, indent=2)


def test_local_cluster_external_cluster_and_warm_cache_agree(tree, tmp_path, capsys):
    argv = ["--format", "json", "--deep", str(tree)]
    rc, local, _ = scan(capsys, "--jobs", "2", *argv)
    assert rc == 1
    doc = json.loads(local)
    assert doc["summary"]["files"] >= 500
    assert doc["summary"]["valid"] > 50
    assert doc["summary"]["invalid"] > 100
    assert doc["summary"]["findings_by_rule"].get("ST601 tensor-nan-inf")
    rc2, on_local2, _ = scan(capsys, "--cluster", "local:2", *argv)
    assert rc2 == 1
    assert _without_clock(on_local2) == _without_clock(local)
    db = str(tmp_path / "c.db")
    with external_cluster(2) as (address, _):
        rc3, external, err = scan(capsys, "--cluster", address, "--cache", db, *argv)
        assert rc3 == 1
        assert _without_clock(external) == _without_clock(local)
        n = doc["summary"]["files"]
        assert f"0 of {n} files unchanged and not read again; {n} stored" in err
        rc4, warm, err = scan(capsys, "--cluster", address, "--cache", db, *argv)
    assert rc4 == 1
    assert f"{doc['summary']['files']} of {doc['summary']['files']} files unchanged" in err
    assert normalised(warm) == normalised(local)
    assert all(f["cached"] for f in json.loads(warm)["files"])


def test_a_worker_killed_mid_scan_loses_and_doubles_nothing(tree):
    from validator.pipeline.cluster import scan_with_client

    paths = sorted(str(p) for p in tree.rglob("*.safetensors"))
    jobs = [Job(p, ((p, None),)) for p in paths]
    options = Options(deep=True, chunk_size=4096)
    expected = [scan_file(job, options).to_json() for job in jobs]
    seen: list[int] = []
    killed: list[str] = []
    with external_cluster(2) as (address, _), distributed.Client(address, timeout=60) as client:
        pids = client.run(os.getpid)

        def on_result(i, result):
            seen.append(i)
            if killed or len(seen) < 40:
                return
            busy = [addr for addr, keys in client.processing().items() if keys]
            if busy:
                killed.append(busy[0])
                os.kill(pids[busy[0]], signal.SIGKILL)

        results = scan_with_client(client, jobs, options, on_result=on_result)
    assert killed, "no worker was busy when the scan reached 40 results"
    assert sorted(seen) == list(range(len(jobs)))  # each file once
    got = [r.to_json() for r in results]
    for r in got + expected:
        r.pop("bytes_read")
    assert got == expected


def test_a_scheduler_that_goes_away_is_exit_2_and_the_cache_resumes(tree, tmp_path):
    db = tmp_path / "c.db"
    # Work left after the first 20 results, whatever the machine's speed: a
    # few 16 MiB files read 4 KiB at a time keep the one worker busy for seconds.
    big = tmp_path / "big"
    big.mkdir()
    block = f32(*([0.5] * (1 << 12))) * (1 << 10)
    for i in range(6):
        write(big / f"big{i}.safetensors", build([("w", "F32", [1 << 22], block)]))
    with external_cluster(1) as (address, sched):
        argv = [sys.executable, "-m", "validator", "scan", "--no-config", "--progress", "never"]
        argv += ["--deep", "--chunk-size", "4096", "--format", "json", "--cache", str(db)]
        proc = subprocess.Popen(
            [*argv, "--cluster", address, str(tree), str(big)],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            with contextlib.suppress(sqlite3.Error), sqlite3.connect(db, timeout=5) as conn:
                if conn.execute("SELECT count(*) FROM stcheck_results").fetchone()[0] >= 20:
                    break
            time.sleep(0.02)
        assert proc.poll() is None, "the scan finished before the scheduler could be stopped"
        sched.send_signal(signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err[-2000:]
    assert out == ""
    assert f"stcheck scan: the Dask scheduler at {address} went away after " in err
    assert "results already finished are kept in the --cache, and a re-run resumes from there" in err
    assert "Traceback" not in err
    with sqlite3.connect(db) as conn:
        kept = conn.execute("SELECT count(*) FROM stcheck_results").fetchone()[0]
    assert kept >= 20
    again = subprocess.run(
        [*argv, str(tree), str(big)], env=ENV, capture_output=True, text=True, timeout=300, check=False
    )
    assert again.returncode == 1
    assert f"{kept} of " in again.stderr


def test_unreachable_scheduler_and_bad_addresses_are_usage_errors(tmp_path, capsys):
    path = str(write(tmp_path / "a.safetensors", build([("w", "F32", [1], f32(1.0))])))
    port = _free_port()
    rc, out, err = scan(capsys, "--cluster", f"tcp://127.0.0.1:{port}", path)
    assert rc == 2
    assert out == ""
    assert err.startswith(f"stcheck scan: cannot reach the Dask scheduler at tcp://127.0.0.1:{port}: ")
    assert err.count("\n") == 1
    for bad in ("local:0", "local:x", "127.0.0.1:8786", "http://x:1"):
        rc, _, err = scan(capsys, "--cluster", bad, path)
        assert rc == 2
        assert err.startswith(f"stcheck scan: --cluster {bad}: ")


# -- tensor-range splitting --------------------------------------------------

MIB = 1 << 20


def _split_cases() -> dict[str, bytes]:
    nan = f32(float("nan")) * (MIB // 4)
    ones = f32(1.0) * (MIB // 4)
    zeros = bytes(MIB)
    payload = pickle_payload()
    payload += bytes(MIB - len(payload))
    return {
        "clean": build([(f"t{k}", "F32", [MIB // 4], ones) for k in range(6)]),
        "nan_and_pickle_in_middle_ranges": build(
            [("a", "F32", [MIB // 4], ones), ("b", "F32", [MIB // 4], nan), ("c", "U8", [MIB], payload)]
            + [(f"d{k}", "F32", [MIB // 4], ones) for k in range(3)]
        ),
        # The zero tail starts two ranges before the last one.
        "zero_tail_spans_ranges": build(
            [("a", "F32", [MIB // 4], ones), ("b", "F32", [MIB // 4], ones[:-4] + f32(0.0))]
            + [(f"z{k}", "F32", [MIB // 4], zeros) for k in range(4)]
        ),
        "zero_tail_in_last_range": build(
            [(f"a{k}", "F32", [MIB // 4], ones) for k in range(5)] + [("z", "F32", [MIB // 2], ones + zeros)]
        ),
        "all_zero": build([(f"z{k}", "F32", [512, 512], zeros) for k in range(6)]),  # whole zeroed matrices: ST602
        "with_empty_tensors": build(
            [("a", "F32", [MIB // 4], ones), ("e0", "F32", [0], b""), ("b", "F32", [MIB // 4], ones)]
            + [(f"c{k}", "F32", [MIB // 4], ones) for k in range(3)]
            + [("e1", "U8", [0], b"")],
            metadata={"path": "../../etc/passwd"},
        ),
    }


@pytest.mark.parametrize("name", sorted(_split_cases()))
def test_split_deep_scan_equals_the_whole_file_scan(tmp_path, name):
    data = _split_cases()[name]
    path = write(tmp_path / f"{name}.safetensors", data)
    job = Job(str(path), ((str(path), None),))
    for options in (
        Options(deep=True, chunk_size=64 << 10),
        Options(deep=True, chunk_size=64 << 10, sha256="0" * 64),
        Options(deep=True, chunk_size=64 << 10, sha256=sha256(data)),
    ):
        first = plan(job, options, MIB)
        assert isinstance(first, Plan), "the file was not split"
        assert len(first.ranges) >= 3
        assert scan_split(job, options, MIB).to_json() == scan_file(job, options).to_json()


def test_ranges_cover_the_data_region_exactly():
    from validator._findings import TensorInfo

    tensors = [(f"t{k}", TensorInfo("U8", (10,), (10 * k, 10 * k + 10))) for k in range(10)]
    ranges = cut(tensors, 100, 200, 25)
    assert [(b, e) for b, e, _ in ranges] == [(100, 130), (130, 160), (160, 190), (190, 200)]
    assert [list(g) for _, _, g in ranges] == [["t0", "t1", "t2"], ["t3", "t4", "t5"], ["t6", "t7", "t8"], ["t9"]]


def test_small_or_invalid_files_are_not_split(tmp_path):
    ones = f32(1.0) * (MIB // 4)
    small = write(tmp_path / "small.safetensors", build([("a", "F32", [MIB // 4], ones)]))
    truncated = write(tmp_path / "cut.safetensors", build([(f"t{k}", "F32", [MIB // 4], ones) for k in range(4)])[:-1])
    options = Options(deep=True)
    for path in (small, truncated):
        job = Job(str(path), ((str(path), None),))
        assert plan(job, options, MIB).to_json() == scan_file(job, options).to_json()


def test_split_scan_on_a_cluster_matches_and_checks_digests(tmp_path):
    from validator.pipeline.cluster import scan_with_client

    cases = _split_cases()
    jobs, wanted = [], []
    for name, data in sorted(cases.items()):
        path = str(write(tmp_path / f"{name}.safetensors", data))
        jobs.append(Job(path, ((path, None),)))
    table = {os.path.realpath(jobs[0].path): Expected("sha256", "0" * 64, "SUMS:1")}
    options = Options(deep=True, chunk_size=64 << 10, checksums=table)
    wanted = [scan_file(job, options).to_json() for job in jobs]
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc,
        distributed.Client(lc) as client,
    ):
        got = [r.to_json() for r in scan_with_client(client, jobs, options, split_bytes=MIB)]
    assert got == wanted
    assert [f["rule"] for f in got[0]["findings"]][-1] == "checksum-mismatch"
    assert all(f["rule"] == "checksum-missing" for r in got[1:] for f in r["findings"][-1:])


def test_timeouts_and_the_progress_bar_on_a_cluster(tmp_path, capsys):
    slow = write(tmp_path / "d" / "slow.safetensors", build([("w", "F32", [MIB], f32(1.0) * MIB)]))
    write(tmp_path / "d" / "quick.safetensors", build([("w", "F32", [1], f32(1.0))]))
    rc, out, err = scan(
        capsys,
        "--cluster",
        "local:1",
        "--deep",
        "--chunk-size",
        "4096",
        "--timeout-per-file",
        "0.001",
        "--progress",
        "always",
        str(tmp_path / "d"),
    )
    assert rc == 1
    assert f"{slow}: ST620 scan-timeout the scan did not finish within 0.001 s" in out
    assert "Traceback" not in err


def test_the_cluster_bar_counts_files_bytes_and_workers():
    from validator.pipeline.cluster import _Bar

    class FakeClient:
        def nthreads(self):
            return {"tcp://a": 1, "tcp://b": 1}

    bar = _Bar(1000, 5, FakeClient())
    try:
        bar.advance(300, 1)
        bar.advance(200, 2)
        task = bar.progress.tasks[0]
        assert task.completed == 500
        assert task.total == 1000
        assert task.fields["count"] == "3/5"
        assert task.fields["workers"] == 2
    finally:
        bar.close()
