# Strategy: the rule catalogue is data.  Every check in the package names a
# slug from this table; the table is the single source for codes, severities,
# the profiles a rule applies to, the reference (safetensors 0.8.0) error class
# a rule maps to, the anchor of its section in spec/SPEC.md, and what
# `stcheck rules CODE` and SARIF's help text show: the fix, and a bad
# example.  Nothing else in the package hard-codes a code or a severity, and
# a rule is one row here: its fix and its example cannot be forgotten or
# drift away from it (tests/test_rule_rows.py).
#
# A bad example is a real file for every rule of a file's bytes (a header
# text and a data length, or the bytes verbatim), so `stcheck rules` can run
# the validator on it and print what stcheck says; tests/test_explain.py
# checks that each breaks its own rule.  Rules that need more than one file
# (an index, a digest, a policy, a deep scan) describe their example in words.
#
# Severity of a strict-only rule comes from evidence (spec/SPEC.md, beside
# each rule): a construct a mainstream writer emits and every surveyed loader
# reads is a warning (ST303: mlx writes "__metadata__": null); one that a
# mainstream loader refuses or misreads is an error (ST305, ST309); one that
# no surveyed writer emits stays an error where the written spec forbids it
# (ST202, ST203, ST210, ST307).
from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

__all__ = ["BOTH", "BY_CODE", "BY_SLUG", "MAX_HEADER_SIZE", "PREFIX_LEN", "REFERENCE_ERRORS", "REFERENCE_MESSAGES", "RULES", "STRICT_ONLY", "Example", "Profile", "Rule", "Severity", "did_you_mean", "find_rule", "rule", "unknown_rule"]

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
class Example:
    """A rule's bad example: a file's bytes, or words where one file cannot show it."""

    header: str | None = None  # header JSON text (padded to a multiple of 8 unless pad is False)
    data: int = 0  # bytes of zero data after the header
    raw: bytes | None = None  # the whole file, verbatim
    pad: bool = True
    text: str | None = None  # an example in words, for rules that need more than one file's bytes

    def file(self) -> bytes | None:
        """The example's bytes, or None when it is described in words."""
        if self.raw is not None:
            return self.raw
        if self.header is None:
            return None
        head = self.header.encode("utf-8", "surrogatepass")
        if self.pad:
            head += b" " * (-len(head) % 8)
        return len(head).to_bytes(8, "little") + head + bytes(self.data)


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
    # What `stcheck rules CODE` and SARIF's help show; every row of the
    # catalogue gives both (the defaults keep a hand-made Rule short).
    fix: str | None = None
    example: Example | None = None

    @property
    def anchor(self) -> str:
        """The anchor of this rule's section in ``spec/SPEC.md``."""
        return self.slug

    def applies_to(self, profile: Profile) -> bool:
        """Whether the rule is checked under ``profile``."""
        return profile in self.profiles


def _t(dtype: str, shape: list[int], begin: int, end: int, name: str = "w") -> str:
    """One tensor entry as compact JSON text, for the examples below."""
    return f'"{name}":' + json.dumps(
        {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}, separators=(",", ":")
    )


_VALID = _t("F32", [2], 0, 8)  # a valid 8-byte tensor
_E = Severity.ERROR
_W = Severity.WARNING

