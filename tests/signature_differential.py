# Strategy: a differential campaign for model signatures, with model_signing
# 1.1.1's own verify as the oracle, the way the core is tested against
# safetensors 0.8.0.  Each trial copies one of a few signed models (a folder
# or a single file; signed with an EC key or a certificate; by files or by
# shards; with or without ignore paths at signing and at verifying), applies
# one to three mutations of its tree (MUTATIONS: files added, removed,
# renamed or replaced; links in and out of the folder; hard links; names
# with leading dots, `..` prefixes, NFC and NFD twins, case twins and
# newlines; nested .git, .hg and .github; a FIFO; the signature moved
# inside or outside), then asks both sides the same question with the same options:
#
#   stcheck       `stcheck scan TARGET --signature SIG --public-key K
#                 [--ignore-path P]... --format json`, in this process;
#                 "verified" is a signature record whose status is verified
#                 (the signature verifies and no finding is held against it);
#   model_signing `verifying.Config` with the same key, the hashing
#                 configuration read from the signature as the library's
#                 own verify guesses it, and the same ignore paths plus the
#                 signature itself (as its CLI adds it).
#
# The one claim checked is the issue's: whenever stcheck says verified, the
# reference verifies the same tree.  Trials where only the reference
# verifies are counted and kept by kind; the report explains them.
#
# Run briefly by tests/test_signature_differential.py; run long with
#   python -m tests.signature_differential --seconds 1800 --out report.json
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

SHARD = 4096  # bytes: small enough that the weights span several shards


@dataclass(frozen=True)
class Base:
    """One signed model the trials start from."""

    name: str
    method: str  # key or certificate
    single: bool  # a single-file model
    shards: bool
    sign_ignore: tuple[str, ...] = ()  # ignore paths given to the signer
    allow_symlinks: bool = False


BASES = (
    Base("key-folder", "key", single=False, shards=False),
    Base("key-folder-shards", "key", single=False, shards=True),
    Base("key-folder-ignore", "key", single=False, shards=False, sign_ignore=("extra", "notes.txt")),
    Base("key-folder-symlinks", "key", single=False, shards=False, allow_symlinks=True),
    Base("cert-folder", "certificate", single=False, shards=False),
    Base("cert-folder-ignore-shards", "certificate", single=False, shards=True, sign_ignore=("extra",)),
    Base("key-single", "key", single=True, shards=False),
    Base("cert-single-shards", "certificate", single=True, shards=True),
)


def _files(root: Path) -> None:
    """The tree a folder base signs: weights, text files, a subfolder, a
    non-ASCII name (in NFC), a git path, and what the ignore bases leave out."""
    from tests.sign_fixtures import model_folder

    model_folder(root, weights=5000)
    (root / "sub").mkdir()
    (root / "sub" / "vocab.txt").write_text("a\nb\n")
    (root / unicodedata.normalize("NFC", "caf\u00e9.json")).write_text("{}\n")
    (root / "extra").mkdir()
    (root / "extra" / "log.txt").write_text("not signed by the ignore bases\n")
    (root / "notes.txt").write_text("notes\n")


@dataclass
class Keys:
    public: Path
    private: Path
    ca: Path
    leaf: Path
    leaf_key: Path


def _make_keys(where: Path) -> Keys:
    from tests.sign_fixtures import certificates, ec_keys

    pair = ec_keys(where)
    certs = certificates(where, "campaign")
    return Keys(pair.public, pair.private, certs.ca, certs.leaf, certs.key)


def _sign(base: Base, model: Path, sig: Path, keys: Keys) -> None:
    from model_signing import hashing, signing

    config = hashing.Config()
    if base.shards:
        config.use_shard_serialization(shard_size=SHARD)
    ignored = [sig.resolve(), *(model.resolve() / p for p in base.sign_ignore)]
    config.set_ignored_paths(paths=ignored, ignore_git_paths=True).set_allow_symlinks(base.allow_symlinks)
    signer = signing.Config()
    if base.method == "key":
        signer.use_elliptic_key_signer(private_key=keys.private)
    else:
        signer.use_certificate_signer(
            private_key=keys.leaf_key, signing_certificate=keys.leaf, certificate_chain=[keys.ca]
        )
    signer.set_hashing_config(config).sign(model, sig)


