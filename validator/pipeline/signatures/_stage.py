# Strategy: the signatures stage of a run (validator.pipeline.vet), in
# three steps around the one read:
#   verify_sources   before any file is read: the signature of each folder
#                    argument (its model.sig, or the one given), of a file
#                    argument given with its signature (a single-file
#                    model), and of a remote folder, fetched and compared
#                    with its listing (validator.pipeline.signatures._verify);
#   with_digests     each job of a signed file gets the digests its
#                    signature lists, computed in the scan's one read;
#                    a hub-cache snapshot's signature is verified here,
#                    once the cache is walked;
#   finish           the digests compared (._digests), each finding put
#                    in ``pending`` on the result of the file it names (the
#                    judge applies the policy to it, once), and each
#                    signature's record on the signature's own result.
# Without keys nothing is verified: a `model.sig` found gets the warning
# signature-not-verified.  model_signing is imported only when keys are given.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH116, PTH118, PTH119
from __future__ import annotations

import os
from typing import TYPE_CHECKING

from validator._check import make_finding
from validator.pipeline.signatures import _digests
from validator.pipeline.signatures._model import SignedModel, inside
from validator.pipeline.signatures._notes import notes
from validator.pipeline.signatures._options import OptionError, ignore_paths, ignores_for, keys_from_options
from validator.pipeline.signatures._verify import remote_model, verify_file
from validator.report.bom import model_name, snapshot_prefix
from validator.report.results import FileResult
from validator.signing.base import verifier_for
from validator.signing.signature import SIGNATURE_NAME
from validator.sources.arguments import Absent, File, Folder, NotSignable, Remote, Stdin
from validator.sources.schemes import STDIN, scheme_of, signable

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from validator.config.policy import Policy
    from validator.config.settings import Network
    from validator.pipeline.engine import Job, Options
    from validator.pipeline.hubcache import HubWalk
    from validator.pipeline.signatures._model import Flagged
    from validator.pipeline.signatures._options import KeyOptions
    from validator.report.results import ResultKind
    from validator.signing.base import Keys, SignatureVerifier
    from validator.sources.arguments import Argument

__all__ = ["Signatures"]


