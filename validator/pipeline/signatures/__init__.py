"""The signatures stage of a run: model signatures verified before the
read, their digests computed in it, and compared after it.

``Signatures`` is the stage (validator.pipeline.vet runs it; `stcheck
download` calls its ``verify_download``); its findings go, raw, into each
result's ``pending`` for the judge to apply the policy to.  A remote scheme
can be signed when its row in validator.sources.schemes names a module with
``signed_folder`` (``RemoteFolder``); a signature method is a row of
validator.signing.base.METHODS.
"""

from __future__ import annotations

from validator.pipeline.signatures._model import Flagged, SignedModel
from validator.pipeline.signatures._options import (
    KeyOptions,
    OptionError,
    SignatureOptions,
    keys_from_options,
)
from validator.pipeline.signatures._stage import Signatures
from validator.pipeline.signatures._verify import Listed, RemoteFolder
from validator.sources.arguments import (
    Absent,
    Argument,
    File,
    Folder,
    NotSignable,
    Remote,
    Stdin,
    arguments,
)

__all__ = [
    "Absent",
    "Argument",
    "File",
    "Flagged",
    "Folder",
    "KeyOptions",
    "Listed",
    "NotSignable",
    "OptionError",
    "Remote",
    "RemoteFolder",
    "SignatureOptions",
    "Signatures",
    "SignedModel",
    "Stdin",
    "arguments",
    "keys_from_options",
]
