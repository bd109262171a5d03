# Strategy: the matrix's fuzz columns (validator/conformance/fuzzing.py).
# Fast: the adapters' frame protocol on real loaders (the naive Python one
# and @huggingface/hub's reader under Node), how a campaign's --out folder
# is read back and saved beside the report, the page and the JSON lines.
# Slow: the real matrix, `stcheck conformance --fuzz-seconds`, on the real
# loaders for a few seconds each, then on a Dask scheduler and worker of its
# own, then the page in headless Chromium.  Nothing here fakes a campaign:
# every campaign is `stcheck fuzz loader-under-test` over a real loader.
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from validator.cli.main import main
from validator.conformance.fuzzing import GROUPS, Campaign, Cause, FuzzClass, read_fuzz_lines, read_out, save
from validator.conformance.harness import Case, Impl, Result, load_impls
from validator.conformance.report import render_html, render_markdown

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
ADAPTERS = CORPUS / "adapters"
JS = ADAPTERS / "js"
SCHEMA = ROOT / "validator" / "schemas" / "conformance-results.schema.json"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
# Where .ci/run builds the Rust crate's harness (fuzz/harness/rust/build.sh).
EXT = os.environ.get("STCHECK_MATRIX_EXT") or os.environ.get("STCHECK_EXT")


def _frames(*inputs: bytes) -> bytes:
    return b"".join(struct.pack("<I", len(data)) + data for data in inputs)


