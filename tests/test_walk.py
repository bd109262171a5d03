# Strategy: whole-download vetting.  A model folder is built in a temporary
# directory from real writers' bytes (torch.save, numpy.save, pickle.dumps
# of an object whose __reduce__ would call os.system: written, never
# loaded) beside a valid model.safetensors, and every command that walks a
# folder (check, scan, inspect) must give each file a verdict: pickles are
# errors that name the file (and the safetensors copy when there is one),
# Python files warnings, the rest listed by kind.  The classifier is also
# tested alone, on each kind and on the names that only look like pickles.
from __future__ import annotations

import io
import json
import os
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
from scan_fixtures import clean_file, write

from validator.cli.main import main
from validator.sources.kinds import classify, safetensors_copy


class _Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, ("echo pwned > /dev/null",))


def evil_pickle(protocol: int = 4) -> bytes:
    """The bytes of a pickle that would run a shell command when loaded (never loaded here)."""
    return pickle.dumps(_Evil(), protocol=protocol)


def torch_save(obj: object, **kwargs: object) -> bytes:
    torch = pytest.importorskip("torch")
    buf = io.BytesIO()
    torch.save(obj, buf, **kwargs)
    return buf.getvalue()


@pytest.fixture
def download(tmp_path: Path) -> Path:
    """A downloaded model folder: safetensors weights, a torch pickle of the same
    weights, a hostile training_args.bin, custom code and the usual side files."""
    torch = pytest.importorskip("torch")
    root = tmp_path / "dl"
    write(root / "model.safetensors", clean_file())
    write(root / "pytorch_model.bin", torch_save({"w": torch.zeros(2)}))
    write(root / "training_args.bin", evil_pickle())
    write(root / "modeling_tiny.py", b"import os\n")
    write(root / "config.json", b'{"model_type": "tiny"}\n')
    write(root / "tokenizer.json", b'{"version": "1.0"}\n')
    write(root / "README.md", b"# tiny\n")
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def _lines(out: str, code: str) -> dict[str, str]:
    """{file name: line} of the lines reporting rule ``code``."""
    found = {}
    for line in out.splitlines():
        if f": {code} " in line:
            path = line.split(": ", 1)[0]
            found[Path(path).name] = line
    return found


def test_check_dir_fails_on_the_code_running_pickle_and_names_the_call(download, capsys):
    rc, out, err = _run(capsys, "check", str(download))
    assert rc == 1, (out, err)
    # The pickle that would run a command is an error naming the call (issue 29).
    pickles = _lines(out, "ST701 pickle-file")
    assert set(pickles) == {"training_args.bin"}
    assert (
        "loading it calls os.system" in pickles["training_args.bin"]
        or "calls posix.system" in pickles["training_args.bin"]
    )
    assert "safetensors copy is here" not in pickles["training_args.bin"]
    # The torch state dict holds only tensors: a warning, with its safetensors copy named.
    weights = _lines(out, "ST705 pickle-weights-only")
    assert set(weights) == {"pytorch_model.bin"}
    assert "PyTorch checkpoint" in weights["pytorch_model.bin"]
    assert "loads with torch.load(weights_only=True)" in weights["pytorch_model.bin"]
    assert "a safetensors copy is here (model.safetensors)" in weights["pytorch_model.bin"]
    code = _lines(out, "ST702 custom-code")
    assert list(code) == ["modeling_tiny.py"]
    # config.json has no auto_map: the milder text (tests/test_custom_code.py has the mapped case).
    assert "a Python file that no auto_map names (config.json read)" in code["modeling_tiny.py"]
    summary = out.splitlines()[-1]
    # The hostile pickle is a target that fails: never counted as valid (issue 28).
    assert summary.startswith("1 file checked (strict): 1 valid, 0 invalid, 1 other target fails; 1 error, 2 warnings")
    assert summary.endswith("6 other files: 2 pickle, 1 JSON, 1 Python, 1 text, 1 tokenizer")


