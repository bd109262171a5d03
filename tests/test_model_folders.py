# Strategy: a classic model repository (safetensors beside a torch state
# dict, TensorFlow, Flax, Rust and ONNX copies) passes with warnings, and
# each file in it that would run code or read outside the folder fails,
# naming what: a code-running pickle (ST701), a Keras Lambda layer (ST706),
# ONNX external data outside the folder (ST707).  No pickle is ever loaded:
# pickle.load, pickle.loads, pickle.Unpickler and torch.load are traps.
from __future__ import annotations

import io
import json
import os
import pickle
import struct
import zipfile
from pathlib import Path

import pytest

from tests.scan_fixtures import clean_file, write
from validator.cli.main import main
from validator.sources.codeformats import keras_lambda_layers, onnx_outside_locations


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def _torch_state_dict() -> bytes:
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save({"w": torch.zeros(4)}, buf)
    return buf.getvalue()


# -- protobuf, by hand: just enough of ONNX's ModelProto ------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def onnx_model(*locations: str, nested: bool = False) -> bytes:
    """A ModelProto whose initializers keep their data in ``locations``
    (in a node attribute's subgraph when ``nested``)."""
    tensors = b""
    for location in locations:
        entry = _field(1, b"location") + _field(2, location.encode())
        tensors += _field(5, _field(8, b"w") + _field(13, entry) + _varint(14 << 3) + _varint(1))
    graph = tensors
    if nested:
        attribute = _field(1, b"then_branch") + _field(6, tensors)
        graph = _field(1, _field(5, attribute))
    return _varint(1 << 3) + _varint(8) + _field(7, graph)


def keras_zip(*layers: dict) -> bytes:
    config = {"class_name": "Sequential", "config": {"name": "seq", "layers": list(layers)}}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("metadata.json", "{}")
        archive.writestr("config.json", json.dumps(config))
        archive.writestr("model.weights.h5", b"\x89HDF\r\n\x1a\n")
    return buf.getvalue()


LAMBDA = {"class_name": "Lambda", "config": {"name": "exfil", "function": {"class_name": "__lambda__"}}}
DENSE = {"class_name": "Dense", "config": {"name": "dense", "units": 2}}


def h5_with_config(config: dict) -> bytes:
    text = json.dumps({"class_name": "Functional", "config": config}).encode()
    return b"\x89HDF\r\n\x1a\n" + bytes(120) + struct.pack("<I", len(text)) + text + bytes(64)


def test_keras_lambda_layers_are_named():
    assert keras_lambda_layers_of(keras_zip(DENSE, LAMBDA)) == ["exfil"]
    assert keras_lambda_layers_of(keras_zip(DENSE)) == []
    assert keras_lambda_layers_of(h5_with_config({"layers": [DENSE, LAMBDA]}), ".h5") == ["exfil"]
    assert keras_lambda_layers_of(h5_with_config({"layers": [DENSE]}), ".h5") == []
    assert keras_lambda_layers_of(b"not a model", ".h5") is None


def keras_lambda_layers_of(data: bytes, suffix: str = ".keras") -> list[str] | None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"m{suffix}"
        path.write_bytes(data)
        return keras_lambda_layers(str(path))


def test_onnx_locations_that_leave_the_folder(tmp_path):
    (tmp_path / "outside").mkdir()
    model = tmp_path / "m"
    model.mkdir()
    (model / "data").symlink_to(tmp_path / "outside")
    cases = {
        "weights.bin": [],
        "sub/weights.bin": [],
        "../weights.bin": ["../weights.bin"],
        "/etc/passwd": ["/etc/passwd"],
        "data/weights.bin": ["data/weights.bin"],  # a link out of the folder
    }
    for location, expected in cases.items():
        write(model / "model.onnx", onnx_model(location))
        assert onnx_outside_locations(str(model / "model.onnx")) == expected, location
    write(model / "model.onnx", onnx_model("ok.bin", "../../x", nested=True))
    assert onnx_outside_locations(str(model / "model.onnx")) == ["../../x"]
    for garbage in (b"", b"\xff" * 20, _field(7, b"\x0a\xff\xff\xff")):
        write(model / "model.onnx", garbage)
        assert onnx_outside_locations(str(model / "model.onnx")) in (None, [])


