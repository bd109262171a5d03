# Strategy: the rule catalogue is data.  Every check in the package names a
# slug from this table; the table is the single source for codes, severities,
# the profiles a rule applies to, the reference (safetensors 0.8.0) error class
# a rule maps to, and the anchor of its section in spec/SPEC.md.  Nothing else
# in the package hard-codes a code or a severity.
#
# Severity of a strict-only rule comes from evidence (spec/SPEC.md, beside
# each rule): a construct a mainstream writer emits and every surveyed loader
# reads is a warning (ST303: mlx writes "__metadata__": null); one that a
# mainstream loader refuses or misreads is an error (ST305, ST309); one that
# no surveyed writer emits stays an error where the written spec forbids it
# (ST202, ST203, ST210, ST307).
from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = ["BOTH", "BY_CODE", "BY_SLUG", "MAX_HEADER_SIZE", "PREFIX_LEN", "REFERENCE_ERRORS", "REFERENCE_MESSAGES", "RULES", "STRICT_ONLY", "Profile", "Rule", "Severity", "rule"]

# "8 bytes: N, an unsigned little-endian 64-bit integer, containing the size
# of the header"; the reference refuses N above 100,000,000 (MAX_HEADER_SIZE
# in safetensors' lib.rs), which the spec does not state.
PREFIX_LEN: Final = 8
MAX_HEADER_SIZE: Final = 100_000_000


class Severity(enum.Enum):
    """How bad a finding is: errors make a file invalid, warnings do not."""

    ERROR = "error"
    WARNING = "warning"


class Profile(enum.Enum):
    """Which rule set a validation applies.

    ``REFERENCE`` accepts exactly what ``safetensors==0.8.0`` accepts.
    ``STRICT`` (the default) also enforces the written spec and rejects every
    construct on which implementations disagree.
    """

    STRICT = "strict"
    REFERENCE = "reference"


BOTH: Final = frozenset({Profile.STRICT, Profile.REFERENCE})
STRICT_ONLY: Final = frozenset({Profile.STRICT})


@dataclass(frozen=True)
class Rule:
    """One entry of the rule catalogue."""

    code: str
    slug: str
    title: str
    severity: Severity
    profiles: frozenset[Profile]
    reference_error: str | None
    region: str

    @property
    def anchor(self) -> str:
        """The anchor of this rule's section in ``spec/SPEC.md``."""
        return self.slug

    def applies_to(self, profile: Profile) -> bool:
        """Whether the rule is checked under ``profile``."""
        return profile in self.profiles


_E = Severity.ERROR
_W = Severity.WARNING

