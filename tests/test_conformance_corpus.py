# Where `stcheck conformance` finds its corpus, what it says when there is
# none, and what its summary records for regenerating it.
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from validator import StcheckError
from validator.cli.main import main
from validator.conformance.harness import ConformanceError, find_corpus, package_root

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"


def test_conformance_error_is_a_stcheck_error():
    assert issubclass(ConformanceError, StcheckError)


def test_checkout_corpus_is_found_from_any_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_corpus(None) == CORPUS
    assert Path(package_root()) == ROOT  # adapters import `validator` from here


def test_installed_copy_says_where_to_point_corpus(tmp_path):
    # An installed wheel: the package alone in a site directory, no corpus beside it.
    site = tmp_path / "site"
    shutil.copytree(ROOT / "validator", site / "validator", ignore=shutil.ignore_patterns("__pycache__"))
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    code = (
        "import sys, validator\n"
        "assert validator.__file__.startswith(sys.argv[1]), validator.__file__\n"
        "from validator.cli.main import main\n"
        "sys.exit(main(['conformance', '--quiet']))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run(
        [sys.executable, "-c", code, str(site)],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("stcheck: no conformance corpus found (no manifest.json in ")
    assert f"{elsewhere / 'corpus'} and {site / 'corpus'}" in lines[0]
    assert lines[0].endswith("clone the stcheck repository and pass --corpus CHECKOUT/corpus")


def test_regenerate_line_keeps_the_options_that_change_verdicts(tmp_path, capsys, monkeypatch):
    # A loader module raising KeyError: a crash unless --reject-exception names it.
    (tmp_path / "keyerr_loader.py").write_text("def load(path):\n    raise KeyError(path)\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # the loader runs in a child process
    out = tmp_path / "out"
    args = ["conformance", "--corpus", str(CORPUS), "--impl", "keyerr_loader:load", "--files", "n_padding_nul*"]
    extra = ["--reject-exception", "builtins:KeyError", "--timeout", "5", "--memory-mb", "512", "--out", str(out)]
    assert main([*args, *extra, "--quiet"]) == 0
    capsys.readouterr()
    command = (out / "summary.md").read_text(encoding="utf-8").partition("```sh\n")[2].partition("\n")[0]
    assert "--reject-exception builtins:KeyError --timeout 5 --memory-mb 512" in command


def test_regenerate_line_keeps_impl_and_corpus(tmp_path, capsys):
    script = tmp_path / "accept_all.py"
    script.write_text("import sys\nsys.exit(0)\n", encoding="utf-8")
    spec = f"{sys.executable} {script} {{path}}"
    out = tmp_path / "out"
    args = ["conformance", "--corpus", str(CORPUS), "--impl", spec, "--files", "y_dtype_f32*", "--out", str(out)]
    assert main([*args, "--quiet"]) == 0
    capsys.readouterr()
    summary = (out / "summary.md").read_text(encoding="utf-8")
    command = summary.partition("```sh\n")[2].partition("\n")[0]
    assert command == (f"stcheck conformance --corpus {CORPUS} --impl '{spec}' --files 'y_dtype_f32*' --out {out}")


def test_a_loader_that_rejects_every_valid_file_fails_the_gate(tmp_path, capsys):
    script = tmp_path / "reject_all.py"
    script.write_text("import sys\nsys.exit(1)\n", encoding="utf-8")
    spec = f"{sys.executable} {script} {{path}}"
    args = ["conformance", "--corpus", str(CORPUS), "--impl", spec, "--files", "y_dtype_f32*", "--quiet"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "FAILED" in out
    assert "should-have-accepted" in out
