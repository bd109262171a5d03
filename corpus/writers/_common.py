# Strategy: what every job of _write.py shares: the load-and-compare fact,
# the value comparisons, the records of what was written, and the tiny
# models more than one job builds (a GPT-2, a module with tied weights).
from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path
from typing import Any

SAFE = ".safetensors"
Record = dict[str, Any]


def loaded(call: str, fn: Any) -> dict[str, Any]:  # noqa: ANN401 - any zero-argument callable
    """Run a load-and-compare; the fact recorded in the manifest."""
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            fn()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - whatever the loader raises (a Rust panic too) is the fact
        line = f"{type(exc).__name__}: {exc}".splitlines()[0].replace(f"{Path.cwd()}/", "")[:300]
        return {"call": call, "loads": False, "error": line}
    return {"call": call, "loads": True, "error": None}


class DifferError(AssertionError):
    """The loader returned, but not the values that were saved."""


def same_torch(expected: dict[str, Any], got: dict[str, Any], *, allow_missing: tuple[str, ...] = ()) -> None:
    import torch

    for name, value in expected.items():
        if name not in got:
            if name in allow_missing:
                continue
            raise DifferError(f"loaded model lacks {name}")
        other = got[name]
        if value.shape != other.shape or not torch.equal(value.detach().cpu(), other.detach().cpu().to(value.dtype)):
            raise DifferError(f"{name}: loaded values differ from the saved ones")


def same_numpy(expected: dict[str, Any], got: dict[str, Any]) -> None:
    import numpy as np

    if sorted(expected) != sorted(got):
        raise DifferError(f"names differ: {sorted(expected)} vs {sorted(got)}")
    for name, value in expected.items():
        a, b = np.asarray(value), np.asarray(got[name])
        if a.shape != b.shape or a.dtype != b.dtype or a.tobytes() != b.tobytes():
            raise DifferError(f"{name}: loaded values differ from the saved ones")


class Out:
    """Collects records; paths are relative to the job's folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.records: list[Record] = []

    def path(self, rel: str) -> Path:
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def file(self, rel: str, call: str, loader: dict[str, Any], **extra: Any) -> None:  # noqa: ANN401 - JSON values
        self.records.append({"path": rel, "kind": "file", "call": call, "loader": loader, **extra})

    def folder(self, rel: str, call: str, loader: dict[str, Any], **extra: Any) -> None:  # noqa: ANN401 - JSON values
        """The folder, every safetensors file and every index in it.

        A file inside inherits the folder's load fact; a synthesized folder
        passes ``file_loader`` (the load fact of the real folder its files
        were copied from), since its defect is in the folder, not the files.
        """
        file_loader = extra.pop("file_loader", loader)
        base = self.root / rel
        contents = sorted(str(p.relative_to(base)) for p in base.rglob("*") if p.is_file())
        self.records.append(
            {"path": rel, "kind": "folder", "call": call, "loader": loader, "contents": contents, **extra}
        )
        for name in contents:
            sub = {k: v for k, v in extra.items() if k in {"synthesized_from", "defect"}}
            if name.endswith(SAFE):
                via = {**file_loader, "via": "the folder's loader"}
                self.records.append({"path": f"{rel}/{name}", "kind": "file", "call": call, "loader": via, **sub})
            elif ".safetensors.index" in name and name.endswith(".json"):
                rules = {k: v for k, v in extra.items() if k == "error_rules"}
                self.records.append(
                    {"path": f"{rel}/{name}", "kind": "index", "call": call, "loader": loader, **sub, **rules}
                )


def fresh(d: Path) -> Path:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def tied_module(seed: int = 0) -> Any:  # noqa: ANN401 - a torch module
    import torch

    torch.manual_seed(seed)

    class Tied(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(6, 4)
            self.head = torch.nn.Linear(4, 6, bias=False)
            self.head.weight = self.embed.weight

    return Tied()


def gpt2(tf: Any, seed: int = 0) -> Any:  # noqa: ANN401 - transformers objects
    import torch

    torch.manual_seed(seed)
    return tf.GPT2LMHeadModel(
        tf.GPT2Config(vocab_size=16, n_positions=8, n_embd=4, n_layer=1, n_head=1, bos_token_id=0, eos_token_id=0)
    )


def tf_state(model: Any) -> dict[str, Any]:  # noqa: ANN401 - a torch module
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def tf_loader(tf: Any, cls: Any, d: Path, expected: dict[str, Any], **kwargs: Any) -> dict[str, Any]:  # noqa: ANN401
    args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    call = f"{cls.__name__}.from_pretrained(d{args})"

    def back() -> None:
        got = cls.from_pretrained(str(d), **kwargs)
        same_torch(expected, tf_state(got))

    del tf
    return loaded(call, back)


def safe_kwargs(tf: Any) -> dict[str, Any]:  # noqa: ANN401 - the transformers module
    """safe_serialization=True where the release still defaults to pickles."""
    major, minor = (int(x) for x in tf.__version__.split(".")[:2])
    return {"safe_serialization": True} if (major, minor) < (4, 35) else {}


def save_pretrained(model: Any, d: Path, **kwargs: Any) -> str:  # noqa: ANN401 - a transformers model
    model.save_pretrained(str(d), **kwargs)
    args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
    return f"model.save_pretrained(d{args})"