def _file(header: bytes, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header + data


VALID = (CORPUS / "y_dtype_f32.safetensors").read_bytes()
NO_OFFSETS = _file(b'{"a":{"dtype":"F32","shape":[1]}}')
NOT_JSON = _file(b"{nope")
NULL_SHAPE = _file(b'{"a":{"dtype":"F32","shape":null,"data_offsets":[0,4]}}', b"\0" * 4)
INFINITE_DIM = _file(b'{"a":{"dtype":"F32","shape":[1e309],"data_offsets":[0,4]}}', b"\0" * 4)


def _persistent(argv: list[str], *inputs: bytes) -> list[str]:
    done = subprocess.run(argv, input=_frames(*inputs), capture_output=True, env=ENV, timeout=60, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode().splitlines()


def test_a_python_adapter_serves_the_frame_protocol():
    lines = _persistent([sys.executable, str(ADAPTERS / "naive.py"), "--persistent"], VALID, NO_OFFSETS, NOT_JSON)
    assert lines[0] == "accept"
    # A crash names the loader's own frame, the cause the campaign groups by.
    assert lines[1] == "crash KeyError naive.py:27 (load): 'data_offsets'"
    assert lines[2].startswith("reject JSONDecodeError: ")
    assert len(lines) == 3


def test_an_infinite_dimension_is_the_loaders_verdict_not_an_adapter_crash():
    # The naive loader accepts this file; describing its shape (float infinity)
    # used to raise OverflowError inside the adapter, which the matrix and the
    # campaign then blamed on the loader as crash:OverflowError.
    lines = _persistent([sys.executable, str(ADAPTERS / "naive.py"), "--persistent"], INFINITE_DIM)
    assert lines == ["accept"]


def test_a_shape_the_loader_passes_through_is_described_not_crashed_on():
    # The naive loader (and huggingface_hub's parser) hand back the header's
    # `"shape": null` and accept the file: a TypeError in the adapter's
    # description of it was reported as the loader's crash:TypeError.
    lines = _persistent([sys.executable, str(ADAPTERS / "naive.py"), "--persistent"], NULL_SHAPE)
    assert lines == ["accept"]
    done = subprocess.run(
        [sys.executable, str(ADAPTERS / "naive.py"), "/dev/stdin"],
        input=NULL_SHAPE,
        capture_output=True,
        env=ENV,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tensors"][0]["shape"] == ["None"]


def _nested(depth: int) -> bytes:
    return _file(b"[" * depth + b"]" * depth)


def test_a_header_nested_to_the_recursion_limit_replays_as_it_was_found():
    # The campaign keeps the shortest input of a class, so a RecursionError is
    # kept at the exact depth where it starts.  huggingface_hub's long run kept
    # 990 levels that crashed in the persistent harness and were rejected by a
    # fresh process: the harness called the loader one frame deeper.
    naive = [sys.executable, str(ADAPTERS / "naive.py")]
    depths = range(960, 1000)
    lines = _persistent([*naive, "--persistent"], *(_nested(d) for d in depths))
    first = next(d for d, line in zip(depths, lines, strict=True) if line.startswith("crash RecursionError "))
    for depth in (first - 1, first):
        one = subprocess.run([*naive, "/dev/stdin"], input=_nested(depth), capture_output=True, env=ENV, check=False)
        crashed_here = lines[depth - depths.start].startswith("crash RecursionError ")
        assert crashed_here == (b"crash: RecursionError" in one.stderr), (depth, one.stderr[-300:])


def _node_adapter() -> list[str]:
    if shutil.which("node") is None:
        pytest.skip("node is not installed (apt-get install nodejs)")
    if not (JS / "node_modules" / "@huggingface" / "hub").is_dir():
        pytest.skip("the JavaScript adapters are not installed: npm ci --prefix corpus/adapters/js")
    return ["node", str(JS / "hf_hub_safetensors.mjs")]


def test_the_js_reader_serves_both_protocols():
    node = _node_adapter()
    probe = subprocess.run([*node, "--probe"], capture_output=True, text=True, timeout=60, check=False)
    assert json.loads(probe.stdout) == {"version": "2.17.5"}
    one = subprocess.run([*node, str(CORPUS / "y_dtype_f32.safetensors")], capture_output=True, text=True, check=False)
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["tensors"][0]["shape"] == [2, 3]
    lines = _persistent(
        [*node, "--persistent"], VALID, _file(b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}')
    )
    assert lines[0] == "accept"
    assert lines[1].startswith('reject SafetensorParseError: Failed to parse file model.safetensors: tensor "a" ')
    # Three bytes: the reader takes bytes 0-7 of a 3-byte file as its length.
    short = _persistent([*node, "--persistent"], b"abc")
    assert short == [
        "crash RangeError chunk-AXSL4LYE.mjs:7625 (parseSingleFile): Offset is outside the bounds of the DataView"
    ]


def test_command_implementations_skip_with_their_install_line(tmp_path):
    impls = {i.name: i for i in load_impls(CORPUS, None, ["safetensors-crate", "hub-js", "naive", "stcheck-strict"])}
    crate = impls["safetensors-crate"]
    assert crate.skip_reason == (
        "STCHECK_EXT is not set; install with: fuzz/harness/rust/build.sh $STCHECK_EXT/rust-harness plain"
        "   # the Rust crate, from Debian's crate sources"
    )
    missing = load_impls(CORPUS, str(tmp_path), ["safetensors-crate"])[0]
    assert missing.skip_reason is not None
    assert missing.skip_reason.startswith(f"{tmp_path.resolve()}/rust-harness/safetensors-harness not found; ")
    assert crate.fuzz_argv is not None
    assert crate.fuzz_argv[-1] == "--persistent"
    assert impls["hub-js"].probe_argv is not None
    assert impls["naive"].fuzz_argv == (sys.executable, str(ADAPTERS / "naive.py"), "--persistent")
    assert impls["stcheck-strict"].fuzz_argv is None  # the oracle is not fuzzed against itself


# --- a campaign's --out folder, read back and saved -----------------------------------------


def _note(out: Path, category: str, data: bytes, causes: dict[str, tuple[int, bytes]]) -> None:
    base = category.replace(":", "_")
    (out / f"{base}.safetensors").write_bytes(data)
    entry = {}
    for i, (cause, (count, cdata)) in enumerate(causes.items()):
        name = f"{base}@{i:08x}.safetensors"
        (out / name).write_bytes(cdata)
        entry[cause] = {"count": count, "file": str(out / name), "size": len(cdata)}
    note = {"category": category, "detail": f"{out}/{base}.safetensors:8: detail", "size": len(data), "causes": entry}
    (out / f"{base}.json").write_text(json.dumps(note))


def test_an_out_folder_is_read_and_saved_beside_the_report(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    _note(
        out,
        "crash:KeyError",
        b"k" * 16,
        {"naive.py:N (load): 'dtype'": (3, b"k" * 20), "naive.py:N (load): 'shape'": (9, b"s" * 18)},
    )
    _note(out, "accepts-invalid:buffer-trailing-bytes", b"t" * 15, {"buffer-trailing-bytes": (4, b"t" * 15)})
    (out / "stray.json").write_text("{not json")  # a foreign file is left out, not a traceback
    (out / "linked.json").symlink_to(out / "crash_KeyError.json")
    classes, files = read_out(out)
    assert [c.category for c in classes] == ["accepts-invalid:buffer-trailing-bytes", "crash:KeyError"]
    crash = classes[1]
    assert crash.group == "crashes"
    assert crash.detail == "crash_KeyError.safetensors:8: detail"  # no private folder in the report
    assert [(k.cause, k.count) for k in crash.causes] == [
        ("naive.py:N (load): 'shape'", 9),
        ("naive.py:N (load): 'dtype'", 3),
    ]
    report = tmp_path / "report"
    planted = report / "fuzz" / "naive"
    planted.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    (planted / "crash_KeyError.safetensors").symlink_to(victim)
    saved = save(Campaign("naive", 5, 6.5, "host", classes=classes, files=files), report)
    assert victim.read_bytes() == b"keep"  # a link at a reproducer's name is replaced, not written through
    assert saved.files == ()
    assert saved.classes[1].file == "fuzz/naive/crash_KeyError.safetensors"
    assert (report / saved.classes[1].causes[0].file).read_bytes() == b"s" * 18
    assert not [p for p in planted.iterdir() if p.name.startswith(".part-")]


def test_refusing_an_implementation_defined_file_is_a_class_of_its_own(tmp_path):
    # safetensors 0.8.0 accepts the array form of an entry and stcheck's strict
    # profile refuses it: the corpus calls it implementation-defined
    # (i_entry_array_form), so a loader refusing it is no rejects-valid bug,
    # while refusing an F6_E2M3 tensor that both accept stays one.
    out = tmp_path / "out"
    out.mkdir()
    array_form = (CORPUS / "i_entry_array_form.safetensors").read_bytes()
    f6 = (CORPUS / "y_dtype_f6_e2m3.safetensors").read_bytes()
    _note(
        out,
        "rejects-valid",
        array_form,
        {"cannot use at() with array": (7, array_form), "unsupported dtype FN_ENMN": (19, f6)},
    )
    classes, _ = read_out(out)
    assert [(c.category, c.group, [k.cause for k in c.causes]) for c in classes] == [
        ("rejects-valid", "rejects", ["unsupported dtype FN_ENMN"]),
        ("rejects-implementation-defined", "idef", ["cannot use at() with array"]),
    ]
    assert classes[0].file == "rejects-valid@00000001.safetensors"
    assert classes[1].file == "rejects-valid@00000000.safetensors"


def _campaign() -> Campaign:
    causes = (Cause("naive.py:N (load): 'dtype'", 3, "fuzz/naive/crash_KeyError@1.safetensors", 20),)
    classes = (
        FuzzClass("accepts-invalid:buffer-trailing-bytes", "accepts", "d1", "fuzz/naive/a.safetensors", 15, ()),
        FuzzClass("rejects-valid", "rejects", "d2", "fuzz/naive/r.safetensors", 12, ()),
        FuzzClass("crash:KeyError", "crashes", "<b>d3</b>", "fuzz/naive/crash_KeyError.safetensors", 16, causes),
        FuzzClass("hang", "hangs", "d4", "fuzz/naive/hang.safetensors", 9, ()),
    )
    return Campaign("naive", 5, 6.5, "host", None, classes)


def test_the_page_and_the_json_carry_each_loaders_findings():
    campaign = _campaign()
    impls = [Impl(name="naive", argv=(), version="1"), Impl(name="other", argv=(), version="1")]
    case = Case(
        "y_a.safetensors", CORPUS / "y_a.safetensors", "y", "accept", "accept", (), "", {"kind": "spec", "ref": "x"}
    )
    results = [Result("naive", case.file, "expected"), Result("other", case.file, "expected")]
    page = render_html(impls, [case], results, "cmd", campaigns=[campaign])
    for title in ("bad accepts", "bad rejects", "crashes", "hangs"):
        assert f">fuzz: {title}</th>" in page
    assert '<td class="fz" data-fuzz="crashes" title="naive crashes: crash:KeyError"><a href="#fuzz-naive">' in page
    assert '<a href="fuzz/naive/crash_KeyError@1.safetensors">20 bytes</a>' in page
    assert "&lt;b&gt;d3&lt;/b&gt;" in page  # a loader's message is text, never markup
    markdown = render_markdown(impls, [case], results, "cmd", [campaign])
    assert "| naive | 6 of 5 | 1 (1) | 1 (1) | 1 (1) | 1 (1) |  |  |" in markdown
    assert "  - 3x `naive.py:N (load): 'dtype'` ([20 bytes](fuzz/naive/crash_KeyError@1.safetensors))" in markdown
    line = campaign.to_json()
    Draft202012Validator(json.loads(SCHEMA.read_text())).validate(line)
    assert read_fuzz_lines([line]) == [campaign]
    assert {g for g, _, _, _ in GROUPS} >= {c.group for c in campaign.classes}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--fuzz-seconds", "3"],
            "stcheck: --fuzz-seconds needs --out DIR: the reproducers are saved beside the report",
        ),
        (
            ["--cluster", "local:1", "--out", "X"],
            "stcheck: --cluster runs the fuzz campaigns: give --fuzz-seconds N too",
        ),
        (["--fuzz-seconds", "-1"], "stcheck: --fuzz-seconds must be 0 (off) or more"),
        (
            # refused before the corpus runs, not after the whole matrix
            ["--fuzz-seconds", "1", "--cluster", "bogus://x", "--out", "X"],
            "stcheck: --cluster bogus://x: expected tcp://HOST:PORT of a Dask scheduler, or local:N",
        ),
    ],
    ids=["no-out", "cluster-alone", "negative", "bad-cluster"],
)
def test_fuzz_usage_errors(argv, message, capsys):
    assert main(["conformance", *argv]) == 2
    assert capsys.readouterr().err.strip() == message


# --- the real matrix ------------------------------------------------------------------------

LOADERS = ("naive", "safetensors-0.8.0", "huggingface_hub", "torch-dcp-hf", "hub-js", "safetensors-crate")
LANGUAGE = {
    "naive": "Python",
    "huggingface_hub": "Python",
    "torch-dcp-hf": "Python",
    "safetensors-0.8.0": "Rust (the wheel)",
    "safetensors-crate": "Rust",
    "hub-js": "JavaScript",
}


def _matrix(out: Path, seconds: int, *extra: str) -> tuple[subprocess.CompletedProcess[str], list[dict]]:
    argv = [
        sys.executable,
        "-m",
        "validator",
        "conformance",
        "--quiet",
        "--out",
        str(out),
        "--fuzz-seconds",
        str(seconds),
    ]
    argv += ["--files", "y_dtype_f32.safetensors", "--files", "n_buffer_trailing_1_byte.safetensors", *extra]
    if EXT:
        argv += ["--ext", EXT]
    done = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=300, check=False, cwd=out.parent)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    check = Draft202012Validator(json.loads(SCHEMA.read_text()))
    for line in lines:
        check.validate(line)
    return done, lines