# code, slug, title, severity, profiles, reference error class, region
_TABLE: Final[tuple[tuple[str, str, str, Severity, frozenset[Profile], str | None, str], ...]] = (
    # Length prefix (bytes 0..8).
    ("ST101", "file-too-small", "file is shorter than the 8-byte length prefix", _E, BOTH, "HeaderTooSmall", "prefix"),
    ("ST102", "header-too-large", "declared header length exceeds 100,000,000 bytes", _E, BOTH, "HeaderTooLarge", "prefix"),
    ("ST103", "header-length-exceeds-file", "declared header runs past the end of the file", _E, BOTH, "InvalidHeaderLength", "prefix"),
    ("ST104", "header-unaligned", "header length is not a multiple of 8", _W, BOTH, None, "prefix"),
    #
    # Not a safetensors file at all (ST111-ST124): recognised by magic bytes and
    # structure once the length prefix has failed; reported after that failure,
    # so the reference error class of the file does not change.
    ("ST111", "file-is-pickle", "the file is a Python pickle, not a safetensors file", _E, BOTH, None, "format"),
    ("ST112", "file-is-pytorch-zip", "the file is a PyTorch ZIP checkpoint, not a safetensors file", _E, BOTH, None, "format"),
    ("ST113", "file-is-zip", "the file is a ZIP archive, not a safetensors file", _E, BOTH, None, "format"),
    ("ST114", "file-is-numpy", "the file is a NumPy .npy or .npz file, not a safetensors file", _E, BOTH, None, "format"),
    ("ST115", "file-is-git-lfs-pointer", "the file is a Git LFS pointer, not the file it stands for", _E, BOTH, None, "format"),
    ("ST116", "file-is-html", "the file is an HTML page, not a safetensors file", _E, BOTH, None, "format"),
    ("ST117", "file-is-xml", "the file is an XML document, not a safetensors file", _E, BOTH, None, "format"),
    ("ST118", "file-is-json", "the file is a JSON document, not a safetensors file", _E, BOTH, None, "format"),
    ("ST119", "file-is-gguf", "the file is a GGUF model, not a safetensors file", _E, BOTH, None, "format"),
    ("ST120", "file-is-hdf5", "the file is an HDF5 file, not a safetensors file", _E, BOTH, None, "format"),
    ("ST121", "file-is-tflite", "the file is a TensorFlow Lite model, not a safetensors file", _E, BOTH, None, "format"),
    ("ST122", "file-is-archive", "the file is a compressed stream or archive, not a safetensors file", _E, BOTH, None, "format"),
    ("ST123", "file-is-executable", "the file is an executable program, not a safetensors file", _E, BOTH, None, "format"),
    ("ST124", "file-is-text", "the file is plain text, not a safetensors file", _E, BOTH, None, "format"),
    # Header bytes and JSON text.
    ("ST201", "header-not-utf8", "header is not valid UTF-8", _E, BOTH, "InvalidHeader", "header"),
    ("ST202", "header-leading-bytes", "header does not begin with '{'", _E, STRICT_ONLY, None, "header"),
    ("ST203", "header-padding", "header padding is not 0x20 spaces", _E, STRICT_ONLY, None, "header"),
    ("ST204", "header-trailing-bytes", "non-whitespace bytes follow the JSON object", _E, BOTH, "InvalidHeaderDeserialization", "header"),
    ("ST205", "json-syntax", "header is not well-formed JSON", _E, BOTH, "InvalidHeaderDeserialization", "header"),
    ("ST206", "json-depth", "JSON nesting exceeds 127 levels", _E, BOTH, "InvalidHeaderDeserialization", "header"),
    ("ST207", "json-number", "number token the reference parser refuses", _E, BOTH, "InvalidHeaderDeserialization", "header"),
    ("ST208", "json-string", "malformed string: control character, bad escape or lone surrogate", _E, BOTH, "InvalidHeaderDeserialization", "header"),
    ("ST209", "duplicate-field", "a tensor field or __metadata__ appears twice", _E, BOTH, "InvalidHeaderDeserialization", "header"),
    ("ST210", "duplicate-key", "a tensor name or metadata key appears twice", _E, STRICT_ONLY, None, "header"),
    # Header object, metadata and tensor entries.
    ("ST301", "header-not-object", "header is not a JSON object", _E, BOTH, "InvalidHeaderDeserialization", "entries"),
    ("ST302", "metadata-invalid", "__metadata__ is not a map of strings to strings", _E, BOTH, "InvalidHeaderDeserialization", "entries"),
    ("ST303", "metadata-null", "__metadata__ is null", _W, STRICT_ONLY, None, "entries"),
    ("ST304", "tensor-entry-invalid", "tensor entry is not an object", _E, BOTH, "InvalidHeaderDeserialization", "entries"),
    ("ST305", "tensor-entry-array", "tensor entry is written as an array", _E, STRICT_ONLY, None, "entries"),
    ("ST306", "tensor-field-missing", "tensor entry lacks dtype, shape or data_offsets", _E, BOTH, "InvalidHeaderDeserialization", "entries"),
    ("ST307", "tensor-field-unknown", "tensor entry has a field the spec does not define", _E, STRICT_ONLY, None, "entries"),
    ("ST308", "dtype-unknown", "dtype is not one of the spec's names", _E, BOTH, "InvalidHeaderDeserialization", "entries"),
    ("ST309", "dtype-not-string", "dtype is written as a single-key object", _E, STRICT_ONLY, None, "entries"),
    ("ST310", "shape-invalid", "shape is not an array of unsigned 64-bit integers", _E, BOTH, "InvalidHeaderDeserialization", "entries"),
    ("ST311", "offsets-invalid", "data_offsets is not a pair of unsigned 64-bit integers", _E, BOTH, "InvalidHeaderDeserialization", "entries"),
    ("ST312", "tensor-name-suspicious", "tensor name is empty or holds control or bidi characters", _W, BOTH, None, "entries"),
    # Layout of the data region.
    ("ST401", "offsets-not-contiguous", "tensor leaves a hole or overlaps another tensor", _E, BOTH, "InvalidOffset", "layout"),
    ("ST402", "offsets-reversed", "tensor's end offset is before its begin offset", _E, BOTH, "InvalidOffset", "layout"),
    ("ST403", "size-overflow", "element count or bit size overflows 64 bits", _E, BOTH, "ValidationOverflow", "layout"),
    ("ST404", "subbyte-misaligned", "sub-byte tensor does not end on a byte boundary", _E, BOTH, "MisalignedSlice", "layout"),
    ("ST405", "byte-length-mismatch", "data_offsets span differs from the size implied by shape and dtype", _E, BOTH, "TensorInvalidInfo", "layout"),
    ("ST406", "buffer-trailing-bytes", "bytes follow the last tensor", _E, BOTH, "MetadataIncompleteBuffer", "layout"),
    ("ST407", "buffer-truncated", "file ends before the last tensor does", _E, BOTH, "MetadataIncompleteBuffer", "layout"),
    ("ST408", "tensor-unaligned", "tensor's absolute start is not a multiple of its element size", _W, BOTH, None, "layout"),
    #
    # Sharded checkpoints: model.safetensors.index.json (ST5xx).
    ("ST501", "index-invalid", "index is not a JSON object with a weight_map of names to shard files", _E, BOTH, None, "index"),
    ("ST502", "index-shard-path", "shard file name is not a safe relative name of a .safetensors file, or leaves the index's directory through a symlink", _E, BOTH, None, "index"),
    ("ST503", "index-shard-missing", "a shard named in the index cannot be read", _E, BOTH, None, "index"),
    ("ST504", "index-shard-invalid", "a shard named in the index fails validation", _E, BOTH, None, "index"),
    ("ST505", "index-tensor-missing", "a tensor the index lists is not in the shard it names", _E, BOTH, None, "index"),
    ("ST506", "index-tensor-unlisted", "a shard holds a tensor the index does not list for that shard", _E, BOTH, None, "index"),
    ("ST507", "index-tensor-duplicated", "a tensor is listed twice in the index or held by more than one shard", _E, BOTH, None, "index"),
    ("ST508", "index-total-size-mismatch", "metadata.total_size differs from the sum of the tensors' bytes", _E, BOTH, None, "index"),
    ("ST509", "index-key-missing", "an expected tensor name is not in the index", _E, BOTH, None, "index"),
    ("ST510", "index-key-unexpected", "the index lists a tensor name that was not expected", _E, BOTH, None, "index"),
    ("ST511", "index-total-size-missing", "the index has no metadata.total_size to check the shards against", _W, BOTH, None, "index"),
    ("ST512", "index-total-size-float", "metadata.total_size is a whole-number float, not an integer", _W, BOTH, None, "index"),
    ("ST513", "index-tensor-tied", "a tensor the index lists is in no shard, but a tie supplies it", _W, BOTH, None, "index"),
    ("ST514", "index-orphan-shard", "a file beside the index is named like a shard, but no index in the folder names it", _W, BOTH, None, "index"),
    ("ST515", "index-beside-single-file", "the unsharded file of the same name lies beside the index, and loaders pick one of the two", _W, BOTH, None, "index"),
    #
    # Deep scan of tensor contents, integrity and policy (ST6xx).
    ("ST601", "tensor-nan-inf", "float tensor holds NaN or infinite values", _W, BOTH, None, "deep"),
    ("ST602", "tensor-all-zero", "tensor's bytes are all zero", _W, BOTH, None, "deep"),
    ("ST603", "data-zero-tail", "the data region ends in a long run of zero bytes", _W, BOTH, None, "deep"),
    ("ST604", "tensor-embedded-executable", "byte tensor holds a pickle, archive or binary", _W, BOTH, None, "deep"),
    ("ST605", "metadata-suspicious", "odd name or metadata: .. path, controls, huge value", _W, BOTH, None, "deep"),
    ("ST606", "checksum-mismatch", "file's digest differs from the expected one", _E, BOTH, None, "integrity"),
    ("ST607", "checksum-missing", "no expected digest is known for the file", _W, BOTH, None, "integrity"),
    ("ST608", "policy-file-too-large", "file is larger than the policy allows", _E, BOTH, None, "policy"),
    ("ST609", "policy-header-too-large", "header is larger than the policy allows", _E, BOTH, None, "policy"),
    ("ST610", "policy-too-many-tensors", "file has more tensors than the policy allows", _E, BOTH, None, "policy"),
    ("ST611", "policy-dtype-forbidden", "tensor's dtype is not allowed by the policy", _E, BOTH, None, "policy"),
    ("ST612", "policy-metadata-missing", "a metadata key the policy requires is absent", _E, BOTH, None, "policy"),
    ("ST613", "checksum-file-missing", "a file the checksum list names is not on disk", _E, BOTH, None, "integrity"),
    ("ST614", "download-incomplete", "a hub cache holds an interrupted download (a .incomplete blob)", _E, BOTH, None, "integrity"),
    ("ST620", "scan-timeout", "file was not scanned within the per-file time limit", _E, BOTH, None, "policy"),
    #
    # What a folder holds besides safetensors files, and how it is walked (ST7xx):
    # reported by `check`, `scan` and `inspect` for directories and hub caches.
    ("ST701", "pickle-file", "a pickle or PyTorch ZIP file: loading it can run arbitrary code", _E, BOTH, None, "folder"),
    ("ST702", "custom-code", "a Python file: trust_remote_code=True would run it", _W, BOTH, None, "folder"),
    ("ST703", "link-leaves-root", "a symlink below the folder or hub cache given resolves outside it", _E, BOTH, None, "folder"),
    ("ST704", "link-loop", "a folder link leads to a folder already walked, so it is not walked again", _W, BOTH, None, "folder"),
    ("ST705", "pickle-weights-only", "a pickle that imports only tensor, storage and container types: torch.load(weights_only=True) loads it", _W, BOTH, None, "folder"),
    ("ST706", "keras-lambda-layer", "a Keras model with a Lambda layer, whose marshalled bytecode loading runs", _E, BOTH, None, "folder"),
    ("ST707", "onnx-external-data-outside", "an ONNX model whose external data location leaves its folder", _E, BOTH, None, "folder"),
    #
    # Signed models: OpenSSF Model Signing (model.sig) over a folder (ST8xx),
    # reported by `scan` with --public-key, --certificate-chain or --identity.
    ("ST801", "signature-invalid", "the model signature does not verify with the key, certificate chain or identity given", _E, BOTH, None, "signature"),
    ("ST802", "signed-file-changed", "a file's digest differs from the one the model signature lists", _E, BOTH, None, "signature"),
    ("ST803", "signed-file-missing", "a file the model signature lists is not in the folder", _E, BOTH, None, "signature"),
    ("ST804", "unsigned-file", "a file in the folder is not covered by the model signature or its ignore list", _E, BOTH, None, "signature"),
    ("ST805", "signature-unsupported", "the model signature uses a hash type or serialization stcheck cannot reproduce", _E, BOTH, None, "signature"),
    ("ST806", "signature-not-verified", "the folder has a model signature, but no key or certificate was given to verify it", _W, BOTH, None, "signature"),
    ("ST807", "signature-missing", "a key or certificate was given, but the folder has no model signature", _E, BOTH, None, "signature"),
)