@dataclass
class Tree:
    """One trial's copy of a signed model: ``model`` (a folder or a file)
    and its signature ``sig``, both below ``top``; ``ignore`` the ignore
    paths given to both verifiers (relative to the folder)."""

    top: Path
    model: Path
    sig: Path
    single: bool
    ignore: list[str] = field(default_factory=list)

    @property
    def folder(self) -> Path:
        return self.model.parent if self.single else self.model


def _template(base: Base, where: Path, keys: Keys) -> Tree:
    top = where / base.name
    top.mkdir()
    if base.single:
        _files(top / "src")
        model = top / "model.safetensors"
        shutil.move(top / "src" / "model.safetensors", model)
        shutil.rmtree(top / "src")
        sig = top / "model.sig"
    else:
        model = top / "model"
        _files(model)
        sig = model / "model.sig"
    _sign(base, model, sig, keys)
    return Tree(top, model, sig, base.single)


def _copy(tree: Tree, where: Path) -> Tree:
    top = where / "t"
    shutil.copytree(tree.top, top, symlinks=True)
    return Tree(top, top / tree.model.relative_to(tree.top), top / tree.sig.relative_to(tree.top), tree.single)


# -- mutations -------------------------------------------------------------------------------

_NAMES = (
    "..evil.safetensors",
    "..d/model.safetensors",
    "...",
    "..",  # as a component: never a name of its own, the generator skips it
    ".hidden.json",
    ".git/config",
    ".git/objects/x.safetensors",
    ".hg/store/x",
    ".github/workflows/x.yml",
    "sub/.git/HEAD",
    ".gitattributes",
    ".gitignore",
    "new\nline.json",
    "tab\tname.txt",
    "Config.json",
    "CONFIG.JSON",
    "sub/Vocab.txt",
    unicodedata.normalize("NFD", "caf\u00e9.json"),
    unicodedata.normalize("NFD", "sub/caf\u00e9.txt"),
    "model.sig",
    "sub/model.sig",
    "extra/new.txt",
    "extra",
    "notes.txt/x",
    "model.safetensors.index.json",
    "x/../y.txt",
    " space.txt",
    "trailing.",
)


def _regular(tree: Tree) -> list[Path]:
    return sorted(p for p in tree.folder.rglob("*") if p.is_file() and not p.is_symlink() and p != tree.sig)


def _any_file(rng: random.Random, tree: Tree) -> Path | None:
    files = [tree.model] if tree.single else _regular(tree)
    return rng.choice(files) if files else None


def _new_name(rng: random.Random, tree: Tree) -> Path | None:
    name = rng.choice(_NAMES)
    if ".." in name.split("/"):
        return None
    path = tree.folder / name
    if path.exists() or path.is_symlink() or any(p.is_file() for p in path.parents if p != tree.folder):
        return None
    return path


def _content(rng: random.Random, tree: Tree) -> bytes:
    source = _any_file(rng, tree)
    if source is not None and rng.random() < 0.5:
        return source.read_bytes()
    return rng.randbytes(rng.choice((0, 1, 17, SHARD, SHARD + 1)))


def add_file(rng: random.Random, tree: Tree) -> bool:
    path = _new_name(rng, tree)
    if path is None:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_content(rng, tree))
    return True


def remove_file(rng: random.Random, tree: Tree) -> bool:
    path = _any_file(rng, tree)
    if path is None or tree.single:
        return False
    path.unlink()
    return True


def rename_file(rng: random.Random, tree: Tree) -> bool:
    path, new = _any_file(rng, tree), _new_name(rng, tree)
    if path is None or new is None or tree.single:
        return False
    new.parent.mkdir(parents=True, exist_ok=True)
    path.rename(new)
    return True