class Signatures:
    """The signed-model checks of one run (see the strategy)."""

    def __init__(
        self, keys: Keys | None, signature: str | None, *, ignore: Sequence[str] = (), method: str = "oms"
    ) -> None:
        self.keys = keys
        self.signature = signature
        self.ignore = ignore_paths(ignore)
        self.verifier: SignatureVerifier | None = None if keys is None else verifier_for(keys, method)
        self.models: list[SignedModel] = []

    @classmethod
    def from_options(cls, options: KeyOptions, policy: Policy | None = None) -> Signatures:
        """Raise OptionError for options that cannot work, SigningSetupError
        when the keys cannot be used.  The policy's ignore_paths add to the options'."""
        keys = keys_from_options(options)
        ignore = [*options.ignore_paths, *(() if policy is None else policy.ignore_paths)]
        return cls(keys, options.signature, ignore=ignore, method=options.signature_method)

    def _with_keys(self) -> tuple[SignatureVerifier, Keys]:
        assert self.verifier is not None
        assert self.keys is not None
        return self.verifier, self.keys

    # -- before the read --------------------------------------------------------------

    def verify_sources(self, given: Sequence[Argument], network: Network, *, hf_cache: bool) -> None:
        """Verify the signature of each folder, file and remote folder given;
        OptionError for an argument no signature can cover."""
        folders = [a.path for a in given if isinstance(a, Folder)]
        if self.keys is None:
            self.models = [
                SignedModel(p, os.path.join(p, SIGNATURE_NAME), SIGNATURE_NAME, p, os.path.abspath(p)) for p in folders
            ]
            return
        self._refuse(given)
        files = [a.path for a in given if isinstance(a, File)]
        remotes = [a for a in given if isinstance(a, Remote)]
        if not folders and not files and not remotes and not hf_cache and not any(isinstance(a, Absent) for a in given):
            raise OptionError("{public_key}, {certificate_chain} and {identity} verify a folder: give DIR")
        if self.signature is not None and len(folders) + len(files) + len(remotes) + hf_cache > 1:
            raise OptionError("{signature} names the signature of one model, but several were given")
        with_keys = self._with_keys()
        for folder in folders:
            sig = self.signature or os.path.join(folder, SIGNATURE_NAME)
            root = os.path.abspath(folder)
            model = SignedModel(folder, sig, inside(os.path.abspath(sig), root), folder, root)
            model.ignore = ignores_for(self.ignore, root)
            verify_file(model, *with_keys, sig)
            self.models.append(model)
        for file in files:
            assert self.signature is not None
            model = SignedModel(file, self.signature, None, file, os.path.abspath(file), single=True)
            verify_file(model, *with_keys, self.signature)
            self.models.append(model)
        for remote in remotes:
            self.models.append(
                remote_model(
                    remote.scheme,
                    remote.path,
                    network,
                    with_keys,
                    signature=self.signature,
                    ignore=ignores_for(self.ignore, None),
                )
            )

    def _refuse(self, given: Sequence[Argument]) -> None:
        """Refuse, with keys given, an argument no signature can cover."""
        for argument in given:
            match argument:
                case Stdin():
                    raise OptionError(
                        f"{STDIN}: standard input carries no model signature; give the signed folder or file"
                    )
                case Remote(path, scheme) if not scheme.can_sign:
                    raise OptionError(
                        "{path}: {noun} carries no model signature; give {where}",
                        path=path,
                        noun=scheme.called,
                        where=signable(),
                    )
                case NotSignable(path):
                    raise OptionError("{path}: a model signature covers a folder or a regular file", path=path)
                case File(path) if self.signature is None:
                    msg = (
                        "{path}: a single-file model's signature is given with {signature} PATH "
                        f"(a folder's is DIR/{SIGNATURE_NAME})"
                    )
                    raise OptionError(msg, path=path)
                case _:
                    pass

    def pinned(self, paths: Sequence[str]) -> list[str]:
        """The paths, each remote folder whose signature verify_sources
        compared pinned to the commit it listed: the scan reads the files of
        the commit that was compared, never the branch's next answer."""
        pins = {m.source: m.pinned for m in self.models if m.source is not None and m.pinned is not None}
        return [pins.get(p, p) for p in paths]

    def verify_download(
        self, source: str, network: Network, staged: Mapping[str, str], listed: object = None
    ) -> list[Flagged]:
        """`stcheck download`'s check before its final move: the signature of
        the remote folder ``source`` verified, and its digests compared with
        the files staged (repository path -> the staged copy, read here) and,
        for the files not downloaded, with the listing ``listed``, the one
        the download was made from (None: listed here).  Return the findings
        (an empty list: the download may be kept)."""
        scheme = scheme_of(source)
        if scheme is None or not scheme.can_sign:
            noun = "a local path" if scheme is None else scheme.called
            raise OptionError(
                "{path}: {noun} carries no model signature; give {where}", path=source, noun=noun, where=signable()
            )
        model = remote_model(
            scheme,
            source,
            network,
            self._with_keys(),
            signature=self.signature,
            ignore=ignores_for(self.ignore, None),
            staged=staged,
            listed=listed,
        )
        self.models.append(model)
        return model.findings

    # -- the read's digests -----------------------------------------------------------

    def with_digests(self, jobs: list[Job], hub: HubWalk, *, sha256: bool = False) -> list[Job]:
        """The jobs, each with the digests its signatures list (and its
        sha256 when ``sha256``); hub-cache snapshots' signatures are verified here."""
        self._hub_models(hub)
        return _digests.with_digests(jobs, self.models, sha256=sha256)

    def _hub_models(self, hub: HubWalk) -> None:
        blobs: dict[str, str] = {}
        repos: dict[str, str | None] = {}
        for job in hub.jobs:
            if job.kind != "file":
                continue
            for display, repo in job.names:
                prefix = snapshot_prefix(display)
                if prefix is not None:
                    repos.setdefault(prefix, repo)
                    if display == prefix + SIGNATURE_NAME:
                        blobs[prefix] = job.path
        if self.keys is not None and self.signature is not None and len(repos) + len(self.models) > 1:
            raise OptionError("{signature} names the signature of one folder, but several were given")
        for prefix, repo in sorted(repos.items()):
            model = SignedModel(
                model_name(prefix, repo),
                self.signature or prefix + SIGNATURE_NAME,
                None if self.signature else SIGNATURE_NAME,
                prefix=prefix,
                model=repo,
                ignore=ignores_for(self.ignore, None),
            )
            if self.keys is not None:
                verify_file(model, *self._with_keys(), self.signature or blobs.get(prefix))
            self.models.append(model)

    # -- after the read ---------------------------------------------------------------

    def finish(self, results: list[FileResult], options: Options, *, sha256: bool = False) -> list[FileResult]:
        """Compare, put every finding in ``pending`` on the result of the
        file it names, and return the results (with a result for each file
        named but not read)."""
        if self.keys is None:
            self._unverified(results)
        if self.keys is not None or sha256:
            results = _digests.read_rest(results, self.models, options, sha256=sha256)
        if self.keys is not None:
            for model in self.models:
                if model.compared_here:
                    _digests.compare_local(model, results)
                self._attach(model, results)
        self._records(results)
        return results

    def notes(self) -> list[str]:
        """One line per verified signature, for stderr: what was checked."""
        return notes(self.models)

    def _records(self, results: list[FileResult]) -> None:
        """Each signature's record, on the signature's own result (one made
        for a signature outside what was scanned)."""
        method = None if self.verifier is None else self.verifier.method
        by_path = {r.path: r for r in results if r.kind != "link"}
        for model in self.models:
            if model.status == "none":
                continue
            result = by_path.get(model.where)
            if result is None:
                result = by_path[model.where] = _made(model, model.where, "other")
                # A report gives every file but a remote index its size (report.schema.json).
                fetched = model.signature_size
                result.file_size = fetched if fetched is not None else _size(model.where)
                results.append(result)
            result.signature = model.record(method, self.keys)

    def _unverified(self, results: list[FileResult]) -> None:
        message = "signed, but not verified: pass --public-key or --certificate-chain (or --identity)"
        for r in results:
            if os.path.basename(r.path) == SIGNATURE_NAME and r.kind in {"other", "blob"} and r.error is None:
                r.pending.append(make_finding("signature-not-verified", message))
                for model in self.models:
                    if model.rel(r) is not None:
                        model.status = "not-verified"

    def _attach(self, model: SignedModel, results: list[FileResult]) -> None:
        by_path = {r.path: r for r in results if r.kind != "link"}
        by_rel = {} if model.listed else {model.rel(r): r for r in results if r.kind not in {"link", "missing"}}
        for flagged in model.findings:
            result = (None if flagged.rel is None else by_rel.get(flagged.rel)) or by_path.get(flagged.display)
            if result is None:
                missing = flagged.slug in {"signed-file-missing", "signature-missing"}
                kind: ResultKind = "missing" if missing else "other"
                result = by_path[flagged.display] = _made(model, flagged.display, kind)
                results.append(result)
            result.pending.append(make_finding(flagged.slug, flagged.message))


def _made(model: SignedModel, display: str, kind: ResultKind) -> FileResult:
    """A result for a file a finding or record names that the scan did not list."""
    file_kind = None if kind == "missing" else "model signature" if display == model.where else None
    return FileResult(path=display, model=model.model, kind=kind, file_size=0, file_kind=file_kind)


def _size(path: str) -> int | None:
    try:
        return os.stat(path).st_size
    except OSError:
        return None