def _by_loader(lines: list[dict]) -> dict[str, dict]:
    return {line["implementation"]: line for line in lines if line["type"] == "fuzz"}


def _categories(campaign: dict) -> set[str]:
    return {c["category"] for c in campaign["classes"]}


@pytest.mark.slow
def test_the_matrix_fuzzes_real_loaders(tmp_path):
    out = tmp_path / "report"
    only = [a for name in LOADERS for a in ("--only", name)]
    start = time.monotonic()
    done, lines = _matrix(out, 2, "--jobs", "2", *only)
    elapsed = time.monotonic() - start
    fuzz = _by_loader(lines)
    skipped = {line["implementation"]: line["skipped"] for line in lines if line["type"] == "implementation"}
    ran = {name for name in LOADERS if not skipped[name]}
    assert set(fuzz) == ran
    for name, campaign in fuzz.items():
        assert campaign["error"] is None, (name, campaign["error"])
        assert campaign["worker"] is None
        for cls in campaign["classes"]:
            for path in [cls["file"], *(c["file"] for c in cls["causes"])]:
                assert (out / path).is_file(), (name, path)
    # The reference cannot disagree with itself: neither its wheel nor its crate
    # may have a class (each would be a false report of stcheck's).
    assert fuzz["safetensors-0.8.0"]["classes"] == []
    if "safetensors-crate" in fuzz:
        assert fuzz["safetensors-crate"]["classes"] == []
    # The naive loader: trailing bytes accepted, a missing field a KeyError, from the seeds alone.
    assert {"accepts-invalid:buffer-trailing-bytes", "crash:KeyError"} <= _categories(fuzz["naive"])
    assert "accepts-invalid:buffer-trailing-bytes" in _categories(fuzz["huggingface_hub"])
    if "hub-js" in fuzz:
        assert "crash:RangeError" in _categories(fuzz["hub-js"])
    page = (out / "results.html").read_text()
    assert '<a href="fuzz/naive/crash_KeyError.safetensors">' in page
    assert "fuzz naive: " in done.stdout
    _fuzz_columns_in_chromium(out, lines)
    languages = {LANGUAGE[n] for n in ran}
    print(
        f"matrix: {len(ran)} loaders in {sorted(languages)}, {elapsed:.1f} s; skipped: {[n for n in LOADERS if n not in ran]}"
    )
    if len(ran) < len(LOADERS):
        pytest.skip(
            f"ran {sorted(ran)}; not installed here: "
            + "; ".join(f"{n}: {skipped[n]}" for n in LOADERS if n not in ran)
        )


