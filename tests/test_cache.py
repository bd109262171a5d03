# `stcheck scan --cache`: what is a hit, what misses, what is never stored,
# concurrent writers, a killed run that resumes, and the same behaviour on a
# PostgreSQL server the tests start themselves.
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from cluster_fixtures import mixed_tree, normalised, postgres_server
from scan_fixtures import build, clean_file, f32, nan_inf_file, write

from validator.cli.main import main
from validator.config.policy import parse_policy
from validator.pipeline import engine
from validator.pipeline.cache import (
    Lookup,
    cacheable,
    decode,
    encode,
    local_identity,
    open_cache,
    remote_identity,
)
from validator.pipeline.engine import Job, Options, run_jobs, scan_file
from validator.pipeline.judge import judge
from validator.pipeline.runner import timed_scan, timeout_result

ROOT = Path(__file__).resolve().parent.parent


def scan(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["scan", "--progress", "never", "--no-config", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.fixture(scope="session")
def pg_server():
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def cache_url(request, tmp_path):
    if request.param == "sqlite":
        return str(tmp_path / "results.db")
    url = request.getfixturevalue("pg_server")
    if url.startswith("skip: "):
        pytest.skip(f"no PostgreSQL server: {url[6:]}")
    import psycopg

    name = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(url, autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    return url.rsplit("/", 1)[0] + "/" + name


def test_warm_scan_replays_identical_results_marked_cached(tmp_path, capsys, cache_url):
    tree = tmp_path / "tree"
    files = mixed_tree(tree, copies=1)
    rc_plain, plain, _ = scan(capsys, "--format", "json", "--deep", str(tree))
    rc_cold, cold, err_cold = scan(capsys, "--format", "json", "--deep", "--cache", cache_url, str(tree))
    sarif = tmp_path / "warm.sarif"
    rc_warm, warm, err_warm = scan(
        capsys, "--format", "json", "--deep", "--cache", cache_url, "--sarif", str(sarif), str(tree)
    )
    assert rc_plain == rc_cold == rc_warm == 1
    assert normalised(plain) == normalised(cold) == normalised(warm)
    assert f"0 of {len(files)} files unchanged" in err_cold
    assert f"{len(files)} of {len(files)} files unchanged and not read again; 0 stored" in err_warm
    warm_doc = json.loads(warm)
    assert all(f["cached"] is True and f["bytes_read"] == 0 for f in warm_doc["files"])
    assert "cached" not in json.loads(cold)["files"][0]
    assert warm_doc["summary"]["bytes_scanned"] == 0
    results = json.loads(sarif.read_text())["runs"][0]["results"]
    assert results
    assert all(r["properties"]["cached"] is True for r in results)


def test_a_changed_file_is_read_again_and_only_it(tmp_path, capsys):
    db = str(tmp_path / "c.db")
    a = write(tmp_path / "d" / "a.safetensors", clean_file())
    b = write(tmp_path / "d" / "b.safetensors", clean_file())
    scan(capsys, "--cache", db, str(tmp_path / "d"))
    st = b.stat()
    # Same size, same mtime, new bytes: a NaN where 4.0 was.
    data = bytearray(b.read_bytes())
    data[-4:] = f32(float("nan"))
    b.write_bytes(bytes(data))
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    rc, out, err = scan(capsys, "--format", "json", "--deep", "--cache", db, str(tmp_path / "d"))
    assert "0 of 2 files unchanged" in err  # --deep is another context: both miss
    assert rc == 0
    assert json.loads(out)["summary"]["findings_by_rule"] == {"ST601 tensor-nan-inf": 1}
    rc, out, err = scan(capsys, "--format", "json", "--deep", "--cache", db, str(tmp_path / "d"))
    assert "2 of 2 files unchanged" in err
    assert json.loads(out)["summary"]["findings_by_rule"] == {"ST601 tensor-nan-inf": 1}
    b.write_bytes(bytes(data[:-4]) + f32(1.0))
    os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
    rc, out, err = scan(capsys, "--format", "json", "--deep", "--cache", db, str(tmp_path / "d"))
    assert rc == 0
    assert "1 of 2 files unchanged and not read again; 1 stored" in err
    files = {Path(f["path"]).name: f for f in json.loads(out)["files"]}
    assert files["a.safetensors"]["cached"] is True
    assert "cached" not in files["b.safetensors"]
    assert files["b.safetensors"]["deep"]["nan"] == 0
    assert a.exists()


def test_identity_follows_inode_size_and_mtime(tmp_path):
    path = write(tmp_path / "x.safetensors", clean_file())
    first = local_identity(str(path))
    assert first == local_identity(str(path))
    st = path.stat()
    replacement = write(tmp_path / "y.safetensors", clean_file())
    replacement.replace(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size
    assert local_identity(str(path)) != first  # same size and mtime, new inode
    assert local_identity(str(tmp_path / "missing")) is None
    assert json.loads(remote_identity("https://h/x", etag='"abc"')) == ["etag", "https://h/x", '"abc"']
    assert remote_identity("https://h/x", etag='W/"abc"') is None
    assert json.loads(remote_identity("hf://org/m/x", blob_id="f" * 64)) == ["blob", "hf://org/m/x", "f" * 64]
    odd = write(tmp_path / "bad-\udcff-name.safetensors", clean_file())  # a name that is not UTF-8
    assert json.loads(local_identity(str(odd)))[1] == str(odd)
    # The text of earlier versions, so that existing caches stay valid.
    for name in (odd, path, tmp_path / 'a,"b"\\c\u00e9.safetensors'):
        write(name, clean_file())
        st = name.stat()
        old = [str(name.absolute()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev, st.st_ino]
        assert local_identity(str(name)) == json.dumps(["file", *old], separators=(",", ":"), ensure_ascii=True)


@pytest.mark.parametrize(
    "change",
    [("--profile", "reference"), ("--deep",), ("--policy", "POLICY")],
    ids=["profile", "deep", "policy"],
)
def test_another_scan_context_misses(tmp_path, capsys, change):
    db = str(tmp_path / "c.db")
    write(tmp_path / "d" / "a.safetensors", nan_inf_file())
    policy = tmp_path / "p.toml"
    policy.write_text('[rules.tensor-nan-inf]\nseverity = "error"\nreason = "no NaN in production"\n')
    scan(capsys, "--cache", db, str(tmp_path / "d"))
    argv = [str(policy) if a == "POLICY" else a for a in change]
    _, _, err = scan(capsys, "--cache", db, *argv, str(tmp_path / "d"))
    assert "0 of 1 files unchanged" in err
    _, _, err = scan(capsys, "--cache", db, *argv, str(tmp_path / "d"))
    assert "1 of 1 files unchanged" in err


def test_policy_severities_and_suppressions_survive_the_cache(tmp_path):
    path = write(tmp_path / "a.safetensors", nan_inf_file())
    policy = parse_policy(
        {
            "rules": {
                "tensor-nan-inf": {"severity": "error", "reason": "no NaN"},
                "tensor-all-zero": {"ignore": True, "reason": "zeros are fine"},
            }
        },
        "test",
    )
    job = Job(str(path), ((str(path), None),))
    # The read stores what it found; the judge applies the policy after any cache, once.
    fresh = scan_file(job, Options(deep=True, policy=policy))
    replay = decode(encode(fresh), job, Options(deep=True, policy=policy))
    assert replay is not None
    assert replay.cached
    judge([fresh, replay], policy)
    assert {i.reason for i in fresh.items} == {"no NaN"}
    assert replay.to_json() | {"cached": None, "bytes_read": None} == fresh.to_json() | {
        "cached": None,
        "bytes_read": None,
    }
    assert decode("{not json", job, Options()) is None
    assert (
        decode(json.dumps({"items": [["ST999", "m", None, None, None, "error", None, None]]}), job, Options()) is None
    )
    # A row stored before the header digest was: not a hit (scanned again, then replaced).
    old = json.loads(encode(fresh))
    del old["header_span"], old["header_sha256"]
    assert decode(json.dumps(old), job, Options()) is None


def test_unreadable_files_and_timeouts_are_never_stored(tmp_path):
    job = Job(str(tmp_path / "gone.safetensors"), ((str(tmp_path / "gone.safetensors"), None),))
    unreadable = scan_file(job, Options())
    assert unreadable.error is not None
    assert not cacheable(unreadable)
    assert not cacheable(timeout_result(job, Options(), 1.0))
    ok = write(tmp_path / "ok.safetensors", clean_file())
    assert cacheable(scan_file(Job(str(ok), ((str(ok), None),)), Options()))


def test_unreadable_file_is_scanned_again_next_time(tmp_path, capsys):
    db = str(tmp_path / "c.db")
    link = tmp_path / "d" / "a.safetensors"
    link.parent.mkdir()
    link.symlink_to(tmp_path / "missing.safetensors")
    for _ in range(2):
        rc, _, err = scan(capsys, "--cache", db, str(link))
        assert rc == 2
        assert "0 of 1 files unchanged and not read again; 0 stored" in err
    write(tmp_path / "missing.safetensors", clean_file())
    rc, _, err = scan(capsys, "--cache", db, str(link))
    assert rc == 0
    assert "0 of 1 files unchanged and not read again; 1 stored" in err


def test_a_file_that_is_not_a_cache_is_a_usage_error(tmp_path, capsys):
    bogus = tmp_path / "c.db"
    bogus.write_bytes(b"this is not a database" * 100)
    write(tmp_path / "a.safetensors", clean_file())
    rc, out, err = scan(capsys, "--cache", str(bogus), str(tmp_path / "a.safetensors"))
    assert rc == 2
    assert out == ""
    assert err.startswith(f"stcheck scan: {bogus}: cannot open the results cache: ")
    assert "Traceback" not in err


def test_cache_of_another_schema_is_refused(tmp_path, capsys):
    db = tmp_path / "c.db"
    open_cache(str(db)).close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE stcheck_meta SET value = '999' WHERE name = 'schema'")
    rc, _, err = scan(capsys, "--cache", str(db), str(write(tmp_path / "a.safetensors", clean_file())))
    assert rc == 2
    assert "results cache of schema 999; this stcheck writes schema 1" in err


def _writer(url: str, tag: str, n: int, path: str) -> None:
    job = Job(path, ((path, None),))
    result = scan_file(job, Options())
    with open_cache(url) as cache:
        for k in range(n):
            cache.put((f"{tag}-{k}", "ctx"), f"{tag}-{k}", encode(result))


def test_concurrent_writers_lose_nothing(tmp_path, cache_url):
    path = str(write(tmp_path / "a.safetensors", clean_file()))
    open_cache(cache_url).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(cache_url, f"w{w}", 150, path)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    with open_cache(cache_url) as cache:
        assert cache.count() == 450
        keys = [(f"w{w}-{k}", "ctx") for w in range(3) for k in range(150)]
        stored = cache.get_many(keys)
    assert len(stored) == 450
    job = Job(path, ((path, None),))
    assert all(decode(v, job, Options()) is not None for v in stored.values())


def test_one_row_per_path_and_context(tmp_path):
    path = write(tmp_path / "a.safetensors", clean_file())
    job = Job(str(path), ((str(path), None),))
    db = str(tmp_path / "c.db")
    for k in range(3):
        path.write_bytes(build([("w", "F32", [1], f32(float(k)))]))
        with open_cache(db) as cache:
            lookup = Lookup(cache, [job], Options(), [local_identity(str(path))])
            assert not lookup.hits
            lookup.record(0, scan_file(job, Options()))
    with open_cache(db) as cache:
        assert cache.count() == 1


def test_killed_run_resumes_where_it_stopped(tmp_path):
    tree = tmp_path / "tree"
    files = mixed_tree(tree, copies=2)
    db = tmp_path / "c.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "validator", "scan", "--no-config", "--progress", "never", "--jobs", "1"]
    argv += ["--deep", "--chunk-size", "4096", "--format", "json", "--cache", str(db), str(tree)]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    stored = 0
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            try:
                with sqlite3.connect(db, timeout=5) as conn:
                    stored = conn.execute("SELECT count(*) FROM stcheck_results").fetchone()[0]
            except sqlite3.OperationalError:
                stored = 0
            if stored >= 20:
                break
        time.sleep(0.01)
    assert proc.poll() is None, "the scan finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        kept = conn.execute("SELECT count(*) FROM stcheck_results").fetchone()[0]
    assert 20 <= kept < len(files)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1
    assert f"{kept} of {len(files)} files unchanged and not read again; {len(files) - kept} stored" in done.stderr
    plain = subprocess.run([*argv[:-3], str(tree)], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert normalised(done.stdout) == normalised(plain.stdout)
    assert sum(f.get("cached", False) for f in json.loads(done.stdout)["files"]) == kept


# -- --timeout-per-file ------------------------------------------------------


@pytest.fixture
def hanging(monkeypatch):
    """Make every scan of a file named hang*.safetensors block until released."""
    release = threading.Event()
    real = engine._scan_into

    def slow(job, options, result, *rest):
        if Path(job.path).name.startswith("hang"):
            release.wait(30)
        return real(job, options, result, *rest)

    monkeypatch.setattr(engine, "_scan_into", slow)
    yield release
    release.set()


def test_a_file_that_hangs_gets_a_timeout_finding(tmp_path, hanging):
    path = write(tmp_path / "hang.safetensors", clean_file())
    job = Job(str(path), ((str(path), None),))
    started = time.monotonic()
    result = timed_scan(job, Options(), timeout=0.3)
    assert time.monotonic() - started < 5
    assert [(i.finding.code, i.finding.slug, i.severity.value) for i in result.items] == [
        ("ST620", "scan-timeout", "error")
    ]
    assert result.items[0].finding.message == (
        "the scan did not finish within 0.3 s (--timeout-per-file); the file was not vetted"
    )
    assert result.file_size == path.stat().st_size
    assert not result.valid


def test_timeout_in_the_command_fails_the_scan_and_other_files_pass(tmp_path, capsys, hanging):
    write(tmp_path / "d" / "hang.safetensors", clean_file())
    write(tmp_path / "d" / "ok.safetensors", clean_file())
    db = str(tmp_path / "c.db")
    rc, out, err = scan(capsys, "--jobs", "1", "--timeout-per-file", "0.3", "--cache", db, str(tmp_path / "d"))
    assert rc == 1
    assert "hang.safetensors: ST620 scan-timeout the scan did not finish within 0.3 s" in out
    assert "ok.safetensors" not in out.split("summary")[0]
    assert "1 stored" in err  # the timed-out file is not stored


def test_timeout_must_be_positive(tmp_path, capsys):
    rc, _, err = scan(capsys, "--timeout-per-file", "0", str(write(tmp_path / "a.safetensors", clean_file())))
    assert rc == 2
    assert err == "stcheck scan: --timeout-per-file must be a positive number of seconds\n"


def test_a_timed_out_deep_scan_stops_reading(tmp_path):
    path = write(tmp_path / "big.safetensors", build([("w", "F32", [1 << 20], bytes(4 << 20))]))
    job = Job(str(path), ((str(path), None),))
    before = threading.active_count()
    result = timed_scan(job, Options(deep=True, chunk_size=4096), timeout=0.001)
    assert result.items[0].finding.slug == "scan-timeout"
    deadline = time.monotonic() + 10
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert threading.active_count() == before  # the abandoned scan stopped at its next chunk


def test_run_jobs_hooks_see_every_result_once(tmp_path):
    paths = [write(tmp_path / f"{k}.safetensors", clean_file()) for k in range(5)]
    jobs = [Job(str(p), ((str(p), None),)) for p in paths]
    seen: list[int] = []
    results = run_jobs(jobs, Options(), workers=2, on_result=lambda i, r: seen.append(i))
    assert sorted(seen) == list(range(5))
    assert [r.path for r in results] == [str(p) for p in paths]


def test_a_postgresql_password_never_reaches_a_message(capsys, tmp_path):
    from validator.pipeline.cache_stores import _redact

    assert _redact("postgresql://scan:s3cret@db:5432/x") == "postgresql://scan:***@db:5432/x"
    assert _redact("postgresql://scan@db/x") == "postgresql://scan@db/x"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, out, err = scan(
        capsys,
        "--cache",
        f"postgresql://scan:s3cret@127.0.0.1:{port}/x",
        str(write(tmp_path / "a.safetensors", clean_file())),
    )
    assert rc == 2
    assert out == ""
    assert err.startswith(f"stcheck scan: postgresql://scan:***@127.0.0.1:{port}/x: cannot open the results cache: ")
    assert "s3cret" not in err
