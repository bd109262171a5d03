# Strategy: test the harness at three levels.  classify() is pure, so every
# status is reached from hand-made raw outcomes.  A small subset of the corpus
# runs end to end through real adapters (this validator under both profiles
# and the naive struct+json loader, which need nothing optional).  User mode is
# driven through the CLI with tiny loaders that accept everything, crash, hang
# or behave, and the exit code is checked.  Last, the HTML page is rendered in
# headless Chromium and the screenshot's colours are counted against the
# results it shows.
from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

from validator.cli.main import main
from validator.conformance.harness import (
    Case,
    Impl,
    Raw,
    Result,
    classify,
    load_cases,
    load_impls,
    probe,
    run_all,
    totals,
)
from validator.conformance.report import COLOURS, render_html, render_markdown

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
SUBSET = (
    "y_dtype_f32.safetensors",
    "y_scalar_bf16.safetensors",
    "n_buffer_trailing_1_byte.safetensors",
    "n_offsets_negative_both.safetensors",
    "n_json_depth_5000_arrays.safetensors",
    "n_prefix_7_bytes.safetensors",
    "n_prefix_zero_length_header.safetensors",
    "n_format_pickle_protocol_4.safetensors",
    "i_padding_tab.safetensors",
)


def _cases(names=SUBSET):
    by_name = {c.file: c for c in load_cases(CORPUS)}
    return [by_name[n] for n in names]


def _case(kind="n", name="n_x.safetensors", path=None):
    return Case(
        name, path or CORPUS / "y_dtype_f32.safetensors", kind, "reject", "reject", (), "", {"kind": "spec", "ref": "x"}
    )


# --- classify: every status --------------------------------------------------------


def _accept_line(tensors):
    return json.dumps({"tensors": tensors}) + "\n"


def test_classify_reaches_every_status():
    y_file = CORPUS / "y_dtype_f32.safetensors"
    blob = y_file.read_bytes()
    import hashlib

    n = int.from_bytes(blob[:8], "little")
    good = {
        "name": "t",
        "dtype": "F32",
        "shape": [2, 3],
        "nbytes": 24,
        "sha256": hashlib.sha256(blob[8 + n :]).hexdigest(),
    }
    header = {
        "name": "t",
        "dtype": "F32",
        "shape": [2, 3],
        "nbytes": 24,
        "sha256": hashlib.sha256(blob[8 : 8 + 24]).hexdigest(),
    }
    accept = Raw(0, None, _accept_line([good]), "", 0.1)
    cases = {k: _case(k, f"{k}_x.safetensors", y_file) for k in "yni"}
    assert classify("i", cases["y"], accept).status == "expected"
    assert classify("i", cases["n"], accept).status == "should-have-rejected"
    assert classify("i", cases["i"], accept).status == "i-accepted"
    reject = Raw(1, None, "", "reject: nope", 0.1)
    assert classify("i", cases["y"], reject).status == "should-have-accepted"
    assert classify("i", cases["n"], reject).status == "expected"
    assert classify("i", cases["i"], reject).status == "i-rejected"
    wrong = classify("i", cases["y"], Raw(0, None, _accept_line([header]), "", 0.1))
    assert wrong.status == "wrong-data"
    assert "file bytes [8, 32), in the header" in wrong.detail
    assert classify("i", cases["n"], Raw(2, None, "", "crash: RecursionError", 0.1)).status == "crash"
    assert classify("i", cases["n"], Raw(None, 11, "", "", 0.1)).status == "crash"
    assert classify("i", cases["n"], Raw(None, 14, "", "", 5.0, timed_out=True)).status == "timeout"
    # An accept without a data report cannot be checked for wrong data.
    assert classify("i", cases["y"], Raw(0, None, "", "", 0.1)).status == "expected"


# --- the adapters' protocol ------------------------------------------------------------


def _adapter(name, *args, env=None):
    full = dict(os.environ)
    full["PYTHONPATH"] = str(ROOT)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, str(CORPUS / "adapters" / name), *args],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
        check=False,
    )