def test_check_dir_json_lists_every_other_file_by_kind(download, capsys):
    rc, out, _ = _run(capsys, "check", "--format", "json", str(download))
    assert rc == 1
    doc = json.loads(out)
    # The document scan writes: a folder's other files are entries of kind "other".
    kinds = {Path(o["path"]).name: (o["file_kind"], o["valid"]) for o in doc["files"] if o["kind"] == "other"}
    assert kinds == {
        "README.md": ("text", True),
        "config.json": ("JSON", True),
        "modeling_tiny.py": ("Python", True),
        "pytorch_model.bin": ("pickle", True),  # weights only: a warning
        "tokenizer.json": ("tokenizer", True),
        "training_args.bin": ("pickle", False),
    }
    assert doc["summary"]["other_files"] == {"pickle": 2, "JSON": 1, "Python": 1, "text": 1, "tokenizer": 1}
    assert (doc["summary"]["errors"], doc["summary"]["warnings"]) == (1, 2)
    # Each pickle carries what it imports (issue 29).
    by_name = {Path(o["path"]).name: o for o in doc["files"]}
    evil = by_name["training_args.bin"]["pickle"]
    assert evil["weights_only"] is False
    assert any(i["called"] and not i["allowed"] and i["global"].endswith(".system") for i in evil["imports"])
    state_dict = by_name["pytorch_model.bin"]["pickle"]
    assert (state_dict["container"], state_dict["weights_only"]) == ("torch-zip", True)
    assert {i["global"] for i in state_dict["imports"]} >= {"torch._utils._rebuild_tensor_v2"}


def test_scan_dir_fails_on_the_pickles(download, capsys):
    rc, out, _ = _run(capsys, "scan", "--no-config", "--progress", "never", "--format", "json", str(download))
    assert rc == 1
    doc = json.loads(out)
    by_name = {Path(f["path"]).name: f for f in doc["files"]}
    assert [x["rule"] for x in by_name["pytorch_model.bin"]["findings"]] == ["pickle-weights-only"]
    assert [x["rule"] for x in by_name["training_args.bin"]["findings"]] == ["pickle-file"]
    assert by_name["training_args.bin"]["kind"] == "other"
    assert by_name["training_args.bin"]["file_kind"] == "pickle"
    assert [x["severity"] for x in by_name["modeling_tiny.py"]["findings"]] == ["warning"]
    assert doc["summary"]["files"] == 1
    assert doc["summary"]["findings_by_rule"] == {
        "ST701 pickle-file": 1,
        "ST702 custom-code": 1,
        "ST705 pickle-weights-only": 1,
    }
    rc, out, _ = _run(capsys, "scan", "--no-config", "--progress", "never", str(download))
    assert rc == 1
    assert "pytorch_model.bin: ST705 pickle-weights-only" in out
    assert "training_args.bin: ST701 pickle-file" in out
    assert out.splitlines()[-1].endswith("; 6 other files: 2 pickle, 1 JSON, 1 Python, 1 text, 1 tokenizer"), out


def test_inspect_dir_lists_the_other_files(download, capsys):
    rc, out, _ = _run(capsys, "inspect", str(download))
    assert rc == 1
    assert f"{download / 'training_args.bin'}: {len(evil_pickle())} bytes, pickle" in out
    assert "training_args.bin: ST701 pickle-file" in out
    assert "pytorch_model.bin: ST705 pickle-weights-only" in out
    assert out.splitlines()[-2] == "6 other files: 2 pickle, 1 JSON, 1 Python, 1 text, 1 tokenizer"
    assert out.splitlines()[-1] == "invalid: 1 error"  # the verdict, as check gives it


def test_a_policy_can_ignore_the_pickle_rule_with_a_reason(download, tmp_path, capsys):
    policy = write(
        tmp_path / "policy.toml",
        b'[rules.pickle-file]\nignore = true\nreason = "our own checkpoints"\n'
        b'[rules.custom-code]\nignore = true\nreason = "our own code"\n',
    )
    rc, out, _ = _run(capsys, "scan", "--policy", str(policy), "--progress", "never", "--format", "json", str(download))
    assert rc == 0
    doc = json.loads(out)
    suppressed = [x["suppression"]["reason"] for f in doc["files"] for x in f["findings"] if "suppression" in x]
    assert sorted(suppressed) == ["our own checkpoints", "our own code"]


def test_policy_keys_for_weights_only_pickles(download, tmp_path, capsys):
    # An organisation that bans pickles outright makes them errors; one that
    # loads them with weights_only=True anyway silences them.
    ban = write(tmp_path / "ban.toml", b'[rules.pickle-weights-only]\nseverity = "error"\nreason = "no pickles"\n')
    (download / "training_args.bin").unlink()
    (download / "modeling_tiny.py").unlink()
    rc, out, _ = _run(capsys, "check", "--no-config", str(download))
    assert rc == 0  # a classic repository: warnings only
    assert "pytorch_model.bin: ST705 pickle-weights-only" in out
    rc, out, _ = _run(capsys, "check", "--policy", str(ban), str(download))
    assert rc == 1
    quiet = write(
        tmp_path / "quiet.toml", b'[rules.pickle-weights-only]\nignore = true\nreason = "weights_only loads"\n'
    )
    rc, out, _ = _run(capsys, "check", "--policy", str(quiet), str(download))
    assert rc == 0
    assert "ST705" not in out.splitlines()[-1].split(";")[1]  # no warning counted