def _fuzz_columns_in_chromium(out: Path, lines: list[dict]) -> None:
    """The page in headless Chromium: each loader's fuzz cells show one swatch
    per question it failed, in the matrix's colour for that failure; counted
    as the pixels the page has beyond the same page without the campaigns."""
    from test_conformance import _colour_counts, _screenshot

    from validator.conformance.harness import load_cases, read_jsonl

    impls, results = read_jsonl(out / "results.jsonl")
    cases = [c for c in load_cases(CORPUS) if c.file in {r.file for r in results}]
    bare = out / "bare.html"
    bare.write_text(render_html(impls, cases, results, "cmd"), encoding="utf-8")
    shots = {}
    for name, page in (("fuzz", out / "results.html"), ("bare", bare)):
        shots[name] = out.parent / f"{name}.png"
        _screenshot(page, shots[name], (1700, 1000))
    keep = os.environ.get("STCHECK_KEEP_SCREENSHOT")
    if keep:
        shutil.copy(shots["fuzz"], keep)
    (_, _, with_fuzz), (_, _, without) = _colour_counts(shots["fuzz"]), _colour_counts(shots["bare"])
    colour_status = {"#ff7f00": "should-have-rejected", "#ffd92f": "should-have-accepted", "#e41a1c": "crash"}
    fuzz = _by_loader(lines)
    for group, _, _, colour in GROUPS:
        if colour not in colour_status:
            continue
        cells = sum(any(c["group"] == group for c in campaign["classes"]) for campaign in fuzz.values())
        extra = with_fuzz[colour_status[colour]] - without[colour_status[colour]]
        assert abs(extra - cells * 22 * 14) <= 2 * 22, (group, cells, extra)


