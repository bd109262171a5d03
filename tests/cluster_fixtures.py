# Strategy: shared builders for the cache and cluster tests: a directory of
# mixed valid and invalid files (the conformance corpus, each under a few
# names, plus the deep-scan fixtures), the JSON normaliser that leaves out
# what describes the run rather than the files, and a throwaway PostgreSQL
# server started with initdb/pg_ctl (as the `postgres` user when the tests
# run as root, because PostgreSQL refuses to run as root).
# ruff: noqa: PTH118
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from scan_fixtures import all_zero_file, clean_file, f64_file, nan_inf_file, pickle_in_u8_file, zip_last_tensor_file

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
DEEP_FIXTURES = {
    "deep_nan_inf": nan_inf_file,
    "deep_all_zero": all_zero_file,
    "deep_pickle_in_u8": pickle_in_u8_file,
    "deep_zip_last_tensor": zip_last_tensor_file,
    "deep_f64": f64_file,
    "deep_clean": clean_file,
}


def mixed_tree(root: Path, *, copies: int = 2) -> list[Path]:
    """Every corpus file ``copies`` times in subdirectories, plus the deep
    fixtures: about 250 * copies files, valid and invalid."""
    made = []
    sources = sorted(CORPUS.glob("*.safetensors"))
    for k in range(copies):
        sub = root / f"copy{k}"
        sub.mkdir(parents=True, exist_ok=True)
        for src in sources:
            dst = sub / src.name
            shutil.copyfile(src, dst)
            made.append(dst)
    for name, make in DEEP_FIXTURES.items():
        dst = root / "deep" / f"{name}.safetensors"
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(make())
        made.append(dst)
    return made


# Fields that describe the run, not the files: the clock, the bytes this run
# read (0 for a file replayed from the cache) and the cache marker itself.
RUN_FIELDS = ("seconds", "bytes_scanned")
FILE_RUN_FIELDS = ("bytes_read", "cached")


def normalised(text: str) -> str:
    """A scan's JSON report without its run fields, re-serialised."""
    doc = json.loads(text)
    for key in RUN_FIELDS:
        doc["summary"].pop(key, None)
    for entry in doc["files"]:
        for key in FILE_RUN_FIELDS:
            entry.pop(key, None)
    return json.dumps(doc, indent=2, sort_keys=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def postgres_server() -> object:
    """Start a private PostgreSQL on 127.0.0.1; yield its URL, or a reason
    (str starting with 'skip: ') when none can start here."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb is None or pg_ctl is None:
        # Debian keeps the server programs off PATH, one directory per version.
        found = sorted(
            (p for p in Path("/usr/lib/postgresql").glob("*/bin/initdb") if p.parts[-3].isdigit()),
            key=lambda p: int(p.parts[-3]),
        )
        if found:
            initdb, pg_ctl = str(found[-1]), str(found[-1].with_name("pg_ctl"))
    if initdb is None or pg_ctl is None:
        yield "skip: initdb/pg_ctl are not installed (Debian: apt-get install postgresql)"
        return
    prefix: list[str] = []
    owner = None
    if os.geteuid() == 0:
        runuser = shutil.which("runuser")
        try:
            import pwd

            owner = pwd.getpwnam("postgres")
        except KeyError:
            owner = None
        if runuser is None or owner is None:
            yield "skip: running as root without a 'postgres' user to run PostgreSQL as"
            return
        prefix = [runuser, "-u", "postgres", "--"]
    top = tempfile.mkdtemp(prefix="stcheck-pg-")
    data = os.path.join(top, "data")
    if owner is not None:
        os.chown(top, owner.pw_uid, owner.pw_gid)
    port = _free_port()
    env = {**os.environ, "LC_ALL": "C"}
    started = False
    try:
        init = subprocess.run(
            [*prefix, initdb, "-D", data, "-A", "trust", "-U", "stcheck", "--no-sync", "-E", "UTF8"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
        if init.returncode != 0:
            yield f"skip: initdb failed: {init.stderr.strip().splitlines()[-1:]}"
            return
        opts = f"-c listen_addresses=127.0.0.1 -p {port} -k {top} -c fsync=off"
        start = subprocess.run(
            [*prefix, pg_ctl, "-D", data, "-o", opts, "-l", os.path.join(top, "log"), "-w", "-t", "60", "start"],
            capture_output=True,
            text=True,
            env=env,
            timeout=90,
            check=False,
        )
        if start.returncode != 0:
            yield f"skip: pg_ctl start failed: {start.stdout.strip().splitlines()[-1:]}"
            return
        started = True
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
                break
            time.sleep(0.1)
        yield f"postgresql://stcheck@127.0.0.1:{port}/postgres"
    finally:
        if started:
            subprocess.run([*prefix, pg_ctl, "-D", data, "-m", "immediate", "stop"], capture_output=True, check=False)
        shutil.rmtree(top, ignore_errors=True)