def test_a_pickle_given_by_name_is_judged_as_in_its_folder(download, capsys):
    # Issue 35: the file alone gave the generic ST111/ST112; in its folder, ST701 naming the call.
    rc, out, _ = _run(capsys, "check", str(download / "training_args.bin"))
    assert rc == 1
    assert "ST701 pickle-file" in out
    assert "ST111" not in out
    rc, out, _ = _run(capsys, "check", str(download / "pytorch_model.bin"))
    assert "ST705 pickle-weights-only" in out
    assert "ST112" not in out


def test_a_folder_of_pickles_alone_is_judged_not_called_empty(tmp_path, capsys):
    write(tmp_path / "m" / "model.ckpt", evil_pickle(2))
    rc, out, err = _run(capsys, "check", str(tmp_path / "m"))
    assert rc == 1
    assert "model.ckpt: ST701 pickle-file" in out
    assert err == ""
    write(tmp_path / "n" / "config.json", b"{}")
    rc, out, err = _run(capsys, "check", str(tmp_path / "n"))
    assert rc == 2  # nothing to check there: a run that judged nothing does not pass
    assert "no *.safetensors file in this directory or below it (1 other file: 1 JSON)" in err
    rc, _, err = _run(capsys, "inspect", str(tmp_path / "n"))
    assert rc == 2
    assert "a directory with no *.safetensors file or index" in err
    rc, out, _ = _run(capsys, "inspect", str(tmp_path / "m"))
    assert rc == 1
    assert "model.ckpt: ST701 pickle-file" in out


# --- the classifier alone ------------------------------------------------------------


def _judge(path: Path, siblings: tuple[str, ...] = ()) -> tuple[str, list[str]]:
    other = classify(str(path), frozenset(siblings) | {path.name})
    return other.kind, [f.slug for f in other.findings]


KIND_CASES = [
    ("weights.onnx", evil_pickle(), "pickle", ["pickle-file"]),  # content wins over the name
    ("optimizer", evil_pickle(0), "pickle", ["pickle-file"]),  # protocol 0, no name
    ("model.ckpt", os.urandom(64), "pickle", ["pickle-file"]),  # a pickle-only name
    ("clf.joblib", b"\x78\x9c" + os.urandom(32), "pickle", ["pickle-file"]),  # compressed joblib: still a pickle
    ("openvino_model.bin", b"\x00\x01" * 40, "other", []),  # .bin is a pickle only by content
    (
        "model.ckpt",
        b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 9\n",
        "Git LFS pointer",
        [],
    ),
    ("modeling_x.py", b"print(1)\n", "Python", ["custom-code"]),
    ("config.json", b"{}", "JSON", []),
    ("tokenizer.model", b"\x0a\x0b", "tokenizer", []),
    ("merges.txt", b"#version: 0.2\n", "tokenizer", []),
    ("spm.model", b"\x0a\x0b", "tokenizer model", []),
    ("logo.png", b"\x89PNG\r\n\x1a\n", "image", []),
    ("model.gguf", b"GGUF\x03\x00\x00\x00" + bytes(16), "GGUF", []),
    ("model.onnx", b"\x08\x07\x12", "ONNX", []),
    ("blob", b"GGUF\x03\x00\x00\x00" + bytes(16), "GGUF", []),  # no name: named by content
    ("LICENSE", b"MIT\n", "text", []),
    ("empty.lock", b"", "empty", []),
]


@pytest.mark.parametrize(("name", "data", "kind", "rules"), KIND_CASES, ids=[f"{c[0]}:{c[2]}" for c in KIND_CASES])
def test_kinds(tmp_path, name, data, kind, rules):
    assert _judge(write(tmp_path / name, data)) == (kind, rules)


def test_torch_writers_are_pickles(tmp_path):
    torch = pytest.importorskip("torch")
    new = write(tmp_path / "a.pt", torch_save({"w": torch.ones(3)}))
    legacy = write(tmp_path / "b.pth", torch_save({"w": torch.ones(3)}, _use_new_zipfile_serialization=False))
    module = write(tmp_path / "c.bin", torch_save(torch.nn.Linear(2, 2)))
    # A state dict, zip or legacy, holds only tensors: a warning (issue 29).
    for path in (new, legacy):
        assert _judge(path) == ("pickle", ["pickle-weights-only"]), path.name
    # A whole module is unpickled by importing and calling its class: an error naming it.
    assert _judge(module) == ("pickle", ["pickle-file"])
    message = classify(str(module), frozenset({module.name})).findings[0].message
    assert "torch.nn.modules.linear.Linear" in message


