# Strategy: `stcheck rules CODE`, the way `ruff rule` explains a rule: what
# it checks, a bad example and how to fix it.  For every rule of a file's
# bytes the bad example is a real file (built here from a header text and a
# data length, or given verbatim), so the command can run the validator on
# it and print what stcheck says; tests check that each example breaks its
# own rule.  Rules that need more than one file (an index, a digest, a
# policy, a deep scan) describe their example in words.  spec/SPEC.md holds
# the normative text; this module is the short form a terminal shows.
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Example:
    """A rule's bad example and its fix."""

    fix: str
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


def _t(dtype: str, shape: list[int], begin: int, end: int, name: str = "w") -> str:
    return f'"{name}":' + json.dumps(
        {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}, separators=(",", ":")
    )


_W = _t("F32", [2], 0, 8)  # a valid 8-byte tensor
_REDOWNLOAD: Final = "Download or copy the file again, and check it before you load it."

EXAMPLES: Final[dict[str, Example]] = {
    # -- prefix -----------------------------------------------------------------
    "file-too-small": Example("The file was cut short; fetch it again.", raw=b"\x01\x00\x00"),
    "header-too-large": Example(
        "Write the header with a conforming writer (safetensors, validator.save): N must be at most 100,000,000.",
        raw=(100_000_001).to_bytes(8, "little") + b"{}",
    ),
    "header-length-exceeds-file": Example(
        "The file is truncated, or the prefix is wrong; fetch it again.", raw=(64).to_bytes(8, "little") + b"{}"
    ),
    "header-unaligned": Example("Pad the header with spaces (0x20) to a multiple of 8 bytes.", header="{}", pad=False),
    # -- not a safetensors file -------------------------------------------------
    "file-is-pickle": Example(
        "Never load it with torch.load or pickle.load from an untrusted source; get the safetensors file.",
        raw=b"\x80\x04\x95\x09\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01w\x94K\x01s.",
    ),
    "file-is-pytorch-zip": Example(
        "Load a trusted checkpoint with torch.load(path, weights_only=True) and convert it with "
        "safetensors.torch.save_file; never load one of unknown origin.",
        text="torch.save({'w': torch.zeros(3)}, 'model.safetensors')",
    ),
    "file-is-zip": Example("Check what the archive holds and where it came from.", raw=b"PK\x05\x06" + bytes(18)),
    "file-is-numpy": Example(
        "Load it with numpy.load(path, allow_pickle=False).",
        raw=b"\x93NUMPY\x01\x00v\x00" + b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }".ljust(117) + b"\n",
    ),
    "file-is-git-lfs-pointer": Example(
        "Run `git lfs pull` in the repository to fetch the real file.",
        raw=b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 88\n",
    ),
    "file-is-html": Example(
        "Download the file again; check the URL and the access token (curl --fail stops on an error page).",
        raw=b"<!DOCTYPE html>\n<html><body>404 Not Found</body></html>\n",
    ),
    "file-is-xml": Example(
        "Download the file again; check the URL and the access token.",
        raw=b'<?xml version="1.0"?>\n<Error><Code>AccessDenied</Code></Error>\n',
    ),
    "file-is-json": Example(
        "Validate a sharded checkpoint's index with validator.validate_index; download anything else again.",
        raw=b'{"error": "Repository not found"}\n',
    ),
    "file-is-gguf": Example("Load it with llama.cpp or the gguf package.", raw=b"GGUF\x03\x00\x00\x00" + bytes(16)),
    "file-is-hdf5": Example("Read it with h5py.", raw=b"\x89HDF\r\n\x1a\n" + bytes(24)),
    "file-is-tflite": Example("Load it with the TensorFlow Lite interpreter.", raw=b"\x1c\x00\x00\x00TFL3" + bytes(8)),
    "file-is-archive": Example("Decompress or unpack it and check what it holds.", raw=b"\xfd7zXZ\x00" + bytes(10)),
    "file-is-executable": Example(
        "Do not run it: a model file is never a program.", raw=b"\x7fELF\x02\x01\x01" + bytes(9)
    ),
    "file-is-text": Example(_REDOWNLOAD, raw=b"root:x:0:0:root:/root:/bin/bash\n"),
    # -- header bytes -------------------------------------------------------------
    "header-not-utf8": Example(
        "Write the header as UTF-8 (json.dumps(...).encode('utf-8')).",
        raw=b'\x08\x00\x00\x00\x00\x00\x00\x00{"\xff":1}  ',
    ),
    "header-leading-bytes": Example("Start the header with '{'; put padding after the object.", header=" {}", data=0),
    "header-padding": Example("Pad with spaces (0x20) only.", header="{}\t"),
    "header-trailing-bytes": Example("Pad with spaces, never with NUL or other bytes.", header="{}\x00"),
    "json-syntax": Example("Write the header with a JSON library, not by hand.", header='{"a":}'),
    "json-depth": Example(
        "Keep metadata flat: the reference refuses the 128th nested container.",
        header='{"__metadata__":{},"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":'
        + "[" * 126
        + "]" * 126
        + "}}",
    ),
    "json-number": Example(
        "Write finite numbers within f64 range; NaN and Infinity are not JSON.",
        header='{"w":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":1e400}}',
    ),
    "json-string": Example(
        "Escape control characters and never write a lone surrogate.", header='{"__metadata__":{"a":"\\ud800"}}'
    ),
    "duplicate-field": Example(
        "Write each field of a tensor entry once.",
        header='{"w":{"dtype":"U8","dtype":"U8","shape":[1],"data_offsets":[0,1]}}',
        data=1,
    ),
    "duplicate-key": Example(
        "Give every tensor and metadata key one definition; readers disagree on which duplicate wins.",
        header='{"__metadata__":{"k":"1","k":"2"}}',
    ),
    # -- entries ------------------------------------------------------------------
    "header-not-object": Example("The header is one JSON object.", header="[]"),
    "metadata-invalid": Example(
        "Metadata values are strings: write str(value).", header='{"__metadata__":{"epoch":3}}'
    ),
    "metadata-null": Example(
        "Leave __metadata__ out, or write {}, instead of null (mlx writes null; every surveyed reader takes it "
        "as no metadata, so this is a portability warning).",
        header='{"__metadata__":null}',
    ),
    "tensor-entry-invalid": Example(
        "A tensor entry is an object with dtype, shape and data_offsets.", header='{"w":1}'
    ),
    "tensor-entry-array": Example(
        "Write each entry as an object, not as [dtype, shape, data_offsets].",
        header='{"w":["F32",[2],[0,8]]}',
        data=8,
    ),
    "tensor-field-missing": Example("Give dtype, shape and data_offsets.", header='{"w":{"dtype":"F32","shape":[2]}}'),
    "tensor-field-unknown": Example(
        "Move extra information into __metadata__.",
        header='{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"note":"x"}}',
        data=8,
    ),
    "dtype-unknown": Example(
        "Use one of the spec's dtype names, spelt exactly (F32, not float32).",
        header="{" + _t("float32", [2], 0, 8) + "}",
        data=8,
    ),
    "dtype-not-string": Example(
        'Write the dtype as a string, "F32".',
        header='{"w":{"dtype":{"F32":null},"shape":[2],"data_offsets":[0,8]}}',
        data=8,
    ),
    "shape-invalid": Example(
        "Shapes are arrays of non-negative integers without a fraction or exponent.",
        header='{"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}',
        data=8,
    ),
    "offsets-invalid": Example(
        "data_offsets is [begin, end], two non-negative integers.",
        header='{"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}}',
        data=8,
    ),
    "tensor-name-suspicious": Example(
        "Name tensors with printable characters only.",
        header="{" + _t("F32", [2], 0, 8, name="w\\u202egpj") + "}",
        data=8,
    ),
    # -- layout ---------------------------------------------------------------------
    "offsets-not-contiguous": Example(
        "Lay the tensors out back to back from offset 0, with no gap and no overlap.",
        header="{" + _t("U8", [1], 0, 1, "a") + "," + _t("U8", [1], 2, 3, "b") + "}",
        data=3,
    ),
    "offsets-reversed": Example(
        "end is begin plus the tensor's byte size.", header="{" + _t("U8", [0], 4, 0) + "}", data=4
    ),
    "size-overflow": Example(
        "The element count times the bit width must fit in 64 bits.",
        header="{" + _t("F32", [4294967296, 4294967296], 0, 8) + "}",
        data=8,
    ),
    "subbyte-misaligned": Example(
        "Give F4 and F6 tensors an element count that fills whole bytes.",
        header="{" + _t("F4", [3], 0, 2) + "}",
        data=2,
    ),
    "byte-length-mismatch": Example(
        "end - begin is the element count times the dtype's size.", header="{" + _t("F32", [2], 0, 4) + "}", data=4
    ),
    "buffer-trailing-bytes": Example("Cut the file after the last tensor's end.", header="{" + _W + "}", data=9),
    "buffer-truncated": Example("The file was cut short; fetch it again.", header="{" + _W + "}", data=7),
    "tensor-unaligned": Example(
        "Pad the header to a multiple of 8 so every tensor starts aligned.",
        header="{" + _t("F32", [1], 0, 4) + "}",
        data=4,
        pad=False,
    ),
    # -- index ----------------------------------------------------------------------
    "index-invalid": Example(
        "Write {'metadata': {'total_size': N}, 'weight_map': {tensor: shard}}.", text='{"weight_map": []}'
    ),
    "index-shard-path": Example(
        "Name each shard by a plain *.safetensors file name in the index's directory.",
        text='"weight_map": {"w": "../../etc/passwd"}, or a shard named ".git/config"',
    ),
    "index-shard-missing": Example(
        "Download every shard the index names.",
        text="the index names model-00002-of-00002.safetensors, which is absent",
    ),
    "index-shard-invalid": Example("Fix or fetch the shard again.", text="a shard fails validation (see its findings)"),
    "index-tensor-missing": Example(
        "Regenerate the index from the shards.", text="the index maps 'w' to a shard that does not hold 'w'"
    ),
    "index-tensor-unlisted": Example(
        "Regenerate the index from the shards.", text="a shard holds 'b', which the index does not list for it"
    ),
    "index-tensor-duplicated": Example("Keep each tensor in exactly one shard.", text="two shards both hold 'w'"),
    "index-total-size-mismatch": Example(
        "Set metadata.total_size to the sum of the tensors' byte sizes.",
        text='"total_size": 1000 for 16 bytes of tensors',
    ),
    "index-total-size-missing": Example(
        "Add metadata.total_size (the sum of the tensors' byte sizes) so the shards can be checked against it.",
        text='{"weight_map": {"w": "model-00001-of-00001.safetensors"}} with no "metadata"',
    ),
    "index-total-size-float": Example(
        "Write total_size as an integer (the sum of the tensors' byte sizes); loaders do not read it.",
        text='"total_size": 1068.0, as transformers 4.30 writes it',
    ),
    "index-tensor-tied": Example(
        "Drop the tied name from weight_map, or store it; nothing to do if your loader ties weights.",
        text='"lm_head.weight" listed in a shard that holds only "model.embed_tokens.weight"',
    ),
    "index-orphan-shard": Example(
        "Delete the stale shard, or save the checkpoint again into an empty folder.",
        text="model-00001-of-00099.safetensors beside an index of model-0000k-of-00002.safetensors shards",
    ),
    "index-beside-single-file": Example(
        "Keep one of the two: the single file or the sharded checkpoint.",
        text="model.safetensors beside model.safetensors.index.json",
    ),
    "index-key-missing": Example(
        "Add the tensor to the checkpoint.", text="an expected tensor name is not in the index"
    ),
    "index-key-unexpected": Example(
        "Remove the tensor, or expect it.", text="the index lists a tensor name that was not expected"
    ),
    # -- deep scan, integrity, policy ------------------------------------------------------
    "tensor-nan-inf": Example(
        "Find the training step that diverged; do not ship the checkpoint.",
        text="an F32 tensor holding 0x7fc00000 (NaN)",
    ),
    "tensor-all-zero": Example(
        "Check that the weights were written or gathered before the save; a zeroed weight matrix is "
        "a broken export (zero biases, norms, small tensors, LoRA B, ControlNet zero convolutions and "
        "adaLN modulation are not reported: they start at zero by design).",
        text="an F32 weight matrix of shape [64, 64] (16,384 bytes) that is all zero",
    ),
    "data-zero-tail": Example(
        "The download stopped and left preallocated zeros; fetch the file again.",
        text="the last 64 MiB of the data region are zero",
    ),
    "tensor-embedded-executable": Example(
        "Never unpickle, unzip or run a tensor's bytes; find out why the file carries them.",
        text="a U8 tensor whose bytes start with 80 04 95 (a pickle)",
    ),
    "metadata-suspicious": Example(
        "Keep metadata to plain, short text.", text='"__metadata__": {"path": "../../.ssh/authorized_keys"}'
    ),
    "checksum-mismatch": Example(
        "The file is not the one published; fetch it again and compare with a trusted digest.",
        text="sha256 of the file differs from the line in SHA256SUMS",
    ),
    "checksum-missing": Example(
        "Add the file's digest to the checksum list, from a trusted source.",
        text="--checksums SHA256SUMS has no line for the file",
    ),
    "checksum-file-missing": Example(
        "Fetch the missing file, or remove its line from the list.",
        text="SHA256SUMS lists model-00002.safetensors, which is not on disk",
    ),
    "scan-timeout": Example(
        "Scan the file alone to see what stalls (stcheck scan --deep FILE), or raise --timeout-per-file.",
        text="a file whose deep scan takes longer than --timeout-per-file 30",
    ),
    "download-incomplete": Example(
        "Resume or restart the download (huggingface-cli download), or delete the .incomplete blob.",
        text="models--org--name/blobs/<sha256>.incomplete in a hub cache",
    ),
    "policy-file-too-large": Example(
        "Raise max_file_size, or reject the file.", text='max_file_size = "1 GiB" for a 2 GiB file'
    ),
    "policy-header-too-large": Example(
        "Raise max_header_size, or reject the file.", text="max_header_size = 16 for a 96-byte header"
    ),
    "policy-too-many-tensors": Example(
        "Raise max_tensors, or reject the file.", text="max_tensors = 2 for a file of three tensors"
    ),
    "policy-dtype-forbidden": Example(
        "Convert the tensor, or allow its dtype in the policy.", text='forbidden_dtypes = ["F64"] and an F64 tensor'
    ),
    # -- folders: other files and links ---------------------------------------------------
    "pickle-file": Example(
        "Do not load it: it imports or calls code outside the weights-only allowlist (the message names the call). "
        "Use the safetensors copy when there is one, or get the weights from a source you trust.",
        text="model/training_args.bin, whose pickle calls os.system when torch.load unpickles it",
    ),
    "pickle-weights-only": Example(
        "Prefer the safetensors copy (load with use_safetensors=True); otherwise load it only with "
        "torch.load(weights_only=True), the default since torch 2.6.  A policy can make it an error "
        '(severity = "error") where pickles are banned, or silence it (ignore = true).',
        text="model/pytorch_model.bin, a torch.save state dict of tensors, beside model/model.safetensors",
    ),
    "custom-code": Example(
        "Read the code before passing trust_remote_code=True, or load without it.",
        text="model/modeling_custom.py, which from_pretrained(..., trust_remote_code=True) imports and runs",
    ),
    "keras-lambda-layer": Example(
        "Do not load it with keras.models.load_model(..., safe_mode=False) (nor with Keras 2, which has no safe "
        "mode); rebuild the layer in code, or use a safetensors copy of the weights.",
        text="model/tf_model.h5 whose model_config holds a Lambda layer with marshalled bytecode",
    ),
    "onnx-external-data-outside": Example(
        "Keep every external data file in the model's folder, named by a relative path without '..'.",
        text='model/model.onnx with an initializer whose external_data location is "../../home/user/.ssh/id_rsa"',
    ),
    "link-leaves-root": Example(
        "Copy the file into the folder, or check the folder the link points to by its own name.",
        text="model/model.safetensors -> /home/user/other/model.safetensors",
    ),
    "link-loop": Example(
        "Remove the link; each folder is walked once, so its files are reported once.",
        text="model/sub/up -> .. (a link back to a folder that holds it)",
    ),
    "policy-metadata-missing": Example(
        "Write the key into __metadata__ when saving.", text='required_metadata = ["format"] and no "format" key'
    ),
    # -- signed models (OpenSSF Model Signing) --------------------------------------------
    "signature-invalid": Example(
        "Get the publisher's own key or certificate chain; if it is the right one, the signature or the folder "
        "was tampered with: download the model again from its source.",
        text="stcheck scan model/ --public-key someone-else.pub (model/model.sig was signed with another key)",
    ),
    "signed-file-changed": Example(
        "Download the file again from the publisher and scan again; never load a file that differs from what "
        "was signed.",
        text="model/model.safetensors with one byte changed after `model_signing sign` wrote model/model.sig",
    ),
    "signed-file-missing": Example(
        "Download the missing file (an interrupted or partial download), or ask the publisher for a signature "
        "of what they ship.",
        text="model/tokenizer.json, listed in model/model.sig, deleted from the folder",
    ),
    "unsigned-file": Example(
        "Delete the file if you did not add it yourself; a file the publisher did not sign is not theirs.",
        text="model/modeling_evil.py added to a folder after model/model.sig was made",
    ),
    "signature-unsupported": Example(
        "Ask the publisher to sign with model_signing's sha256, blake2 or blake3 hashing, by files or by shards.",
        text="a model.sig whose serialization names hash_type 'md5'",
    ),
    "signature-not-verified": Example(
        "Verify it: stcheck scan DIR --public-key KEY.pem (or --certificate-chain CA.pem, or keyless "
        "--identity ID --issuer URL) with the publisher's key.",
        text="stcheck scan model/ of a folder holding model/model.sig, with no key given",
    ),
    "signature-missing": Example(
        "Ask the publisher for the signature (model.sig), or give its path with --signature PATH.",
        text="stcheck scan model/ --public-key publisher.pub of a folder with no model/model.sig",
    ),
}
