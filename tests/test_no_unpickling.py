"""No pickle is ever unpickled in stcheck's own process, whatever it scans.

A monkeypatched trap (tests/test_pickles.py) catches the obvious entry points;
this one cannot be sidestepped: an audit hook, installed before stcheck is
imported, ends the process at the first ``pickle.find_class`` (every global
any unpickler resolves, C or Python, torch's and joblib's included: a
pickle cannot call what it has not resolved), while ``stcheck scan`` reads every hostile sample of
the public scanners' suites and the pickle corpus, each as a folder member
and as a file argument.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from scanner_suites.build import build
from scanner_suites.recipes import RECIPES

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "pickles"

_RUN = textwrap.dedent(
    """
    import os, sys

    def hook(event, args):
        if event == "pickle.find_class":
            os.write(2, f"TRAPPED {event} {args!r:.200}\\n".encode())
            os._exit(99)

    sys.addaudithook(hook)
    from validator.cli.main import main
    sys.exit(main(sys.argv[1:]))
    """
)


def _scan(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        # --jobs 1: a worker pool's own messages between stcheck's processes are
        # pickles stcheck writes itself; one process keeps the trap about the files.
        [sys.executable, "-c", _RUN, "scan", "--jobs", "1", "--no-config", "--format", "json", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_scanning_every_hostile_sample_resolves_no_global_in_stchecks_process(tmp_path: Path) -> None:
    folder = tmp_path / "download"
    folder.mkdir()
    for recipe in RECIPES:
        where = folder / recipe.id
        where.mkdir()
        (where / recipe.name).write_bytes(build(recipe.container))
    for sample in sorted(CORPUS.iterdir()):
        if sample.is_file() and sample.suffix not in {".py", ".md", ".json"}:
            shutil.copy(sample, folder / sample.name)
    files = sorted(str(p) for p in folder.rglob("*") if p.is_file())
    assert len(files) > 200
    for args in ((str(folder),), tuple(files[:60])):
        proc = _scan(*args)
        assert "TRAPPED" not in proc.stderr, proc.stderr[-2000:]
        assert proc.returncode == 1, proc.stderr[-2000:]  # hostile samples: errors, and no crash
        report = json.loads(proc.stdout)
        codes = {f["code"] for entry in report["files"] for f in entry.get("findings", ())}
        assert "ST701" in codes


_UNPICKLES = "import pickle; pickle.loads(b'cbuiltins\\nlen\\n.')"


@pytest.mark.slow
def test_the_trap_springs_when_a_global_is_resolved(tmp_path: Path) -> None:
    # The hook itself can fail: a process that does unpickle is caught.
    proc = subprocess.run(
        [sys.executable, "-c", _RUN.replace("from validator.cli.main import main", _UNPICKLES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 99
    assert "TRAPPED pickle.find_class ('builtins', 'len')" in proc.stderr