def replace_content(rng: random.Random, tree: Tree) -> bool:
    path = _any_file(rng, tree)
    if path is None:
        return False
    data = bytearray(path.read_bytes())
    how = rng.randrange(4)
    if how == 0 and data:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif how == 1:
        data += b"\0"
    elif how == 2 and data:
        del data[rng.randrange(len(data)) :]
    else:
        data = bytearray(_content(rng, tree))
    path.write_bytes(bytes(data))
    return True


def same_bytes_rewrite(rng: random.Random, tree: Tree) -> bool:
    """Rewrite a file with its own bytes (a new inode): nothing changed."""
    path = _any_file(rng, tree)
    if path is None:
        return False
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data)
    return True


def symlink_in(rng: random.Random, tree: Tree) -> bool:
    """Replace a file by a link to a copy of it elsewhere in the folder, or add a link to one."""
    path = _any_file(rng, tree)
    if path is None or tree.single:
        return False
    if rng.random() < 0.5:
        copy = tree.folder / f"copy-{rng.randrange(1000)}.bin"
        shutil.copyfile(path, copy)
        path.unlink()
        path.symlink_to(os.path.relpath(copy, path.parent))
    else:
        new = _new_name(rng, tree)
        if new is None:
            return False
        new.parent.mkdir(parents=True, exist_ok=True)
        new.symlink_to(os.path.relpath(path, new.parent))
    return True


def symlink_out(rng: random.Random, tree: Tree) -> bool:
    """Replace a file (or the single file) by a link to an identical copy outside the folder."""
    path = _any_file(rng, tree)
    if path is None:
        return False
    outside = tree.top / f"outside-{rng.randrange(1000)}.bin"
    shutil.copyfile(path, outside)
    path.unlink()
    path.symlink_to(outside if rng.random() < 0.5 else os.path.relpath(outside, path.parent))
    return True


def symlink_dir(rng: random.Random, tree: Tree) -> bool:
    """A link to a folder: the folder itself, a subfolder, or one outside."""
    new = _new_name(rng, tree)
    if new is None or tree.single:
        return False
    target = rng.choice((tree.folder, tree.folder / "sub", tree.top))
    new.parent.mkdir(parents=True, exist_ok=True)
    new.symlink_to(target, target_is_directory=True)
    return True


def hard_link(rng: random.Random, tree: Tree) -> bool:
    """Replace a file by a hard link to an identical copy outside, or add a
    hard link to a file of the folder under a new name."""
    path = _any_file(rng, tree)
    if path is None:
        return False
    if rng.random() < 0.5 or tree.single:
        outside = tree.top / f"hard-{rng.randrange(1000)}.bin"
        shutil.copyfile(path, outside)
        path.unlink()
        os.link(outside, path)
    else:
        new = _new_name(rng, tree)
        if new is None:
            return False
        new.parent.mkdir(parents=True, exist_ok=True)
        os.link(path, new)
    return True


def unicode_twin(rng: random.Random, tree: Tree) -> bool:
    """Rename the NFC name to NFD (or add the NFD twin beside it)."""
    nfc = tree.folder / unicodedata.normalize("NFC", "caf\u00e9.json")
    nfd = tree.folder / unicodedata.normalize("NFD", "caf\u00e9.json")
    if tree.single or not nfc.exists() or nfd.exists():
        return False
    if rng.random() < 0.5:
        nfc.rename(nfd)
    else:
        shutil.copyfile(nfc, nfd)
    return True


def case_twin(rng: random.Random, tree: Tree) -> bool:
    path = _any_file(rng, tree)
    if path is None or tree.single:
        return False
    twin = path.with_name(path.name.upper() if path.name != path.name.upper() else path.name.lower())
    if twin.exists():
        return False
    if rng.random() < 0.5:
        path.rename(twin)
    else:
        shutil.copyfile(path, twin)
    return True


def move_signature(rng: random.Random, tree: Tree) -> bool:
    """The signature moved into a subfolder, out of the folder, or into it."""
    choices = [tree.top / "moved.sig", tree.folder / "sub" / "model.sig", tree.folder / "..model.sig"]
    new = rng.choice(choices)
    if new.exists() or not tree.sig.exists() or not new.parent.is_dir():
        return False
    tree.sig.rename(new)
    tree.sig = new
    return True


