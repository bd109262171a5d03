"""Triage by root cause (validator/fuzz/triage.py): crash sites from real and
recorded stacks, and minimisation that keeps the class and the cause."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import textwrap
from pathlib import Path

import pytest

from validator.fuzz import loader_under_test as lut
from validator.fuzz import triage

ROOT = Path(__file__).resolve().parent.parent
_ASAN_OK: bool | None = None

# A loader with two crash sites, one per function, picked by the first letter of the header's first key.
TWO_SITES = r"""
#include <stdio.h>
static int *volatile nowhere;
__attribute__((noinline)) static int read_dtype(void) { return nowhere[1]; }
__attribute__((noinline)) static int read_shape(void) { return nowhere[2]; }
int main(int argc, char **argv) {
    unsigned char buf[11] = {0};
    FILE *f = argc == 2 ? fopen(argv[1], "rb") : NULL;
    if (f == NULL || fread(buf, 1, 11, f) != 11) return 1;
    fclose(f);
    if (buf[10] == 'a') return read_dtype();
    if (buf[10] == 'b') return read_shape();
    return 1;
}
"""


def _file(header: bytes, tail: bytes = b"") -> bytes:
    return struct.pack("<Q", len(header)) + header + tail


def _asan_binary(tmp_path: Path) -> Path:
    source = tmp_path / "two_sites.c"
    source.write_text(TWO_SITES)
    binary = tmp_path / "two_sites"
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    done = subprocess.run(
        ["cc", "-g", "-O1", "-fsanitize=address", "-o", str(binary), str(source)],
        capture_output=True,
        check=False,
        timeout=60,
    )
    if done.returncode != 0:
        pytest.skip(f"cc cannot build with AddressSanitizer: {done.stderr.decode(errors='replace')[-200:]}")
    return binary


def _causes(loader: lut.LoaderUnderTest, data: bytes) -> list[tuple[str, str, str]]:
    found, outcome = lut.examine(loader, data)
    return [(c, lut.cause_of(c, d, outcome), outcome.trace) for c, d in found if c.startswith("crash:")]


def test_two_stacks_in_one_class_are_two_causes_and_one_site_at_new_addresses_is_one(tmp_path: Path) -> None:
    loader = lut.LoaderUnderTest(command=f"{_asan_binary(tmp_path)} {{path}}")
    [(class_a, cause_a, trace_a)] = _causes(loader, _file(b'{"a":1}'))
    [(class_b, cause_b, _)] = _causes(loader, _file(b'{"b":1}'))
    [(class_a2, cause_a2, trace_a2)] = _causes(loader, _file(b'{"a":2}  '))
    assert class_a == class_b == class_a2  # one class ...
    assert cause_a != cause_b  # ... two causes: read_dtype and read_shape
    assert "read_dtype < main" in cause_a
    assert "read_shape < main" in cause_b
    assert cause_a2 == cause_a  # the same site, whatever the addresses (ASLR moves them per run)
    addresses = re.compile(r"#0 (0x[0-9a-f]+)")
    if addresses.findall(trace_a) != addresses.findall(trace_a2):
        assert cause_a2 == cause_a


ASAN_TRACE = textwrap.dedent("""\
    AddressSanitizer:DEADLYSIGNAL
    =================================================================
    ==4242==ERROR: AddressSanitizer: stack-overflow on address 0x7ffd1f3e8ff8 (pc 0x55e50a3561bd sp 0x7ffd1f3e9000 T1)
        #0 0x55e50a3561bd in deep_value /src/fuzz/examples/deep_loader.c:47:5
        #1 0x55e50a356aaa in deep_value /src/fuzz/examples/deep_loader.c:66:9
        #2 0x55e50a356aaa in deep_value /src/fuzz/examples/deep_loader.c:66:9
        #3 0x55e50a356aaa in deep_value /src/fuzz/examples/deep_loader.c:66:9
        #246 0x7f4467a45304 in start_thread nptl/pthread_create.c:442:8

    SUMMARY: AddressSanitizer: stack-overflow /src/fuzz/examples/deep_loader.c:47:5 in deep_value
    ==4242==ABORTING