@pytest.fixture
def classic(tmp_path: Path) -> Path:
    """A classic multi-format repository, as the hub holds many."""
    root = tmp_path / "bert"
    write(root / "model.safetensors", clean_file())
    write(root / "pytorch_model.bin", _torch_state_dict())
    write(root / "tf_model.h5", h5_with_config({"layers": [DENSE]}))
    write(root / "flax_model.msgpack", b"\x81\xa6params\x80")
    write(root / "rust_model.ot", b"PK\x03\x04" + bytes(26))
    write(root / "onnx" / "model.onnx", onnx_model("model.onnx_data"))
    write(root / "onnx" / "model.onnx_data", bytes(16))
    write(root / "model.gguf", b"GGUF\x03\x00\x00\x00" + bytes(16))
    write(root / "config.json", b'{"model_type": "bert"}')
    return root


@pytest.fixture
def trapped(monkeypatch):
    """Loading a pickle anywhere fails the test: the reader must never unpickle."""

    def trap(*_args, **_kwargs):
        raise AssertionError("a pickle was loaded")

    monkeypatch.setattr(pickle, "load", trap)
    monkeypatch.setattr(pickle, "loads", trap)
    monkeypatch.setattr(pickle, "Unpickler", trap)
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch, "load", trap)


@pytest.mark.parametrize("command", ["check", "scan"])
def test_a_classic_repository_passes_with_warnings(classic, trapped, command, capsys):
    argv = [command, "--no-config", "--format", "json", str(classic)]
    assert main(argv if command == "check" else [*argv[:1], "-j", "1", *argv[1:]]) == 0
    doc = json.loads(capsys.readouterr().out)
    rules = doc["summary"]["findings_by_rule"]
    # rust_model.ot here is a bare zip local header that no reader opens: said (ST708), a warning.
    assert rules == {"ST705 pickle-weights-only": 1, "ST708 archive-unreadable": 1}
    kinds = doc["summary"]["other_files"]
    assert kinds["HDF5"] == 1
    assert kinds["Flax msgpack"] == 1
    assert kinds["GGUF"] == 1
    assert kinds["ONNX"] == 2


@pytest.mark.parametrize(
    ("name", "data", "rule", "named"),
    [
        ("training_args.bin", pickle.dumps(_Evil()), "ST701 pickle-file", "calls "),
        ("tf_model.h5", h5_with_config({"layers": [DENSE, LAMBDA]}), "ST706 keras-lambda-layer", "'exfil'"),
        ("model.keras", keras_zip(LAMBDA), "ST706 keras-lambda-layer", "'exfil'"),
        ("onnx/model.onnx", onnx_model("../../../home/user/.ssh/id_rsa"), "ST707 onnx-external-data-outside", ".ssh"),
    ],
)
def test_one_dangerous_file_fails_the_same_repository(classic, trapped, name, data, rule, named, capsys):  # noqa: PLR0917 - pytest parameters
    write(classic / name, data)
    assert main(["check", "--no-config", str(classic)]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if f": {rule} " in line]
    assert len(lines) == 1
    assert lines[0].startswith(f"{classic / name}: {rule}")
    assert named in lines[0]


def test_the_hub_cache_judges_pickles_by_content(tmp_path, trapped, capsys):
    from tests.scan_fixtures import fake_hf_cache, sha256

    fake_hf_cache(tmp_path / "hub", corrupt=False)
    repo = tmp_path / "hub" / "models--acme--tiny"
    evil = pickle.dumps(_Evil())
    (repo / "blobs" / sha256(evil)).write_bytes(evil)
    snapshot = repo / "snapshots" / ("a" * 40)
    (snapshot / "training_args.bin").symlink_to(Path("..", "..", "blobs", sha256(evil)))
    assert main(["scan", "--no-config", "-j", "1", "--hf-cache", str(tmp_path / "hub")]) == 1
    out = capsys.readouterr().out
    assert "training_args.bin: ST701 pickle-file" in out
    assert "calls " in out