# Each rule is one row: code, slug, title, severity, profiles, reference
# error class, region; then its fix; then its bad example.
_TABLE: Final[tuple[tuple[str, str, str, Severity, frozenset[Profile], str | None, str, str, Example], ...]] = (
    # Length prefix (bytes 0..8).
    ("ST101", "file-too-small", "file is shorter than the 8-byte length prefix", _E, BOTH, "HeaderTooSmall", "prefix",
        "The file was cut short; fetch it again.",
        Example(raw=b"\x01\x00\x00")),
    ("ST102", "header-too-large", "declared header length exceeds 100,000,000 bytes", _E, BOTH, "HeaderTooLarge", "prefix",
        "Write the header with a conforming writer (safetensors, validator.save): N must be at most 100,000,000.",
        Example(raw=(100_000_001).to_bytes(8, "little") + b"{}")),
    ("ST103", "header-length-exceeds-file", "declared header runs past the end of the file", _E, BOTH, "InvalidHeaderLength", "prefix",
        "The file is truncated, or the prefix is wrong; fetch it again.",
        Example(raw=(64).to_bytes(8, "little") + b"{}")),
    ("ST104", "header-unaligned", "header length is not a multiple of 8", _W, BOTH, None, "prefix",
        "Pad the header with spaces (0x20) to a multiple of 8 bytes.",
        Example(header="{}", pad=False)),
    #
    # Not a safetensors file at all (ST111-ST124): recognised by magic bytes and
    # structure once the length prefix has failed; reported after that failure,
    # so the reference error class of the file does not change.
    ("ST111", "file-is-pickle", "the file is a Python pickle, not a safetensors file", _E, BOTH, None, "format",
        "Never load it with torch.load or pickle.load from an untrusted source; get the safetensors file.",
        Example(raw=b"\x80\x04\x95\x09\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01w\x94K\x01s.")),
    ("ST112", "file-is-pytorch-zip", "the file is a PyTorch ZIP checkpoint, not a safetensors file", _E, BOTH, None, "format",
        "Load a trusted checkpoint with torch.load(path, weights_only=True) and convert it with safetensors.torch.save_file; never load one of unknown origin.",
        Example(text="torch.save({'w': torch.zeros(3)}, 'model.safetensors')")),
    ("ST113", "file-is-zip", "the file is a ZIP archive, not a safetensors file", _E, BOTH, None, "format",
        "Check what the archive holds and where it came from.",
        Example(raw=b"PK\x05\x06" + bytes(18))),
    ("ST114", "file-is-numpy", "the file is a NumPy .npy or .npz file, not a safetensors file", _E, BOTH, None, "format",
        "Load it with numpy.load(path, allow_pickle=False).",
        Example(raw=b"\x93NUMPY\x01\x00v\x00" + b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }".ljust(117) + b"\n")),
    ("ST115", "file-is-git-lfs-pointer", "the file is a Git LFS pointer, not the file it stands for", _E, BOTH, None, "format",
        "Run `git lfs pull` in the repository to fetch the real file.",
        Example(raw=b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 88\n")),
    ("ST116", "file-is-html", "the file is an HTML page, not a safetensors file", _E, BOTH, None, "format",
        "Download the file again; check the URL and the access token (curl --fail stops on an error page).",
        Example(raw=b"<!DOCTYPE html>\n<html><body>404 Not Found</body></html>\n")),
    ("ST117", "file-is-xml", "the file is an XML document, not a safetensors file", _E, BOTH, None, "format",
        "Download the file again; check the URL and the access token.",
        Example(raw=b'<?xml version="1.0"?>\n<Error><Code>AccessDenied</Code></Error>\n')),
    ("ST118", "file-is-json", "the file is a JSON document, not a safetensors file", _E, BOTH, None, "format",
        "Validate a sharded checkpoint's index with validator.validate_index; download anything else again.",
        Example(raw=b'{"error": "Repository not found"}\n')),
    ("ST119", "file-is-gguf", "the file is a GGUF model, not a safetensors file", _E, BOTH, None, "format",
        "Load it with llama.cpp or the gguf package.",
        Example(raw=b"GGUF\x03\x00\x00\x00" + bytes(16))),
    ("ST120", "file-is-hdf5", "the file is an HDF5 file, not a safetensors file", _E, BOTH, None, "format",
        "Read it with h5py.",
        Example(raw=b"\x89HDF\r\n\x1a\n" + bytes(24))),
    ("ST121", "file-is-tflite", "the file is a TensorFlow Lite model, not a safetensors file", _E, BOTH, None, "format",
        "Load it with the TensorFlow Lite interpreter.",
        Example(raw=b"\x1c\x00\x00\x00TFL3" + bytes(8))),
    ("ST122", "file-is-archive", "the file is a compressed stream or archive, not a safetensors file", _E, BOTH, None, "format",
        "Decompress or unpack it and check what it holds.",
        Example(raw=b"\xfd7zXZ\x00" + bytes(10))),
    ("ST123", "file-is-executable", "the file is an executable program, not a safetensors file", _E, BOTH, None, "format",
        "Do not run it: a model file is never a program.",
        Example(raw=b"\x7fELF\x02\x01\x01" + bytes(9))),
    ("ST124", "file-is-text", "the file is plain text, not a safetensors file", _E, BOTH, None, "format",
        "Download or copy the file again, and check it before you load it.",
        Example(raw=b"root:x:0:0:root:/root:/bin/bash\n")),
    # Header bytes and JSON text.
    ("ST201", "header-not-utf8", "header is not valid UTF-8", _E, BOTH, "InvalidHeader", "header",
        "Write the header as UTF-8 (json.dumps(...).encode('utf-8')).",
        Example(raw=b'\x08\x00\x00\x00\x00\x00\x00\x00{"\xff":1}  ')),
    ("ST202", "header-leading-bytes", "header does not begin with '{'", _E, STRICT_ONLY, None, "header",
        "Start the header with '{'; put padding after the object.",
        Example(header=" {}", data=0)),
    ("ST203", "header-padding", "header padding is not 0x20 spaces", _E, STRICT_ONLY, None, "header",
        "Pad with spaces (0x20) only.",
        Example(header="{}\t")),
    ("ST204", "header-trailing-bytes", "non-whitespace bytes follow the JSON object", _E, BOTH, "InvalidHeaderDeserialization", "header",
        "Pad with spaces, never with NUL or other bytes.",
        Example(header="{}\x00")),
    ("ST205", "json-syntax", "header is not well-formed JSON", _E, BOTH, "InvalidHeaderDeserialization", "header",
        "Write the header with a JSON library, not by hand.",
        Example(header='{"a":}')),
    ("ST206", "json-depth", "JSON nesting exceeds 127 levels", _E, BOTH, "InvalidHeaderDeserialization", "header",
        "Keep metadata flat: the reference refuses the 128th nested container.",
        Example(header='{"__metadata__":{},"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":' + "[" * 126 + "]" * 126 + "}}")),
    ("ST207", "json-number", "number token the reference parser refuses", _E, BOTH, "InvalidHeaderDeserialization", "header",
        "Write finite numbers within f64 range; NaN and Infinity are not JSON.",
        Example(header='{"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":1e400}}')),
    ("ST208", "json-string", "malformed string: control character, bad escape or lone surrogate", _E, BOTH, "InvalidHeaderDeserialization", "header",
        "Escape control characters and never write a lone surrogate.",
        Example(header='{"__metadata__":{"a":"\\ud800"}}')),
    ("ST209", "duplicate-field", "a tensor field or __metadata__ appears twice", _E, BOTH, "InvalidHeaderDeserialization", "header",
        "Write each field of a tensor entry once.",
        Example(header='{"w":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}', data=1)),
    ("ST210", "duplicate-key", "a tensor name or metadata key appears twice", _E, STRICT_ONLY, None, "header",
        "Give every tensor and metadata key one definition; readers disagree on which duplicate wins.",
        Example(header='{"__metadata__":{"k":"1","k":"2"}}')),
    # Header object, metadata and tensor entries.
    ("ST301", "header-not-object", "header is not a JSON object", _E, BOTH, "InvalidHeaderDeserialization", "entries",
        "The header is one JSON object.",
        Example(header="[]")),
    ("ST302", "metadata-invalid", "__metadata__ is not a map of strings to strings", _E, BOTH, "InvalidHeaderDeserialization", "entries",
        "Metadata values are strings: write str(value).",
        Example(header='{"__metadata__":{"epoch":3}}')),
    ("ST303", "metadata-null", "__metadata__ is null", _W, STRICT_ONLY, None, "entries",
        "Leave __metadata__ out, or write {}, instead of null (mlx writes null; every surveyed reader takes it as no metadata, so this is a portability warning).",
        Example(header='{"__metadata__":null}')),
    ("ST304", "tensor-entry-invalid", "tensor entry is not an object", _E, BOTH, "InvalidHeaderDeserialization", "entries",
        "A tensor entry is an object with dtype, shape and data_offsets.",
        Example(header='{"w":1}')),
    ("ST305", "tensor-entry-array", "tensor entry is written as an array", _E, STRICT_ONLY, None, "entries",
        "Write each entry as an object, not as [dtype, shape, data_offsets].",
        Example(header='{"w":["F32",[2],[0,8]]}', data=8)),
    ("ST306", "tensor-field-missing", "tensor entry lacks dtype, shape or data_offsets", _E, BOTH, "InvalidHeaderDeserialization", "entries",
        "Give dtype, shape and data_offsets.",
        Example(header='{"w":{"dtype":"F32","shape":[2]}}')),
    ("ST307", "tensor-field-unknown", "tensor entry has a field the spec does not define", _E, STRICT_ONLY, None, "entries",
        "Move extra information into __metadata__.",
        Example(header='{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"note":"x"}}', data=8)),
    ("ST308", "dtype-unknown", "dtype is not one of the spec's names", _E, BOTH, "InvalidHeaderDeserialization", "entries",
        "Use one of the spec's dtype names, spelt exactly (F32, not float32).",
        Example(header="{" + _t("float32", [2], 0, 8) + "}", data=8)),
    ("ST309", "dtype-not-string", "dtype is written as a single-key object", _E, STRICT_ONLY, None, "entries",
        'Write the dtype as a string, "F32".',
        Example(header='{"w":{"dtype":{"F32":null},"shape":[2],"data_offsets":[0,8]}}', data=8)),
    ("ST310", "shape-invalid", "shape is not an array of unsigned 64-bit integers", _E, BOTH, "InvalidHeaderDeserialization", "entries",
        "Shapes are arrays of non-negative integers without a fraction or exponent.",
        Example(header='{"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}', data=8)),
    ("ST311", "offsets-invalid", "data_offsets is not a pair of unsigned 64-bit integers", _E, BOTH, "InvalidHeaderDeserialization", "entries",
        "data_offsets is [begin, end], two non-negative integers.",
        Example(header='{"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}}', data=8)),
    ("ST312", "tensor-name-suspicious", "tensor name is empty or holds control or bidi characters", _W, BOTH, None, "entries",
        "Name tensors with printable characters only.",
        Example(header="{" + _t("F32", [2], 0, 8, name="w\\u202egpj") + "}", data=8)),
    # Layout of the data region.
    ("ST401", "offsets-not-contiguous", "tensor leaves a hole or overlaps another tensor", _E, BOTH, "InvalidOffset", "layout",
        "Lay the tensors out back to back from offset 0, with no gap and no overlap.",
        Example(header="{" + _t("U8", [1], 0, 1, "a") + "," + _t("U8", [1], 2, 3, "b") + "}", data=3)),
    ("ST402", "offsets-reversed", "tensor's end offset is before its begin offset", _E, BOTH, "InvalidOffset", "layout",
        "end is begin plus the tensor's byte size.",
        Example(header="{" + _t("U8", [0], 4, 0) + "}", data=4)),
    ("ST403", "size-overflow", "element count or bit size overflows 64 bits", _E, BOTH, "ValidationOverflow", "layout",
        "The element count times the bit width must fit in 64 bits.",
        Example(header="{" + _t("F32", [4294967296, 4294967296], 0, 8) + "}", data=8)),
    ("ST404", "subbyte-misaligned", "sub-byte tensor does not end on a byte boundary", _E, BOTH, "MisalignedSlice", "layout",
        "Give F4 and F6 tensors an element count that fills whole bytes.",
        Example(header="{" + _t("F4", [3], 0, 2) + "}", data=2)),
    ("ST405", "byte-length-mismatch", "data_offsets span differs from the size implied by shape and dtype", _E, BOTH, "TensorInvalidInfo", "layout",
        "end - begin is the element count times the dtype's size.",
        Example(header="{" + _t("F32", [2], 0, 4) + "}", data=4)),
    ("ST406", "buffer-trailing-bytes", "bytes follow the last tensor", _E, BOTH, "MetadataIncompleteBuffer", "layout",
        "Cut the file after the last tensor's end.",
        Example(header="{" + _VALID + "}", data=9)),
    ("ST407", "buffer-truncated", "file ends before the last tensor does", _E, BOTH, "MetadataIncompleteBuffer", "layout",
        "The file was cut short; fetch it again.",
        Example(header="{" + _VALID + "}", data=7)),
    ("ST408", "tensor-unaligned", "tensor's absolute start is not a multiple of its element size", _W, BOTH, None, "layout",
        "Pad the header to a multiple of 8 so every tensor starts aligned.",
        Example(header="{" + _t("F32", [1], 0, 4) + "}", data=4, pad=False)),
    #
    # Sharded checkpoints: model.safetensors.index.json (ST5xx).
    ("ST501", "index-invalid", "index is not a JSON object with a weight_map of names to shard files", _E, BOTH, None, "index",
        "Write {'metadata': {'total_size': N}, 'weight_map': {tensor: shard}}.",
        Example(text='{"weight_map": []}')),
    ("ST502", "index-shard-path", "shard file name is not a safe relative name of a .safetensors file, or leaves the index's directory through a symlink", _E, BOTH, None, "index",
        "Name each shard by a plain *.safetensors file name in the index's directory.",
        Example(text='"weight_map": {"w": "../../etc/passwd"}, or a shard named ".git/config"')),
    ("ST503", "index-shard-missing", "a shard named in the index cannot be read", _E, BOTH, None, "index",
        "Download every shard the index names.",
        Example(text="the index names model-00002-of-00002.safetensors, which is absent")),
    ("ST504", "index-shard-invalid", "a shard named in the index fails validation", _E, BOTH, None, "index",
        "Fix or fetch the shard again.",
        Example(text="a shard fails validation (see its findings)")),
    ("ST505", "index-tensor-missing", "a tensor the index lists is not in the shard it names", _E, BOTH, None, "index",
        "Regenerate the index from the shards.",
        Example(text="the index maps 'w' to a shard that does not hold 'w'")),
    ("ST506", "index-tensor-unlisted", "a shard holds a tensor the index does not list for that shard", _E, BOTH, None, "index",
        "Regenerate the index from the shards.",
        Example(text="a shard holds 'b', which the index does not list for it")),
    ("ST507", "index-tensor-duplicated", "a tensor is listed twice in the index or held by more than one shard", _E, BOTH, None, "index",
        "Keep each tensor in exactly one shard.",
        Example(text="two shards both hold 'w'")),
    ("ST508", "index-total-size-mismatch", "metadata.total_size differs from the sum of the tensors' bytes", _E, BOTH, None, "index",
        "Set metadata.total_size to the sum of the tensors' byte sizes.",
        Example(text='"total_size": 1000 for 16 bytes of tensors')),
    ("ST509", "index-key-missing", "an expected tensor name is not in the index", _E, BOTH, None, "index",
        "Add the tensor to the checkpoint.",
        Example(text="an expected tensor name is not in the index")),
    ("ST510", "index-key-unexpected", "the index lists a tensor name that was not expected", _E, BOTH, None, "index",
        "Remove the tensor, or expect it.",
        Example(text="the index lists a tensor name that was not expected")),
    ("ST511", "index-total-size-missing", "the index has no metadata.total_size to check the shards against", _W, BOTH, None, "index",
        "Add metadata.total_size (the sum of the tensors' byte sizes) so the shards can be checked against it.",
        Example(text='{"weight_map": {"w": "model-00001-of-00001.safetensors"}} with no "metadata"')),
    ("ST512", "index-total-size-float", "metadata.total_size is a whole-number float, not an integer", _W, BOTH, None, "index",
        "Write total_size as an integer (the sum of the tensors' byte sizes); loaders do not read it.",
        Example(text='"total_size": 1068.0, as transformers 4.30 writes it')),
    ("ST513", "index-tensor-tied", "a tensor the index lists is in no shard, but a tie supplies it", _W, BOTH, None, "index",
        "Drop the tied name from weight_map, or store it; nothing to do if your loader ties weights.",
        Example(text='"lm_head.weight" listed in a shard that holds only "model.embed_tokens.weight"')),
    ("ST514", "index-orphan-shard", "a file beside the index is named like a shard, but no index in the folder names it", _W, BOTH, None, "index",
        "Delete the stale shard, or save the checkpoint again into an empty folder.",
        Example(text="model-00001-of-00099.safetensors beside an index of model-0000k-of-00002.safetensors shards")),
    ("ST515", "index-beside-single-file", "the unsharded file of the same name lies beside the index, and loaders pick one of the two", _W, BOTH, None, "index",
        "Keep one of the two: the single file or the sharded checkpoint.",
        Example(text="model.safetensors beside model.safetensors.index.json")),
    #
    # Deep scan of tensor contents, integrity and policy (ST6xx).
    ("ST601", "tensor-nan-inf", "float tensor holds NaN or infinite values", _W, BOTH, None, "deep",
        "Find the training step that diverged; do not ship the checkpoint.",
        Example(text="an F32 tensor holding 0x7fc00000 (NaN)")),
    ("ST602", "tensor-all-zero", "tensor's bytes are all zero", _W, BOTH, None, "deep",
        "Check that the weights were written or gathered before the save; a zeroed weight matrix is a broken export (zero biases, norms, small tensors, LoRA B, ControlNet zero convolutions and adaLN modulation are not reported: they start at zero by design).",
        Example(text="an F32 weight matrix of shape [64, 64] (16,384 bytes) that is all zero")),
    ("ST603", "data-zero-tail", "the data region ends in a long run of zero bytes", _W, BOTH, None, "deep",
        "The download stopped and left preallocated zeros; fetch the file again.",
        Example(text="the last 64 MiB of the data region are zero")),
    ("ST604", "tensor-embedded-executable", "byte tensor holds a pickle, archive or binary", _W, BOTH, None, "deep",
        "Never unpickle, unzip or run a tensor's bytes; find out why the file carries them.",
        Example(text="a U8 tensor whose bytes start with 80 04 95 (a pickle)")),
    ("ST605", "metadata-suspicious", "odd name or metadata: .. path, controls, huge value", _W, BOTH, None, "deep",
        "Keep metadata to plain, short text.",
        Example(text='"__metadata__": {"path": "../../.ssh/authorized_keys"}')),
    ("ST606", "checksum-mismatch", "file's digest differs from the expected one", _E, BOTH, None, "integrity",
        "The file is not the one published; fetch it again and compare with a trusted digest.",
        Example(text="sha256 of the file differs from the line in SHA256SUMS")),
    ("ST607", "checksum-missing", "no expected digest is known for the file", _W, BOTH, None, "integrity",
        "Add the file's digest to the checksum list, from a trusted source.",
        Example(text="--checksums SHA256SUMS has no line for the file")),
    ("ST608", "policy-file-too-large", "file is larger than the policy allows", _E, BOTH, None, "policy",
        "Raise max_file_size, or reject the file.",
        Example(text='max_file_size = "1 GiB" for a 2 GiB file')),
    ("ST609", "policy-header-too-large", "header is larger than the policy allows", _E, BOTH, None, "policy",
        "Raise max_header_size, or reject the file.",
        Example(text="max_header_size = 16 for a 96-byte header")),
    ("ST610", "policy-too-many-tensors", "file has more tensors than the policy allows", _E, BOTH, None, "policy",
        "Raise max_tensors, or reject the file.",
        Example(text="max_tensors = 2 for a file of three tensors")),
    ("ST611", "policy-dtype-forbidden", "tensor's dtype is not allowed by the policy", _E, BOTH, None, "policy",
        "Convert the tensor, or allow its dtype in the policy.",
        Example(text='forbidden_dtypes = ["F64"] and an F64 tensor')),
    ("ST612", "policy-metadata-missing", "a metadata key the policy requires is absent", _E, BOTH, None, "policy",
        "Write the key into __metadata__ when saving.",
        Example(text='required_metadata = ["format"] and no "format" key')),
    ("ST613", "checksum-file-missing", "a file the checksum list names is not on disk", _E, BOTH, None, "integrity",
        "Fetch the missing file, or remove its line from the list.",
        Example(text="SHA256SUMS lists model-00002.safetensors, which is not on disk")),
    ("ST614", "download-incomplete", "a hub cache holds an interrupted download (a .incomplete blob)", _E, BOTH, None, "integrity",
        "Resume or restart the download (huggingface-cli download), or delete the .incomplete blob.",
        Example(text="models--org--name/blobs/<sha256>.incomplete in a hub cache")),
    ("ST620", "scan-timeout", "file was not scanned within the per-file time limit", _E, BOTH, None, "policy",
        "Scan the file alone to see what stalls (stcheck scan --deep FILE), or raise --timeout-per-file.",
        Example(text="a file whose deep scan takes longer than --timeout-per-file 30")),
    #
    # What a folder holds besides safetensors files, and how it is walked (ST7xx):
    # reported by `check`, `scan` and `inspect` for directories and hub caches.
    ("ST701", "pickle-file", "a pickle or PyTorch ZIP file: loading it can run arbitrary code", _E, BOTH, None, "folder",
        "Do not load it: it imports or calls code outside the weights-only allowlist (the message names the call). Use the safetensors copy when there is one, or get the weights from a source you trust.",
        Example(text="model/training_args.bin, whose pickle calls os.system when torch.load unpickles it")),
    ("ST702", "custom-code", "a Python file: trust_remote_code=True would run it", _W, BOTH, None, "folder",
        "Read the code before passing trust_remote_code=True, or load without it.",
        Example(text="model/modeling_custom.py, which from_pretrained(..., trust_remote_code=True) imports and runs")),
    ("ST703", "link-leaves-root", "a symlink below the folder or hub cache given resolves outside it", _E, BOTH, None, "folder",
        "Copy the file into the folder, or check the folder the link points to by its own name.",
        Example(text="model/model.safetensors -> /home/user/other/model.safetensors")),
    ("ST704", "link-loop", "a folder link leads to a folder already walked, so it is not walked again", _W, BOTH, None, "folder",
        "Remove the link; each folder is walked once, so its files are reported once.",
        Example(text="model/sub/up -> .. (a link back to a folder that holds it)")),
    ("ST705", "pickle-weights-only", "a pickle that imports only tensor, storage and container types: torch.load(weights_only=True) loads it", _W, BOTH, None, "folder",
        'Prefer the safetensors copy (load with use_safetensors=True); otherwise load it only with torch.load(weights_only=True), the default since torch 2.6.  A policy can make it an error (severity = "error") where pickles are banned, or silence it (ignore = true).',
        Example(text="model/pytorch_model.bin, a torch.save state dict of tensors, beside model/model.safetensors")),
    ("ST706", "keras-lambda-layer", "a Keras model with a Lambda layer, whose marshalled bytecode loading runs", _E, BOTH, None, "folder",
        "Do not load it with keras.models.load_model(..., safe_mode=False) (nor with Keras 2, which has no safe mode); rebuild the layer in code, or use a safetensors copy of the weights.",
        Example(text="model/tf_model.h5 whose model_config holds a Lambda layer with marshalled bytecode")),
    ("ST707", "onnx-external-data-outside", "an ONNX model whose external data location leaves its folder", _E, BOTH, None, "folder",
        "Keep every external data file in the model's folder, named by a relative path without '..'.",
        Example(text='model/model.onnx with an initializer whose external_data location is "../../home/user/.ssh/id_rsa"')),
    ("ST708", "archive-unreadable", "an archive stcheck cannot open, or members of it that it cannot read", _W, BOTH, None, "folder",
        "Unpack it with a tool you trust and check what it holds (stcheck scan on the unpacked folder); never load its members unchecked.",
        Example(text="model/weights.zip whose member evil.pkl is encrypted (flag bit 0x01), or a .7z archive")),
    ("ST709", "archive-member-escapes", "an archive member whose name climbs out of the folder it is unpacked into", _E, BOTH, None, "folder",
        "Do not unpack it: a member named ../ something, /something or C:something is written outside the target folder.",
        Example(text="model/extra.zip with a member named ../../.bashrc")),
    ("ST710", "pickle-data-only", "a pickle that rebuilds library data types (NumPy, pandas, SciPy, joblib) and calls nothing of the file's choosing", _W, BOTH, None, "folder",
        'Load it only with the loader the message names, in an environment with that library; prefer a safetensors or other non-pickle copy.  A policy can make it an error where pickles are banned (severity = "error").',
        Example(text="model/scaler.joblib, a joblib.dump of a pandas.DataFrame and NumPy object arrays of strings")),
    #
    # Signed models: OpenSSF Model Signing (model.sig) over a folder (ST8xx),
    # reported by `scan` with --public-key, --certificate-chain or --identity.
    ("ST801", "signature-invalid", "the model signature does not verify with the key, certificate chain or identity given", _E, BOTH, None, "signature",
        "Get the publisher's own key or certificate chain; if it is the right one, the signature or the folder was tampered with: download the model again from its source.",
        Example(text="stcheck scan model/ --public-key someone-else.pub (model/model.sig was signed with another key)")),
    ("ST802", "signed-file-changed", "a file's digest differs from the one the model signature lists", _E, BOTH, None, "signature",
        "Download the file again from the publisher and scan again; never load a file that differs from what was signed.",
        Example(text="model/model.safetensors with one byte changed after `model_signing sign` wrote model/model.sig")),
    ("ST803", "signed-file-missing", "a file the model signature lists is not in the folder", _E, BOTH, None, "signature",
        "Download the missing file (an interrupted or partial download), or ask the publisher for a signature of what they ship.",
        Example(text="model/tokenizer.json, listed in model/model.sig, deleted from the folder")),
    ("ST804", "unsigned-file", "a file in the folder is not covered by the model signature or its ignore list", _E, BOTH, None, "signature",
        "Delete the file if you did not add it yourself; a file the publisher did not sign is not theirs.",
        Example(text="model/modeling_evil.py added to a folder after model/model.sig was made")),
    ("ST805", "signature-unsupported", "the model signature uses a hash type or serialization stcheck cannot reproduce", _E, BOTH, None, "signature",
        "Ask the publisher to sign with model_signing's sha256, blake2 or blake3 hashing, by files or by shards.",
        Example(text="a model.sig whose serialization names hash_type 'md5'")),
    ("ST806", "signature-not-verified", "the folder has a model signature, but no key or certificate was given to verify it", _W, BOTH, None, "signature",
        "Verify it: stcheck scan DIR --public-key KEY.pem (or --certificate-chain CA.pem, or keyless --identity ID --issuer URL) with the publisher's key.",
        Example(text="stcheck scan model/ of a folder holding model/model.sig, with no key given")),
    ("ST807", "signature-missing", "a key or certificate was given, but the folder has no model signature", _E, BOTH, None, "signature",
        "Ask the publisher for the signature (model.sig), or give its path with --signature PATH.",
        Example(text="stcheck scan model/ --public-key publisher.pub of a folder with no model/model.sig")),
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


# The one lookup of a rule by name, for the command line, a policy and the
# library alike: a code or a slug, in any case, so `st101`, `ST101` and
# `File-Too-Small` name the same rule wherever a user writes them.
_BY_NAME: Final = MappingProxyType({name.casefold(): r for r in RULES for name in (r.code, r.slug)})


def find_rule(key: str) -> Rule | None:
    """The rule ``key`` names (a code or a slug, in any case), else None."""
    return _BY_NAME.get(key.strip().casefold())


def did_you_mean(key: str) -> str:
    """The one guess at a mistyped rule name: ``"; did you mean ST401?"``, or "" when none is close."""
    import difflib  # noqa: PLC0415 - only for a name no rule has, never on a check's path

    close = difflib.get_close_matches(key.strip().casefold(), list(_BY_NAME), n=1, cutoff=0.6)
    if not close:
        return ""
    found = _BY_NAME[close[0]]
    return f"; did you mean {found.code if close[0] == found.code.casefold() else found.slug}?"


def unknown_rule(key: str) -> str:
    """The message for a ``key`` that names no rule, with the guess and where the rules are listed."""
    return f"unknown rule {key!r}{did_you_mean(key)} (`stcheck rules` lists them)"


def rule(key: str) -> Rule:
    """Look a rule up by slug (``"json-depth"``) or code (``"ST206"``), in any case.

    Raises KeyError, with the nearest name, for a key no rule has."""
    found = find_rule(key)
    if found is None:
        raise KeyError(unknown_rule(key))
    return found
