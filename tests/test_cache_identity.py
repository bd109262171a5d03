# Strategy: what a results-cache hit proves (issue 21, items 2, 9 and 14).
# A stored verdict must be the verdict of the bytes its key names: the
# identity stored is that of the descriptor that was read, taken at open,
# and nothing is stored when the path named other bytes before, during or
# after the read (a flipped `current -> vN` link, a swapped folder, a
# rewrite during the scan).  A hit re-reads the prefix and header and
# compares them byte for byte with the ones judged, so a write through
# mmap, which can leave mtime and ctime alone, still misses.  What a hit
# reports about the run (the policy file in force) is this run's.
from __future__ import annotations

import hashlib
import json
import mmap
import os
from typing import TYPE_CHECKING

import pytest
from scan_fixtures import build, clean_file, f32, write

from validator.cli.main import main
from validator.pipeline import cache as cache_mod
from validator.pipeline.cache import Lookup, local_identity, open_cache
from validator.pipeline.engine import Job, Options, scan_file

if TYPE_CHECKING:
    from pathlib import Path


def scan(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["scan", "--progress", "never", "--no-config", "--format", "json", *argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


def two_versions(tmp_path: Path) -> tuple[Path, Path, Path, str]:
    """v1 and v2 of one file, with the same header and other data; the
    link ``current -> v2``; and v1's sha256, which v2 does not match."""
    good = build([("w", "F32", [2], f32(1.0, 2.0))])
    bad = build([("w", "F32", [2], f32(1.0, 3.0))])
    assert good[:-8] == bad[:-8]  # the same prefix and header: only the data differs
    v1 = write(tmp_path / "v1" / "model.safetensors", good)
    write(tmp_path / "v2" / "model.safetensors", bad)
    current = tmp_path / "current"
    current.symlink_to(tmp_path / "v2")
    return v1.parent, tmp_path / "v2", current, hashlib.sha256(good).hexdigest()


def flip(link: Path, target: Path) -> None:
    tmp = link.with_name(link.name + ".new")
    tmp.symlink_to(target)
    tmp.replace(link)  # atomic, as a deployment flips `current`


def test_a_link_flipped_between_the_stat_and_the_read_stores_nothing(tmp_path, capsys, monkeypatch):
    v1, v2, current, digest = two_versions(tmp_path)
    target = str(current / "model.safetensors")
    db = str(tmp_path / "c.db")
    rc, _, _ = scan(capsys, "--sha256", digest, target)
    assert rc == 1  # v2 does not match v1's digest
    real = cache_mod.local_identity

    def stat_then_flip(path: str) -> str | None:
        identity = real(path)  # v2's identity...
        flip(current, v1)  # ...and v1's bytes are what the scan then reads
        return identity

    monkeypatch.setattr(cache_mod, "local_identity", stat_then_flip)
    rc, _, err = scan(capsys, "--sha256", digest, "--cache", db, target)
    assert rc == 0  # it read v1, which matches
    assert "0 stored; 1 not stored: changed while scanned" in err  # other bytes at the stat than at the read
    monkeypatch.setattr(cache_mod, "local_identity", real)
    flip(current, v2)
    rc, out, err = scan(capsys, "--sha256", digest, "--cache", db, target)
    assert rc == 1, out  # v2 again: never v1's verdict replayed
    assert "0 of 1 files unchanged" in err
    assert json.loads(out)["summary"]["findings_by_rule"] == {"ST606 checksum-mismatch": 1}


def test_a_file_replaced_during_the_scan_is_not_stored(tmp_path, monkeypatch):
    path = write(tmp_path / "a.safetensors", clean_file())
    job = Job(str(path), ((str(path), None),))
    db = str(tmp_path / "c.db")
    real = scan_file

    def scan_then_replace(job: Job, options: Options, progress=None):
        result = real(job, options, progress)
        write(tmp_path / "b.safetensors", clean_file()).replace(path)  # a new inode under the same name
        return result

    with open_cache(db) as cache:
        lookup = Lookup(cache, [job], Options(), [local_identity(str(path))])
        lookup.record(0, scan_then_replace(job, Options()))
        assert lookup.stored == 0
        assert lookup.changed == 1
        assert cache.count() == 0


def test_a_file_rewritten_while_it_is_read_is_not_stored(tmp_path, monkeypatch):
    path = write(tmp_path / "a.safetensors", build([("w", "F32", [4096], bytes(16384))]))
    job = Job(str(path), ((str(path), None),))
    db = str(tmp_path / "c.db")
    calls = []

    def rewrite(n: int) -> None:  # the progress callback runs between chunks
        if not calls:
            with path.open("r+b") as fh:
                fh.seek(-4, os.SEEK_END)
                fh.write(f32(float("nan")))
        calls.append(n)

    with open_cache(db) as cache:
        lookup = Lookup(cache, [job], Options(), [local_identity(str(path))])
        result = scan_file(job, Options(deep=True, chunk_size=4096), rewrite)
        assert calls
        lookup.record(0, result)
        assert lookup.stored == 0
        assert cache.count() == 0


def test_a_write_through_mmap_that_keeps_the_stat_misses_the_cache(tmp_path, capsys):
    path = write(tmp_path / "a.safetensors", build([("w", "F32", [2], f32(1.0, 2.0))]))
    db = str(tmp_path / "c.db")
    data = path.read_bytes()
    at = data.index(b'"F32"') + 1
    with path.open("r+b") as fh, mmap.mmap(fh.fileno(), 0) as mapped:
        mapped[at] = mapped[at]  # the page is dirty: later writes to it need not touch mtime
        rc, _, err = scan(capsys, "--cache", db, str(path))
        assert rc == 0
        assert "1 stored" in err
        before = path.stat()
        mapped[at : at + 3] = b"X32"  # dtype-unknown
        after = path.stat()
        if (before.st_mtime_ns, before.st_ctime_ns) != (after.st_mtime_ns, after.st_ctime_ns):
            pytest.skip("this file system updates the mtime on every write through mmap")
        rc_fresh, _, _ = scan(capsys, str(path))
        rc, out, err = scan(capsys, "--cache", db, str(path))
    assert rc_fresh == 1
    assert rc == 1, out
    assert "0 of 1 files unchanged" in err
    assert json.loads(out)["summary"]["findings_by_rule"] == {"ST308 dtype-unknown": 1}


def test_a_hit_whose_header_changed_is_scanned_again_and_replaced(tmp_path):
    path = write(tmp_path / "a.safetensors", clean_file())
    job = Job(str(path), ((str(path), None),))
    db = str(tmp_path / "c.db")
    with open_cache(db) as cache:
        lookup = Lookup(cache, [job], Options(), [local_identity(str(path))])
        lookup.record(0, scan_file(job, Options()))
        assert lookup.stored == 1
    # The stored header digest no longer matches: the row is not a hit.
    with open_cache(db) as cache:
        identity = local_identity(str(path))
        (key,) = Lookup(cache, [job], Options(), [identity]).keys
        assert key is not None
        stored = json.loads(cache.get_many([key])[key])
        stored["header_sha256"] = "0" * 64
        cache.put(key, "x", json.dumps(stored))
        assert Lookup(cache, [job], Options(), [identity]).hits == {}


def test_a_hit_reports_this_runs_policy_file(tmp_path, capsys):
    path = write(tmp_path / "d" / "a.safetensors", clean_file())
    text = 'max_tensors = 100\n[rules.tensor-all-zero]\nseverity = "error"\nreason = "zeros are a broken export"\n'
    a = tmp_path / "a.toml"
    b = tmp_path / "b.toml"
    a.write_text(text)
    b.write_text(text)
    db = str(tmp_path / "c.db")
    _, out, _ = scan(capsys, "--cache", db, "--policy", str(a), str(path))
    assert json.loads(out)["files"][0]["policy"] == str(a)
    _, out, err = scan(capsys, "--cache", db, "--policy", str(b), str(path))
    assert "1 of 1 files unchanged" in err  # the same content: one key, a hit
    assert json.loads(out)["files"][0]["policy"] == str(b)


def test_the_stamp_is_read_back_from_any_identity(tmp_path):
    from validator.pipeline.cache import _stamp_in, file_identity, remote_identity

    stamp = (72, 1_700_000_000_123_456_789, 1_700_000_000_987_654_321, 12345, 66306)
    for name in ("a.safetensors", 'we,ird "na],me\\\u00e9\udcff.safetensors'):
        assert _stamp_in(file_identity(str(tmp_path / name), stamp)) == stamp
    assert _stamp_in(remote_identity("https://h/x", etag='"abc"') or "") is None


def test_a_hub_cache_through_the_cache_stores_and_replays_every_blob(tmp_path, capsys):
    from scan_fixtures import fake_hf_cache

    fake_hf_cache(tmp_path)
    blobs = tmp_path / "models--acme--tiny" / "blobs"
    (blobs / ("e" * 64 + ".incomplete")).write_bytes(b"\x00" * 100)
    db = str(tmp_path / "c.db")
    rc_cold, cold, err = scan(capsys, "--hf-cache", str(tmp_path), "--cache", db)
    assert "0 of 4 files unchanged and not read again; 4 stored\n" in err  # nothing "changed while scanned"
    rc_warm, warm, err = scan(capsys, "--hf-cache", str(tmp_path), "--cache", db)
    assert "4 of 4 files unchanged and not read again; 0 stored\n" in err
    assert rc_cold == rc_warm == 1
    rules = [json.loads(doc)["summary"]["findings_by_rule"] for doc in (cold, warm)]
    assert rules[0] == rules[1]
    assert rules[0]["ST614 download-incomplete"] == 1