def test_adapter_protocol_accept_reject_crash_probe():
    ok = _adapter("naive.py", str(CORPUS / "y_dtype_f32.safetensors"))
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout.strip().splitlines()[-1])
    assert [t["name"] for t in doc["tensors"]] == ["t"]
    assert doc["tensors"][0]["nbytes"] == 24
    assert len(doc["tensors"][0]["sha256"]) == 64
    # A ValueError (json.JSONDecodeError) is a clean rejection; struct.error on
    # a 7-byte file is a crash: the one reject-or-crash rule of
    # validator/conformance/adapter.py, shared with fuzz loader-under-test
    # (before it, this file counted as a rejection here and a crash there).
    assert _adapter("naive.py", str(CORPUS / "n_prefix_zero_length_header.safetensors")).returncode == 1
    short = _adapter("naive.py", str(CORPUS / "n_prefix_7_bytes.safetensors"))
    assert short.returncode == 2
    assert "crash: error: unpack requires a buffer of 8 bytes" in short.stderr
    crash = _adapter("naive.py", str(CORPUS / "n_json_depth_5000_arrays.safetensors"))
    assert crash.returncode == 2
    assert "RecursionError" in crash.stderr
    probe_run = _adapter("naive.py", "--probe")
    assert probe_run.returncode == 0
    assert json.loads(probe_run.stdout)["version"].startswith("python")
    strict = _adapter("stcheck.py", str(CORPUS / "i_padding_tab.safetensors"), env={"STCHECK_PROFILE": "strict"})
    reference = _adapter("stcheck.py", str(CORPUS / "i_padding_tab.safetensors"), env={"STCHECK_PROFILE": "reference"})
    assert (strict.returncode, reference.returncode) == (1, 0)


def test_implementations_file_is_data_and_skips_with_reason(tmp_path):
    impls = load_impls(CORPUS, str(tmp_path))  # an empty ext dir: nothing optional is installed there
    names = [i.name for i in impls]
    assert names[:3] == ["stcheck-strict", "stcheck-reference", "safetensors-0.8.0"]
    assert {"mlx", "tinygrad", "gguf", "huggingface_hub", "torch-dcp-hf", "naive", "safetensors-0.2.8"} <= set(names)
    mlx = next(i for i in impls if i.name == "mlx")
    assert mlx.skip_reason is not None
    assert "pip install --target" in mlx.skip_reason
    no_ext = next(i for i in load_impls(CORPUS, None) if i.name == "tinygrad")
    assert "STCHECK_EXT" in (no_ext.skip_reason or "")


# --- end to end on a subset -------------------------------------------------------------


@pytest.fixture(scope="module")
def subset_results():
    impls = load_impls(CORPUS, None, ["stcheck-strict", "stcheck-reference", "naive"])
    for impl in impls:
        probe(impl)
        assert impl.skip_reason is None, impl.skip_reason
    return impls, run_all(impls, _cases(), jobs=2)


def test_subset_statuses(subset_results):
    _, results = subset_results
    got = {(r.impl, r.file): r.status for r in results}
    for name in SUBSET:
        kind = name[0]
        strict = got[("stcheck-strict", name)]
        reference = got[("stcheck-reference", name)]
        if kind == "i":
            assert (strict, reference) == ("i-rejected", "i-accepted")
        else:
            assert strict == reference == "expected", name
    assert got[("naive", "y_dtype_f32.safetensors")] == "expected"
    assert got[("naive", "y_scalar_bf16.safetensors")] == "expected"
    assert got[("naive", "n_buffer_trailing_1_byte.safetensors")] == "should-have-rejected"
    assert got[("naive", "n_offsets_negative_both.safetensors")] == "wrong-data"
    assert got[("naive", "n_json_depth_5000_arrays.safetensors")] == "crash"
    assert got[("naive", "n_prefix_7_bytes.safetensors")] == "crash"  # struct.error: see the adapter's rule
    assert got[("naive", "n_prefix_zero_length_header.safetensors")] == "expected"  # JSONDecodeError
    assert got[("naive", "n_format_pickle_protocol_4.safetensors")] == "expected"  # a pickle is not JSON
    assert got[("naive", "i_padding_tab.safetensors")] == "i-accepted"
    wrong = next(r for r in results if r.impl == "naive" and r.status == "wrong-data")
    assert "reach outside the data region" in wrong.detail


def test_summaries_render(subset_results, tmp_path):
    impls, results = subset_results
    cases = _cases()
    md = render_markdown(impls, cases, results, "stcheck conformance --out X")
    assert "| naive |" in md
    assert "wrong-data on `n_offsets_negative_both.safetensors`" in md
    page = render_html(impls, cases, results, "stcheck conformance --out X")
    assert "http://" not in page
    assert "https://" not in page
    assert "<script src" not in page
    assert "<link" not in page
    for status in ("expected", "wrong-data", "crash"):
        assert COLOURS[status] in page


# --- user mode ----------------------------------------------------------------------------


def _loader(tmp_path, body):
    script = tmp_path / "my_loader.py"
    script.write_text(textwrap.dedent(body), encoding="utf-8")
    return script


def _user(capsys, spec, files=("y_dtype_f32*", "n_buffer_trailing_1_byte*", "i_padding_tab*"), *extra):
    args = ["conformance", "--corpus", str(CORPUS), "--impl", spec, "--quiet"]
    for glob in files:
        args += ["--files", glob]
    code = main([*args, *extra])
    return code, capsys.readouterr().out