def test_numpy_object_arrays_are_pickles_and_plain_arrays_are_not(tmp_path):
    plain = tmp_path / "plain.npy"
    np.save(plain, np.zeros(3, dtype=np.float32))
    objects = tmp_path / "objects.npy"
    np.save(objects, np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    record = tmp_path / "record.npy"
    np.save(record, np.zeros(2, dtype=[("x", "f4"), ("o", "O")]), allow_pickle=True)
    assert _judge(plain) == ("NumPy", [])
    # Object arrays of builtin values rebuild data (issue 35: the data tier, ST710, not ST701).
    assert _judge(objects) == ("pickle", ["pickle-data-only"])
    assert _judge(record) == ("pickle", ["pickle-data-only"])
    for save in (np.savez, np.savez_compressed):
        clean = tmp_path / f"clean-{save.__name__}.npz"
        save(clean, a=np.zeros(2), b=np.ones(2))
        hidden = tmp_path / f"hidden-{save.__name__}.npz"
        # The object array is the last member, past the first bytes of the file.
        save(hidden, a=np.zeros(4096), b=np.array([object()], dtype=object))
        assert _judge(clean) == ("NumPy", []), save.__name__
        assert _judge(hidden) == ("pickle", ["pickle-file"]), save.__name__


def test_a_zip_that_is_not_a_torch_checkpoint_is_an_archive_whose_members_were_not_vetted(tmp_path):
    # A plain .zip is listed as an archive, with a warning that its members
    # were not read: stcheck vouches for nothing inside it (issue 35).
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("readme.txt", "hi")
    assert _judge(write(tmp_path / "extra.zip", buf.getvalue())) == ("archive", ["archive-unreadable"])


@pytest.mark.parametrize(
    ("pickle_name", "siblings", "copy"),
    [
        ("pytorch_model.bin", ["model.safetensors"], "model.safetensors"),
        (
            "pytorch_model.bin",
            ["model.safetensors.index.json", "model-00001-of-00002.safetensors"],
            "model-00001-of-00002.safetensors",
        ),
        ("pytorch_model-00001-of-00002.bin", ["model.safetensors.index.json"], "model.safetensors.index.json"),
        ("pytorch_model.fp16.bin", ["model.fp16.safetensors"], "model.fp16.safetensors"),
        (
            "pytorch_model.ema.fp16.bin",
            ["model.safetensors.index.ema.fp16.json"],
            "model.safetensors.index.ema.fp16.json",
        ),
        ("diffusion_pytorch_model.bin", ["diffusion_pytorch_model.safetensors"], "diffusion_pytorch_model.safetensors"),
        ("adapter_model.bin", ["adapter_model.safetensors"], "adapter_model.safetensors"),
        ("v1-5-pruned.ckpt", ["v1-5-pruned.safetensors"], "v1-5-pruned.safetensors"),
        ("training_args.bin", ["model.safetensors"], None),
        ("pytorch_model.bin", ["model.fp16.safetensors"], None),  # another variant is not a copy
    ],
)
def test_safetensors_copy(pickle_name, siblings, copy):
    assert safetensors_copy(pickle_name, [pickle_name, *siblings]) == copy


def test_only_a_bounded_prefix_is_read(tmp_path, monkeypatch):
    big = tmp_path / "pytorch_model.bin"
    with big.open("wb") as fh:
        fh.write(evil_pickle())
        fh.truncate(1 << 30)  # a sparse 1 GiB file
    reads: list[int] = []
    real = os.pread

    def counting(fd: int, n: int, offset: int) -> bytes:
        reads.append(n)
        return real(fd, n, offset)

    monkeypatch.setattr(os, "pread", counting)
    assert _judge(big) == ("pickle", ["pickle-file"])
    assert sum(reads) <= 4096


def test_check_stays_light_on_a_folder_of_other_files(tmp_path):
    """`check DIR` judges other files without numpy (the classifier is core)."""
    import subprocess
    import sys

    write(tmp_path / "m" / "model.safetensors", clean_file())
    write(
        tmp_path / "m" / "x.npy",
        b"\x93NUMPY\x01\x00v\x00" + b"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }".ljust(117) + b"\n",
    )
    code = (
        "import sys\nfrom validator.cli.main import main\nrc = main(['check', sys.argv[1]])\n"
        "print('numpy' in sys.modules, rc)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "m")], capture_output=True, text=True, check=False, timeout=60
    )
    assert done.stdout.splitlines()[-1] == "False 1", done.stdout + done.stderr
