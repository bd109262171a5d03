# Strategy: every command that walks a folder or reads an index, run on
# hostile names, must keep control bytes off the terminal.  File names,
# tensor names and shard names carry ESC sequences, CR, LF (each followed by
# a forged line), a bidi override and bytes that are not UTF-8; each command
# runs in a child process so that its raw stdout and stderr bytes are
# checked: no ESC, CR, BEL or U+202E, no undecodable byte, and no line that
# starts with the forged text.  (`download` is covered by its own tests.)
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from scan_fixtures import build, f32, sha256, write

if TYPE_CHECKING:
    from pathlib import Path

FORGED = "FORGED 0 errors"
ESC = "\x1b[2J\x1b]0;owned\x07"
NAMES = [
    f"e{ESC}.safetensors",
    f"c\r{FORGED}.safetensors",
    f"l\n{FORGED}.safetensors",
    "b\u202egpj.safetensors",
    os.fsdecode(b"x\xff\xfe.safetensors"),
]
TENSORS = [f"t{ESC}", f"t\r{FORGED}", f"t\n{FORGED}", "t\u202e"]
CKPT = f"ckpt{ESC}\n{FORGED}"  # the checkpoint heading names the index by its path
RAW_BAD = [b"\x1b", b"\r", b"\x07", "\u202e".encode(), b"\xff", b"\xfe"]


def _file(tensors: list[str]) -> bytes:
    return build([(name, "F32", [1], f32(float(i))) for i, name in enumerate(tensors)])


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile")
    folder = root / "dl"
    for name in NAMES:
        write(folder / name, _file(TENSORS))
    # A checkpoint whose shard and tensor names are hostile too.
    shard_a, shard_b = f"s{ESC}-1.safetensors", f"s\n{FORGED}-2.safetensors"
    write(folder / CKPT / shard_a, _file(TENSORS[:2]))
    write(folder / CKPT / shard_b, _file([*TENSORS[2:], f"missing\r{FORGED}"]))
    weight_map = {TENSORS[0]: shard_a, TENSORS[1]: shard_a, TENSORS[2]: shard_b, TENSORS[3]: shard_b}
    weight_map[f"absent\n{FORGED}"] = shard_b
    index = {"metadata": {"total_size": 16}, "weight_map": weight_map}
    write(folder / CKPT / "model.safetensors.index.json", json.dumps(index).encode())
    # Other files and links with hostile names.
    write(folder / f"p{ESC}.bin", pickle.dumps({"a": 1}, protocol=4))
    write(folder / f"m\n{FORGED}.py", b"print(1)\n")
    write(folder / os.fsdecode(b"notes\xff\r.txt"), b"hi\n")
    (folder / f"out{ESC}\n{FORGED}").symlink_to(root)  # leaves the folder (and loops back into it)
    # A hub cache whose snapshot names are hostile.
    blob = _file(TENSORS)
    repo = root / "hub" / "models--acme--tiny"
    write(repo / "blobs" / sha256(blob), blob)
    snap = repo / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    for name in NAMES:
        (snap / name).symlink_to(f"../../blobs/{sha256(blob)}")
    return root


COMMANDS = {
    "check": ["check", "{dl}"],
    "check-json": ["check", "--format", "json", "{dl}"],
    "check-index": ["check", "{dl}/" + CKPT + "/model.safetensors.index.json"],
    "inspect": ["inspect", "{dl}"],
    "inspect-json": ["inspect", "--format", "json", "{dl}"],
    "inspect-index": ["inspect", "{dl}/" + CKPT + "/model.safetensors.index.json"],
    "scan": ["scan", "{dl}"],
    "scan-json": ["scan", "--format", "json", "{dl}"],
    "scan-sarif": ["scan", "--format", "sarif", "{dl}"],
    "scan-junit": ["scan", "--format", "junit", "{dl}"],
    "scan-hf-cache": ["scan", "--hf-cache", "{hub}"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_no_control_byte_reaches_the_terminal(hostile, command):
    argv = [a.format(dl=hostile / "dl", hub=hostile / "hub") for a in COMMANDS[command]]
    if argv[0] == "scan":
        argv[1:1] = ["--no-config", "--progress", "never", "-j", "1"]
    done = subprocess.run([sys.executable, "-m", "validator", *argv], capture_output=True, timeout=120, check=False)
    assert done.returncode in {0, 1, 2}, done.stderr
    assert done.stdout, command
    for stream in (done.stdout, done.stderr):
        for bad in RAW_BAD:
            assert bad not in stream, (command, bad, stream[:2000])
        for line in stream.split(b"\n"):
            assert not line.lstrip(b" <\"'").startswith(FORGED.encode()), (command, line)
    if argv[0] in {"check", "inspect"} and "json" not in command:
        # The names are there, escaped: the forged text follows an escape, never a line start.
        assert b"\\n" + FORGED.encode() in done.stdout or b"\\r" + FORGED.encode() in done.stdout, command