RULES: Final[tuple[Rule, ...]] = tuple(Rule(*row) for row in _TABLE)
BY_SLUG: Final = MappingProxyType({rule.slug: rule for rule in RULES})
BY_CODE: Final = MappingProxyType({rule.code: rule for rule in RULES})

# The error classes of safetensors' Rust `SafeTensorError` that read_metadata
# can return, in the order read_metadata checks them.
REFERENCE_ERRORS: Final = (
    "HeaderTooSmall",
    "HeaderTooLarge",
    "InvalidHeaderLength",
    "InvalidHeader",
    "InvalidHeaderDeserialization",
    "InvalidOffset",
    "ValidationOverflow",
    "MisalignedSlice",
    "TensorInvalidInfo",
    "MetadataIncompleteBuffer",
)

# A phrase of the Python binding's `SafetensorError` message -> the Rust error
# class it names.  The binding raises one exception type for every class, so
# the class is read from the Display text; each phrase occurs in its own
# class's message only (compare classes, not whole messages: the text drifts
# between releases).
REFERENCE_MESSAGES: Final = (
    ("header too small", "HeaderTooSmall"),
    ("header too large", "HeaderTooLarge"),
    ("invalid header length", "InvalidHeaderLength"),
    ("invalid UTF-8 in header", "InvalidHeader"),
    ("invalid JSON in header", "InvalidHeaderDeserialization"),
    ("invalid offset for tensor", "InvalidOffset"),
    ("overflow computing buffer size", "ValidationOverflow"),
    ("slicing for subbytes", "MisalignedSlice"),
    ("invalid shape, data type, or offset for tensor", "TensorInvalidInfo"),
    ("incomplete metadata, file not fully covered", "MetadataIncompleteBuffer"),
)


def rule(key: str) -> Rule:
    """Look a rule up by slug (``"json-depth"``) or code (``"ST206"``)."""
    found = BY_SLUG.get(key) or BY_CODE.get(key)
    if found is None:
        msg = f"unknown rule {key!r}"
        raise KeyError(msg)
    return found