def _dask() -> list[str]:
    script = Path(sys.executable).parent / "dask"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dask"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def _scheduler_and_worker():
    distributed = pytest.importorskip(
        "distributed", reason="the cluster test needs dask[distributed]: pip install '.[cluster]' from this checkout"
    )
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "env": ENV}
    procs = [
        subprocess.Popen([*_dask(), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], **quiet)
    ]
    procs.append(
        subprocess.Popen(
            [
                *_dask(),
                "worker",
                address,
                "--nworkers",
                "2",
                "--nthreads",
                "1",
                "--host",
                "127.0.0.1",
                "--no-dashboard",
            ],
            **quiet,
        )
    )
    try:
        with distributed.Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        yield address
    finally:
        for proc in reversed(procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in reversed(procs):
            _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.mark.slow
def test_the_matrix_runs_one_campaign_per_loader_on_a_dask_cluster(tmp_path):
    with _scheduler_and_worker() as address:
        out = tmp_path / "report"
        _, lines = _matrix(out, 3, "--only", "naive", "--only", "huggingface_hub", "--cluster", address)
    fuzz = _by_loader(lines)
    assert set(fuzz) == {"naive", "huggingface_hub"}
    for campaign in fuzz.values():
        assert campaign["worker"] is not None
        assert campaign["worker"].startswith("tcp://127.0.0.1:")
        assert campaign["error"] is None
    # Merged here: the workers' reproducers are files beside this report.
    assert "crash:KeyError" in _categories(fuzz["naive"])
    for campaign in fuzz.values():
        for cls in campaign["classes"]:
            assert (out / cls["file"]).is_file()
    assert "Dask worker tcp://127.0.0.1:" in (out / "results.html").read_text()