""")


def test_a_recorded_stack_ignores_addresses_lines_and_runtime_frames() -> None:
    moved = re.sub(r"0x[0-9a-f]+", "0x1234", ASAN_TRACE).replace(":47:5", ":48:1").replace("4242", "7")
    cause = triage.crash_cause(ASAN_TRACE)
    assert cause is not None
    assert cause.startswith("AddressSanitizer: stack-overflow in deep_value < deep_value < deep_value [stack ")
    assert triage.crash_cause(moved) == cause
    interposed = ASAN_TRACE.replace(
        "    #0 0x55e50a3561bd in deep_value",
        "    #0 0x55e50a351111 in __interceptor_memcpy (/usr/lib/libasan.so.8+0x1234)\n"
        "    #1 0x55e50a3561bd in deep_value",
    )
    assert triage.crash_cause(interposed) == cause  # the sanitizer's own frame is not the site


@pytest.mark.parametrize(
    ("trace", "cause"),
    [
        (
            (
                "./harness(parse_shape+0x1c)[0x55d5c0a0b1c2]\n./harness(naive_load+0x9a)[0x55d5c0a0b2aa]\n"
                "/lib/x86_64-linux-gnu/libc.so.6(+0x29d90)[0x7f1c0c029d90]\n./harness(main+0x20)[0x55d5c0a0b300]\n"
            ),
            "SIGSEGV in parse_shape < naive_load < main",
        ),
        (
            (
                "thread 'main' panicked at src/lib.rs:12:5:\nindex out of bounds\nstack backtrace:\n"
                "   0: rust_begin_unwind\n   1: core::panicking::panic_fmt\n   2: loader::read_shape\n"
                "             at ./src/lib.rs:12:5\n   3: loader::load\n   4: main\n"
            ),
            "crash in loader::read_shape < loader::load < main",
        ),
        ("l.c:12:5: runtime error: signed integer overflow: 2147483647 + 1\n", None),
        ("terminate called after throwing an instance of 'std::out_of_range'\n  what():  stoull\n", None),
    ],
    ids=["glibc-backtrace", "rust-panic", "ubsan", "cxx-terminate"],
)
def test_other_stack_formats(trace: str, cause: str | None) -> None:
    got = triage.crash_cause(("SIGSEGV\n" if "harness(" in trace else "") + trace)
    assert got is not None
    if cause is not None:
        assert got.startswith(cause + " [stack ")
    elif "runtime error" in trace:
        assert got == "runtime error: signed integer overflow at l.c:12"
    else:
        assert got == "uncaught std::out_of_range"


def test_no_stack_falls_back_to_the_signal() -> None:
    outcome = lut.Outcome(accepted=False, crashed=True, detail="killed by signal 11 (SIGSEGV)", trace="")
    assert lut.cause_of("crash:signal-SIGSEGV", "killed by signal 11 (SIGSEGV)", outcome) == (
        "killed by signal N (SIGSEGV)"
    )


# --- minimisation ----------------------------------------------------------


def _planted(path: str) -> dict[str, bytes]:
    """A loader that crashes (IndexError) on any F16 tensor, wherever it is in the header."""
    data = Path(path).read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    for name, info in header.items():
        if name != "__metadata__" and info["dtype"] == "F16":
            return {name: info["shape"][7]}  # the planted bug
    return {}


def _planted_file() -> bytes:
    tensors = {
        f"layer{i}.weight": {"dtype": "F32", "shape": [4, 4], "data_offsets": [64 * i, 64 * i + 64]} for i in range(6)
    }
    tensors["bias"] = {"dtype": "F16", "shape": [2], "data_offsets": [384, 388]}
    header = json.dumps({"__metadata__": {"format": "pt", "note": "x" * 200}, **tensors}).encode()
    return _file(header, bytes(388))


def test_minimisation_shrinks_a_planted_reproducer_and_keeps_its_cause() -> None:
    loader = lut.LoaderUnderTest(function=_planted)
    data = _planted_file()
    [(category, cause, _)] = _causes(loader, data)
    small = lut.shrink(loader, data, category, cause)
    assert len(small) < len(data) // 10, (len(data), len(small))
    assert b'"F16"' in small
    assert _causes(loader, small) == [(category, cause, _causes(loader, small)[0][2])]


def test_minimisation_stops_at_its_budget() -> None:
    calls = []

    def keeps(candidate: bytes) -> bool:
        calls.append(candidate)
        return True

    done = triage.minimise(_planted_file(), keeps, attempts=5)
    assert done.attempts == len(calls) == 5
    done = triage.minimise(_planted_file(), keeps, seconds=0.0)
    assert done.attempts == 0
    assert done.data == _planted_file()


def test_peeling_halves_nesting_in_matched_pairs() -> None:
    deep = _file(b'{"x":' + b"[" * 1000 + b"0" + b"]" * 1000 + b"}")
    depths = []

    def keeps(candidate: bytes) -> bool:
        header = candidate[8 : 8 + int.from_bytes(candidate[:8], "little")]
        ok = header.count(b"[") == header.count(b"]") >= 100 and json.loads(header) is not None
        if ok:
            depths.append(header.count(b"["))
        return ok

    done = triage.minimise(deep, keeps, attempts=100)
    assert 100 <= done.data.count(b"[") < 200
    assert len(done.data) < len(deep) // 4


def test_the_fuzz_target_keeps_each_new_cause_minimised(tmp_path: Path) -> None:
    out = tmp_path / "out"
    target = lut.make_target(lut.LoaderUnderTest(function=_planted), str(out))
    data = _planted_file()
    target(data)
    [entry] = lut.read_findings(str(out))
    [cause] = entry["causes"]
    kept = Path(cause["path"]).read_bytes()
    assert len(kept) < len(data) // 10
    assert cause["cause"] == f"test_fuzz_triage.py:{_planted.__code__.co_firstlineno + 7} (_planted)"


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("make") is None, reason="no C compiler or make")
def test_minimising_the_deep_reproducer_keeps_the_stack_overflow(tmp_path: Path) -> None:
    subprocess.run(
        ["make", "-s", "-C", str(ROOT / "fuzz" / "harness"), f"OUT={tmp_path}", str(tmp_path / "deep_loader")],
        check=True,
        capture_output=True,
        timeout=120,
    )
    loader = lut.LoaderUnderTest(command=f"{tmp_path / 'deep_loader'} {{path}}")
    header = (
        b'{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":' + b"[" * 200_000 + b"0" + b"]" * 200_000 + b"}"
    )
    data = _file(header, b"\0")
    [(category, cause, _)] = _causes(loader, data)
    assert category == "crash:signal-SIGSEGV"
    small = lut.shrink(loader, data, category, cause, attempts=40)
    assert len(small) < len(data) // 2, (len(data), len(small))
    assert [c[:2] for c in _causes(loader, small)] == [(category, cause)]