def empty_dir(rng: random.Random, tree: Tree) -> bool:
    if tree.single:
        return False
    (tree.folder / rng.choice(("empty", ".git", "sub/empty", "..e"))).mkdir(exist_ok=True)
    return True


def special_file(rng: random.Random, tree: Tree) -> bool:
    """A FIFO in the folder (never opened by either side: both refuse it by its kind)."""
    new = _new_name(rng, tree)
    if new is None or tree.single:
        return False
    new.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(new)
    return True


def ignore_option(rng: random.Random, tree: Tree) -> bool:
    """An ignore path given to both verifiers."""
    if tree.single:
        return False
    tree.ignore.append(
        rng.choice(
            ("extra", "notes.txt", "sub", "config.json", "..evil.safetensors", ".git", "sub/", "./extra", "missing")
        )
    )
    return True


MUTATIONS: dict[str, Callable[[random.Random, Tree], bool]] = {
    f.__name__: f
    for f in (
        add_file,
        remove_file,
        rename_file,
        replace_content,
        same_bytes_rewrite,
        symlink_in,
        symlink_out,
        symlink_dir,
        hard_link,
        unicode_twin,
        case_twin,
        move_signature,
        empty_dir,
        special_file,
        ignore_option,
    )
}


# -- the two verifiers ----------------------------------------------------------------------------


def stcheck_verdict(tree: Tree, keys: Keys, method: str) -> tuple[bool, str]:
    """(verified, why): stcheck's signature record for the tree."""
    from validator.cli.main import main

    how = ["--public-key", str(keys.public)] if method == "key" else ["--certificate-chain", str(keys.ca)]
    argv = ["scan", "--no-config", "--progress", "never", "-j", "1", "--format", "json", str(tree.model), *how]
    argv += ["--signature", str(tree.sig)]
    for path in tree.ignore:
        argv += ["--ignore-path", path]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    if code == 2:
        return False, "error: " + err.getvalue().strip()[:200]
    records = json.loads(out.getvalue()).get("signatures", [])
    if len(records) != 1:
        return False, f"{len(records)} signature records"
    record = records[0]
    return record["status"] == "verified", f"{record['status']}: {record['detail']}"


def reference_verdict(tree: Tree, keys: Keys, method: str) -> tuple[bool, str]:
    """(verified, why): model_signing 1.1.1's verify of the same tree."""
    from model_signing import verifying
    from model_signing._signing import sign_sigstore_pb

    config = verifying.Config()
    if method == "key":
        config.use_elliptic_key_verifier(public_key=keys.public)
    else:
        config.use_certificate_verifier(certificate_chain=[keys.ca])
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            # The hashing configuration guessed from the signature, as verify
            # guesses it, plus the signature and the user's ignore paths, as
            # the library's CLI adds them (relative to the folder).
            expected = config._verifier.verify(sign_sigstore_pb.Signature.read(tree.sig))
            _guess(config, expected)
            root = tree.model.resolve() if not tree.single else tree.folder.resolve()
            extra = []
            for path in [str(tree.sig), *tree.ignore]:
                full = Path(path) if Path(path).is_absolute() else root / path
                with contextlib.suppress(ValueError):
                    extra.append(Path(os.path.normpath(full)).relative_to(root))
            if not tree.single:
                config._hashing_config.add_ignored_paths(model_path=tree.model, paths=extra)
            config.verify(tree.model, tree.sig)
    except Exception as exc:  # noqa: BLE001 - any refusal of the library is "does not verify"
        return False, f"{type(exc).__name__}: {str(exc)[:200]}"
    return True, "verified"


def _guess(config: Any, expected: Any) -> None:
    """The library's own guess of the hashing configuration, with two
    fixes: 1.1.1 reads the shard size back from the signature as a float,
    which its shard hasher refuses (a TypeError on every signature by
    shards), and its guess drops the signature's allow_symlinks (Config.hash
    resets the serializer's to the Config's own, False), which its CLI's
    --allow_symlinks restores: set here as the signature says."""
    args = dict(expected.serialization_type)
    if "shard_size" in args:
        args["shard_size"] = int(args["shard_size"])

    class _Manifest:
        serialization_type = args

    config._guess_hashing_config(_Manifest)
    config._hashing_config.set_allow_symlinks(bool(args.get("allow_symlinks")))