def test_user_mode_fails_on_an_unsafe_accept(tmp_path, capsys):
    script = _loader(tmp_path, "import sys\nsys.exit(0)\n")  # accepts everything
    code, out = _user(capsys, f"{sys.executable} {script} {{path}}")
    assert code == 1
    assert "FAIL should-have-rejected: n_buffer_trailing_1_byte.safetensors" in out


def test_user_mode_passes_a_careful_loader(tmp_path, capsys):
    script = _loader(
        tmp_path,
        """
        import sys
        import validator
        sys.exit(0 if validator.is_valid(sys.argv[1], profile="reference") else 1)
        """,
    )
    code, out = _user(capsys, f"{sys.executable} {script} {{path}}")
    assert code == 0, out
    assert "passed" in out


def test_user_mode_module_function(tmp_path, capsys, monkeypatch):
    (tmp_path / "gate_loader.py").write_text(
        textwrap.dedent(
            """
            import validator

            def careful(path):
                report = validator.ensure_valid(path, profile="reference")
                with open(path, "rb") as f:
                    blob = f.read()
                return {n: blob[report.data_start + t.begin : report.data_start + t.end] for n, t in report.tensors.items()}

            def sloppy(path):
                with open(path, "rb") as f:
                    blob = f.read()
                return {"t": blob[:24]}   # header bytes, not tensor data
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    code, out = _user(capsys, "gate_loader:careful")
    assert code == 0, out
    code, out = _user(capsys, "gate_loader:sloppy", ("y_dtype_f32*",))
    assert code == 1
    assert "FAIL wrong-data" in out


def test_user_mode_crash_and_timeout(tmp_path, capsys):
    crash = _loader(tmp_path, "import os\nos.abort()\n")
    code, out = _user(capsys, f"{sys.executable} {crash} {{path}}", ("y_dtype_f32*",))
    assert code == 1
    assert "FAIL crash" in out
    hang = tmp_path / "hang.py"
    hang.write_text("import time\ntime.sleep(30)\n", encoding="utf-8")
    code, out = _user(capsys, f"{sys.executable} {hang} {{path}}", ("y_dtype_f32*",), "--timeout", "1")
    assert code == 1
    assert "FAIL timeout" in out


def test_missing_corpus_is_a_clear_error(tmp_path, capsys):
    code = main(["conformance", "--corpus", str(tmp_path), "--quiet"])
    assert code == 2
    assert "no conformance corpus found" in capsys.readouterr().err


# --- the HTML page in headless Chromium -----------------------------------------------------


def _png_pixels(path):
    """(width, height, channels, rows of bytes) of an 8-bit RGB or RGBA PNG.

    Sub and Up rows are undone with numpy; Average and Paeth rows depend on
    the pixel to their left, so they are undone pixel by pixel.
    """
    import numpy as np

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    width = height = channels = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8
            assert colour in (2, 6)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = np.frombuffer(zlib.decompress(idat), dtype=np.uint8).reshape(height, width * channels + 1)
    out = np.zeros((height, width * channels), dtype=np.uint8)
    prev = np.zeros(width * channels, dtype=np.uint8)
    for y in range(height):
        ftype, line = raw[y, 0], raw[y, 1:]
        if ftype == 0:
            cur = line.copy()
        elif ftype == 1:
            cur = (
                (np.cumsum(line.reshape(width, channels), axis=0, dtype=np.uint64) & 0xFF).astype(np.uint8).reshape(-1)
            )
        elif ftype == 2:
            cur = line + prev  # uint8 arithmetic wraps mod 256
        else:
            cur_list = line.tolist()
            up = prev.tolist()
            for i in range(width * channels):
                a = cur_list[i - channels] if i >= channels else 0
                b = up[i]
                if ftype == 3:
                    cur_list[i] = (cur_list[i] + (a + b) // 2) & 0xFF
                else:
                    c = up[i - channels] if i >= channels else 0
                    p = a + b - c
                    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                    cur_list[i] = (cur_list[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
            cur = np.array(cur_list, dtype=np.uint8)
        out[y] = cur
        prev = cur
    return width, height, channels, out


def _colour_counts(path):
    import numpy as np

    width, height, channels, pixels = _png_pixels(path)
    rgb = pixels.reshape(height, width, channels)[:, :, :3].astype(np.uint32)
    packed = (rgb[:, :, 0] << 16) | (rgb[:, :, 1] << 8) | rgb[:, :, 2]
    values, freq = np.unique(packed, return_counts=True)
    found = dict(zip(values.tolist(), freq.tolist(), strict=True))
    counts = {status: found.get(int(colour[1:], 16), 0) for status, colour in COLOURS.items()}
    return width, height, counts


def _screenshot(page, out, size):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    profile = out.parent / "chromium-profile"
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--screenshot={out}",
        f"--window-size={size[0]},{size[1]}",
        page.as_uri(),
    ]
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    assert out.exists(), "chromium wrote no screenshot"


@pytest.mark.slow
def test_screenshot_shows_the_statuses_in_proportion(tmp_path):
    # A synthetic matrix with known counts: 3 implementations x 24 files.
    names = [f"{k}_case_{i:02d}.safetensors" for k, n in (("y", 10), ("n", 10), ("i", 4)) for i in range(n)]
    cases = [
        Case(n, CORPUS / n, n[0], "accept", "accept", (), "synthetic", {"kind": "spec", "ref": "x"}) for n in names
    ]
    impls = [Impl(name=f"impl{i}", argv=(), version="1") for i in range(3)]
    plan = {"impl0": {}, "impl1": {}, "impl2": {}}
    for i, n in enumerate(names):
        plan["impl0"][n] = {"y": "expected", "n": "expected", "i": "i-accepted"}[n[0]]
        plan["impl1"][n] = {"y": "expected", "n": "should-have-rejected", "i": "i-rejected"}[n[0]]
        plan["impl2"][n] = "crash" if i % 6 == 0 else "wrong-data" if n[0] == "n" else "expected"
    results = [Result(impl, n, status) for impl, row in plan.items() for n, status in row.items()]
    page = tmp_path / "page.html"
    page.write_text(render_html(impls, cases, results, "synthetic"), encoding="utf-8")
    shot = tmp_path / "shot.png"
    _screenshot(page, shot, (1200, 900))
    keep = os.environ.get("STCHECK_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)
    width, height, counts = _colour_counts(shot)
    assert (width, height) == (1200, 900)
    cells = totals(results)
    per_status = {s: sum(row[s] for row in cells.values()) for s in COLOURS}
    # Each status's pixels are its cells plus a legend swatch (and a swatch in
    # the totals header when it occurs): cells dominate and keep proportion.
    area = counts["expected"] / per_status["expected"]
    assert area > 150, counts
    for status, n in per_status.items():
        if n:
            assert abs(counts[status] / area - n) <= 2.5, (status, n, counts[status] / area)
        else:
            assert counts[status] <= 2 * 14 * 14, (status, counts[status])  # at most its swatches


# --- the committed results page -----------------------------------------------------------

RESULTS = CORPUS / "results"


def _committed():
    from validator.conformance.harness import read_jsonl

    return read_jsonl(RESULTS / "results.jsonl")


def test_committed_results_cover_the_corpus():
    impls, results = _committed()
    manifest = json.loads((CORPUS / "manifest.json").read_text(encoding="utf-8"))
    small = {e["file"] for e in manifest["files"] if not e.get("large")}
    for impl in impls:
        files = {r.file for r in results if r.impl == impl.name}
        assert files == small, f"{impl.name}: results.jsonl is stale; regenerate it (see corpus/README.md)"
    # Our validator and the reference must be spotless in the committed run.
    for name in ("stcheck-strict", "stcheck-reference", "safetensors-0.8.0"):
        bad = [r.file for r in results if r.impl == name and r.status not in ("expected", "i-accepted", "i-rejected")]
        assert not bad, (name, bad)


def test_committed_page_shows_what_results_jsonl_says():
    import re

    impls, results = _committed()
    page = (RESULTS / "results.html").read_text(encoding="utf-8")
    colour_to_status = {c: s for s, c in COLOURS.items()}
    cells = re.findall(r'<td class="c" data-k="\d+" style="background:(#[0-9a-f]{6})"', page)
    shown = {}
    for colour in cells:
        shown[colour_to_status[colour]] = shown.get(colour_to_status[colour], 0) + 1
    want = {}
    for r in results:
        want[r.status] = want.get(r.status, 0) + 1
    assert shown == want
    for impl in impls:
        assert f">{impl.name}</th>" in page
    summary = (RESULTS / "summary.md").read_text(encoding="utf-8")
    assert "stcheck conformance --out corpus/results" in summary


@pytest.mark.slow
def test_committed_page_renders(tmp_path):
    shot = tmp_path / "committed.png"
    _screenshot(RESULTS / "results.html", shot, (1500, 1100))
    width, height, counts = _colour_counts(shot)
    assert (width, height) == (1500, 1100)
    # The top of the page shows the y_ rows: mostly green, with the older
    # releases' yellow refusals of newer dtypes.
    assert counts["expected"] > 5 * counts["should-have-accepted"] > 0, counts
    # Crash red among the y_ rows: only its two swatches plus the y_ crashes
    # the committed run records (tinygrad's KeyError on dtypes it lacks, a
    # crash under the one reject-or-crash rule of conformance/adapter.py).
    _, results = _committed()
    y_crashes = sum(1 for r in results if r.file.startswith("y_") and r.status == "crash")
    assert counts["crash"] <= 2 * 14 * 14 + y_crashes * 18 * 18, (counts, y_crashes)