# -- the campaign -------------------------------------------------------------------------------


@dataclass
class Tally:
    trials: int = 0
    both: int = 0  # both verified
    neither: int = 0
    stcheck_only: list[dict[str, Any]] = field(default_factory=list)  # the bug the campaign hunts
    reference_only: list[dict[str, Any]] = field(default_factory=list)
    mutations: Counter[str] = field(default_factory=Counter)
    bases: Counter[str] = field(default_factory=Counter)
    reference_only_kinds: Counter[str] = field(default_factory=Counter)

    def summary(self, seconds: float) -> dict[str, Any]:
        return {
            "seconds": round(seconds, 1),
            "trials": self.trials,
            "rate_per_s": round(self.trials / seconds, 2) if seconds else 0.0,
            "both_verified": self.both,
            "neither_verified": self.neither,
            "stcheck_verified_reference_refused": len(self.stcheck_only),
            "reference_verified_stcheck_refused": len(self.reference_only),
            "reference_only_by_mutation": dict(self.reference_only_kinds.most_common()),
            "mutations": dict(sorted(self.mutations.items())),
            "bases": dict(sorted(self.bases.items())),
            "stcheck_only_examples": self.stcheck_only[:20],
            "reference_only_examples": self.reference_only[:20],
        }


def _snapshot(tree: Tree) -> list[str]:
    out = []
    for p in sorted(tree.top.rglob("*")):
        rel = str(p.relative_to(tree.top))
        out.append(rel + (" -> " + str(p.readlink()) if p.is_symlink() else "/" if p.is_dir() else ""))
    return out


def run(seconds: float, seed: int, *, max_trials: int | None = None, log: Callable[[str], None] | None = None) -> Tally:
    """Run trials for ``seconds`` (or ``max_trials``) from ``seed``."""
    rng = random.Random(seed)
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="stcheck-sigdiff-") as tmp:
        work = Path(tmp)
        keys = _make_keys(work)
        (work / "bases").mkdir()
        templates = {base: _template(base, work / "bases", keys) for base in BASES}
        started = time.monotonic()
        while time.monotonic() - started < seconds and (max_trials is None or tally.trials < max_trials):
            base = rng.choice(BASES)
            trial = work / f"trial-{tally.trials}"
            trial.mkdir()
            tree = _copy(templates[base], trial)
            applied = []
            for _ in range(rng.choice((1, 1, 2, 3))):
                name = rng.choice(list(MUTATIONS))
                if MUTATIONS[name](rng, tree):
                    applied.append(name)
            ours, why = stcheck_verdict(tree, keys, base.method)
            theirs, their_why = reference_verdict(tree, keys, base.method)
            tally.trials += 1
            tally.bases[base.name] += 1
            tally.mutations.update(applied)
            case = {
                "base": base.name,
                "mutations": applied,
                "ignore": tree.ignore,
                "stcheck": why,
                "reference": their_why,
            }
            if ours and theirs:
                tally.both += 1
            elif ours:
                case["tree"] = _snapshot(tree)
                tally.stcheck_only.append(case)
                if log is not None:
                    log("STCHECK-ONLY " + json.dumps(case))
            elif theirs:
                case["tree"] = _snapshot(tree)
                tally.reference_only.append(case)
                tally.reference_only_kinds[",".join(sorted(set(applied)))] += 1
            else:
                tally.neither += 1
            shutil.rmtree(trial)
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the summary as JSON here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    tally = run(args.seconds, args.seed, log=lambda line: print(line, file=sys.stderr, flush=True))
    summary = tally.summary(time.monotonic() - started)
    text = json.dumps(summary, indent=1, ensure_ascii=False)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)
    return 1 if tally.stcheck_only else 0


if __name__ == "__main__":
    sys.exit(main())
