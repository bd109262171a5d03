# ruff: noqa: E501 - one recipe per line reads best as a table
# Strategy: the corpus as data.  Each recipe is a dict naming one file, what
# its header holds and how the file around the header is cut; generate.py
# turns recipes into bytes.  Names are {y,n,i}_<area>_<defect>; every n_
# recipe changes one thing in an otherwise valid file, so it tests one fault.
#
# Recipe keys (all optional except name, desc, source):
#   tensors   [(name, dtype, shape)]      entries laid out contiguously from 0
#   entries   [(key, value)]              entries written as given (after tensors);
#                                         repeated keys stay repeated
#   metadata  value of __metadata__ (written first when the key is present)
#   json      exact header text (str or bytes) instead of tensors/entries
#   raw       the whole file, verbatim
#   lead      bytes before the JSON; tail: bytes after the padding
#   pad       padding byte (default b" "); align: pad the header to a multiple
#             of this (default 8, 0 = no padding); header_size: pad to exactly N
#   n         length prefix to write instead of the real header length
#   data      data-region length (default: the end of the last tensor)
#   trailing  bytes appended after the data; truncate: bytes cut from the end
#   rules     rule slugs the strict profile reports (errors and warnings)
#   strict / reference   expected verdicts when they differ from the prefix's
#   large     True: ~100 MB, not committed; materialised on demand
#   source    where the case comes from: spec section, reference behaviour or
#             a public bug report
from __future__ import annotations

from typing import Any

# fmt: off

Recipe = dict[str, Any]

BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8,
    "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "I16": 16, "U16": 16, "F16": 16, "BF16": 16,
    "I32": 32, "U32": 32, "F32": 32, "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}
U64 = (1 << 64) - 1


class Raw:
    """A JSON token written verbatim."""

    def __init__(self, text: str) -> None:
        self.text = text


def spec(section: str) -> dict[str, str]:
    return {"kind": "spec", "ref": section}


def ref(behaviour: str) -> dict[str, str]:
    return {"kind": "reference", "ref": behaviour}


def report(where: str, what: str) -> dict[str, str]:
    return {"kind": "report", "ref": f"{where}: {what}"}


def T(dtype: object, shape: object, offsets: object) -> dict[str, object]:  # noqa: N802 - reads like a type
    return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


FORMAT = "safetensors README, Format"
W = [("w", "F32", [2, 2])]  # a valid 16-byte tensor, the base most n_ cases change

RECIPES: list[Recipe] = []


def add(name: str, desc: str, source: dict[str, str], rules: tuple[str, ...] = (), **kw: object) -> None:
    RECIPES.append({"name": name, "desc": desc, "source": source, "rules": list(rules), **kw})


# --- valid files: every dtype, scalars, zero-sized tensors ------------------
_SHAPES = {"F4": [2, 2], "F6_E2M3": [2, 4], "F6_E3M2": [2, 4]}
for _dt in BITS:
    add(f"y_dtype_{_dt.lower()}", f"one {_dt} tensor", spec(FORMAT + ": dtype"), tensors=[("t", _dt, _SHAPES.get(_dt, [2, 3]))])
for _dt in ("BOOL", "U8", "F8_E4M3", "BF16", "F32", "C64", "F64", "I64"):
    add(f"y_scalar_{_dt.lower()}", f"a {_dt} scalar, shape []", spec(FORMAT + ": shape [] is a scalar"), tensors=[("s", _dt, [])])
add("n_scalar_f4", "an F4 scalar: 4 bits do not fill a byte", ref("read_metadata: MisalignedSlice"), ("subbyte-misaligned",),
    entries=[("s", T("F4", [], [0, 1]))], data=1)
add("n_scalar_f6_e3m2", "an F6_E3M2 scalar: 6 bits do not fill a byte", ref("read_metadata: MisalignedSlice"), ("subbyte-misaligned",),
    entries=[("s", T("F6_E3M2", [], [0, 1]))], data=1)
add("y_zero_size_f32", "a zero-sized F32 tensor [0] at [0, 0]", ref("zero-sized tensors take [x, x]"), tensors=[("z", "F32", [0])])
add("y_zero_size_inner_dim", "shape [3, 0, 5]: zero elements", ref("zero-sized tensors take [x, x]"), tensors=[("z", "F32", [3, 0, 5])])
add("y_zero_size_f4", "a zero-sized F4 tensor: 0 bits are byte-aligned", ref("MisalignedSlice only for a partial byte"), tensors=[("z", "F4", [0])])
add("y_zero_size_between_tensors", "a zero-sized tensor between two others", ref("zero-sized tensors take [x, x]"),
    tensors=[("a", "F32", [2]), ("z", "F32", [0]), ("b", "F32", [2])])
add("y_zero_size_two_share_offset", "two zero-sized tensors at the same offset", ref("two zero-sized tensors may share an offset"),
    tensors=[("a", "F32", [2]), ("y", "I8", [0]), ("z", "F32", [0]), ("b", "F32", [2])])
add("y_zero_size_at_end", "a zero-sized tensor at the end of the data", ref("zero-sized tensors take [x, x]"),
    tensors=[("a", "F32", [2]), ("z", "U8", [0])])
add("y_zero_size_only", "the only tensor is zero-sized; no data region", ref("zero-sized tensors take [x, x]"), tensors=[("z", "F64", [0, 4])])
add("y_shape_zero_before_huge", "shape [0, 2^63, 4]: the running product stays 0, no overflow", ref("element count is a checked product in shape order"),
    entries=[("z", T("F32", [0, 1 << 63, 4], [0, 0]))])
add("y_shape_rank_8", "an 8-dimensional tensor of ones", spec(FORMAT + ": shape"), tensors=[("t", "U8", [1, 1, 2, 1, 1, 3, 1, 1])])
add("y_subbyte_f4_even", "two F4 values fill one byte", spec(FORMAT + ": F4"), tensors=[("t", "F4", [2])])
add("y_subbyte_f6_four_values", "four F6_E2M3 values fill three bytes", spec(FORMAT + ": F6"), tensors=[("t", "F6_E2M3", [4])])

# --- valid files: the file as a whole ---------------------------------------
add("y_file_empty_header", "header {} padded to 8 bytes, no tensors, no data", spec(FORMAT), json="{}")
add("y_file_empty_header_unpadded", "header {} of 2 bytes: valid, the data region starts unaligned", spec(FORMAT), ("header-unaligned",),
    json="{}", align=0)
add("y_file_two_tensors_with_metadata", "two tensors and string metadata", spec(FORMAT),
    metadata={"format": "pt", "note": "hello"}, tensors=[("a", "F32", [2, 2]), ("b", "I64", [3])])
add("y_file_entries_not_in_offset_order", "header lists tensors in a different order from their offsets", ref("tensors are sorted by offsets before checking"),
    entries=[("b", T("F32", [2], [8, 16])), ("a", T("F32", [2], [0, 8]))])
add("y_file_many_tensors", "1000 small tensors", spec(FORMAT), tensors=[(f"layer.{i}.weight", "F16", [2, 2]) for i in range(1000)])
add("y_file_pretty_printed_header", "whitespace and newlines between JSON tokens", ref("serde_json accepts JSON whitespace inside the value"),
    json='{\n  "w": {\n    "dtype": "F32",\n    "shape": [2, 2],\n    "data_offsets": [0, 16]\n  }\n}', data=16)
add("y_file_unknown_metadata_keys", "metadata with many keys", spec(FORMAT + ": __metadata__"),
    metadata={f"key{i}": f"value{i}" for i in range(20)}, tensors=W)
add("y_file_metadata_only", "__metadata__ and no tensors", spec(FORMAT + ": __metadata__"), metadata={"format": "pt"})
add("y_file_metadata_empty_object", "__metadata__ is {}", spec(FORMAT + ": __metadata__"), metadata={}, tensors=W)
add("y_file_metadata_empty_key_and_value", "a metadata entry with an empty key and value", spec(FORMAT + ": __metadata__"), metadata={"": ""}, tensors=W)
add("y_file_metadata_unicode", "non-ASCII metadata keys and values", spec(FORMAT + ": UTF-8 header"), metadata={"auteur": "Zoë", "說明": "模型"}, tensors=W)
add("y_file_metadata_escapes", "escaped characters in a metadata value", ref("serde_json string escapes"),
    json='{"__metadata__":{"k":"line\\nbreak \\"quoted\\" \\u00e9 \\/ \\\\"},"w":' + '{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', data=16)
add("y_file_spaces_inside_arrays", "spaces inside the shape and data_offsets arrays", ref("serde_json whitespace"),
    json='{"w":{"dtype":"F32","shape":[ 2 , 2 ],"data_offsets":[ 0 , 16 ]}}', data=16)
add("y_file_field_order_reversed", "tensor fields in the order data_offsets, shape, dtype", ref("serde reads struct fields in any order"),
    json='{"w":{"data_offsets":[0,16],"shape":[2,2],"dtype":"F32"}}', data=16)
add("y_file_tensor_unaligned_warning", "an F32 tensor after 3 bytes of U8 starts unaligned: a warning only",
    spec(FORMAT + ": alignment is advisory"), ("tensor-unaligned",), tensors=[("a", "U8", [3]), ("b", "F32", [2])])
add("y_file_large_tensor_64k", "one 64 KiB tensor", spec(FORMAT), tensors=[("big", "U8", [256, 256])])

# --- header padding and size boundaries -------------------------------------
for _j in range(8):
    _json = '{"w' + "x" * _j + '":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}'
    _pad = (-len(_json)) % 8
    add(f"y_padding_{_pad}_spaces", f"JSON of {len(_json)} bytes padded with {_pad} spaces to a multiple of 8",
        spec(FORMAT + ": the header MAY be padded with 0x20"), json=_json, data=16)
add("y_padding_extra_64_spaces", "64 more spaces than alignment needs", spec(FORMAT + ": the header MAY be padded with 0x20"),
    tensors=W, tail=b" " * 64)
add("y_header_size_8", "header of exactly 8 bytes", spec(FORMAT), json="{}", header_size=8)
def _sized(size: int) -> str:
    """A valid header whose JSON is exactly ``size`` bytes (a long metadata value)."""
    shell = '{"__metadata__":{"pad":"%s"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}'
    return shell % ("p" * (size - len(shell) + 2))


for _size in (99_992, 100_000, 100_008):
    add(f"y_header_size_{_size}", f"header of exactly {_size:,} bytes of JSON, no padding", report("bug class", "headers near 100,000 bytes"),
        json=_sized(_size), data=16)
add("y_header_size_100000000", "header of exactly 100,000,000 bytes, the reference's limit (large: not committed)",
    ref("read_metadata: N > 100,000,000 is HeaderTooLarge, N = 100,000,000 passes"),
    json='{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', data=16, header_size=100_000_000, large=True)
add("n_header_size_100000008", "header of 100,000,008 real bytes, over the limit (large: not committed)",
    ref("read_metadata: HeaderTooLarge"), ("header-too-large",),
    json='{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', data=16, header_size=100_000_008, large=True)

# --- unicode and unusual tensor names ---------------------------------------
add("y_name_cjk", "a tensor named in CJK characters", spec(FORMAT + ": UTF-8 header"), tensors=[("權重", "F32", [2])])
add("y_name_emoji", "a tensor named with an emoji (4-byte UTF-8)", spec(FORMAT + ": UTF-8 header"), tensors=[("w🙂", "F32", [2])])
add("y_name_combining_marks", "a name with combining marks, not NFC-normalised", spec(FORMAT + ": UTF-8 header"), tensors=[("e\u0301", "F32", [2])])
add("y_name_escaped_surrogate_pair", "a name written as an escaped surrogate pair", ref("serde_json \\u escapes"),
    json='{"\\ud83d\\ude00":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', data=8)
add("y_name_escaped_ascii", "a name written with \\u escapes for ASCII letters", ref("serde_json \\u escapes"),
    json='{"\\u0077":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', data=8)
add("y_name_dotted_path", "a long dotted module path", spec(FORMAT), tensors=[("model.layers.31.self_attn.q_proj.weight", "BF16", [2, 2])])
add("y_name_long_4096", "a tensor name of 4096 characters", spec(FORMAT), tensors=[("n" * 4096, "U8", [1])])
add("y_name_metadata_lookalike", "a tensor named __metadata___ (not the reserved key)", report("safetensors/safetensors#849", "reserved __metadata__ name"),
    tensors=[("__metadata___", "F32", [2])])
add("y_name_empty_string", "a tensor with the empty name: accepted, warned", ref("an empty tensor name is accepted"), ("tensor-name-suspicious",),
    tensors=[("", "F32", [2])])
add("y_name_nul_escape", "a name holding an escaped NUL: accepted, warned", report("safetensors/safetensors#750", "null bytes in tensor names"),
    ("tensor-name-suspicious",), json='{"a\\u0000b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', data=8)
add("y_name_bidi_override", "a name with a right-to-left override: accepted, warned", spec("Unicode bidi controls (Trojan Source)"),
    ("tensor-name-suspicious",), tensors=[("weight\u202egpj.exe", "F32", [2])])

# --- length prefix -------------------------------------------------------------
add("n_prefix_empty_file", "a zero-byte file", ref("read_metadata: HeaderTooSmall"), ("file-too-small",), raw=b"")
add("n_prefix_7_bytes", "7 bytes, one short of the length prefix", ref("read_metadata: HeaderTooSmall"), ("file-too-small",), raw=b"\x02\x00\x00\x00\x00\x00\x00")
add("n_prefix_zero_length_header", "N = 0: the header is empty", ref("serde_json: EOF while parsing"), ("json-syntax",), raw=b"\x00" * 8)
add("n_prefix_length_beyond_file", "N = 4096 on a 72-byte file", report("bug class", "a header length beyond the file"),
    ("header-length-exceeds-file",), tensors=W, n=4096)
add("n_prefix_length_one_past_file", "N is one more than the bytes after the prefix", ref("read_metadata: InvalidHeaderLength"),
    ("header-length-exceeds-file",), json="{}", n=9)
add("n_prefix_length_100000000_short_file", "N = 100,000,000 on a short file: passes the limit, fails the length",
    ref("read_metadata: N = 100,000,000 passes step 2, fails step 3"), ("header-length-exceeds-file",), tensors=W, n=100_000_000)
add("n_prefix_length_100000001_short_file", "N = 100,000,001 on a short file", ref("read_metadata: HeaderTooLarge before the file length"),
    ("header-too-large",), tensors=W, n=100_000_001)
add("n_prefix_length_2pow63", "N = 2^63", report("ztxz16/fastllm#712", "header length can wrap"), ("header-too-large",), tensors=W, n=1 << 63)
add("n_prefix_length_u64_max", "N = 2^64 - 1: 8 + N wraps to 7", report("google-ai-edge/LiteRT#9255", "integer overflow in header length"),
    ("header-too-large",), tensors=W, n=U64)
add("n_prefix_length_big_endian", "the length prefix written big-endian", spec(FORMAT + ": little-endian u64"), ("header-too-large",),
    raw=(64).to_bytes(8, "big") + b'{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}      ' + bytes(16))
add("n_prefix_length_short_by_one", "N is one less than the header: the last '}' falls into the data", ref("serde_json: EOF while parsing"),
    ("json-syntax",), json='{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', align=0,
    n=len('{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}') - 1, data=16)

# --- not a safetensors file at all (ST111-ST124) -------------------------------------
# Each fails the length prefix, as the reference sees it, and is named by
# format in a second finding.  The bytes are written out (or built with a
# fixed ZIP timestamp) so that regenerating the corpus gives the same files.
def _zip(members: list[tuple[str, bytes]]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return buf.getvalue()


_PICKLE4 = b"\x80\x04\x95\x1e\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01w\x94]\x94(G\x00\x00\x00\x00\x00\x00\x00\x00G\x00\x00\x00\x00\x00\x00\x00\x00es."
_NPY = b"\x93NUMPY\x01\x00v\x00" + b"{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }".ljust(117) + b"\n" + bytes(8)
_FOREIGN = "a file of another format named .safetensors"
add("n_format_pickle_protocol_4", "a Python pickle (protocol 4) of {'w': [0.0, 0.0]}", report("bug class", _FOREIGN),
    ("file-is-pickle",), raw=_PICKLE4)
add("n_format_pickle_protocol_0", "a Python pickle (protocol 0, text) of {'w': [0.0, 0.0]}", report("bug class", _FOREIGN),
    ("file-is-pickle",), raw=b"(dp0\nVw\np1\n(lp2\nF0.0\naF0.0\nas.")
add("n_format_pytorch_zip", "a torch.save-style ZIP archive holding archive/data.pkl", report("bug class", _FOREIGN),
    ("file-is-pytorch-zip",), raw=_zip([("archive/data.pkl", _PICKLE4), ("archive/version", b"3\n")]))
add("n_format_zip", "a ZIP archive of one text file", report("bug class", _FOREIGN),
    ("file-is-zip",), raw=_zip([("readme.txt", b"not a model\n")]))
add("n_format_numpy_npy", "a NumPy .npy array of two float32 zeros", report("bug class", _FOREIGN),
    ("file-is-numpy",), raw=_NPY)
add("n_format_numpy_npz", "a NumPy .npz archive holding w.npy", report("bug class", _FOREIGN),
    ("file-is-numpy",), raw=_zip([("w.npy", _NPY)]))
add("n_format_git_lfs_pointer", "a Git LFS pointer: the clone ran without git lfs pull", report("bug class", _FOREIGN),
    ("file-is-git-lfs-pointer",),
    raw=b"version https://git-lfs.github.com/spec/v1\noid sha256:" + b"0" * 64 + b"\nsize 88\n")
add("n_format_html_error_page", "an HTML error page saved by a failed download", report("bug class", _FOREIGN),
    ("file-is-html",), raw=b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head><body>Not Found</body></html>\n")
add("n_format_xml_error", "an S3-style XML error response", report("bug class", _FOREIGN),
    ("file-is-xml",), raw=b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>\n')
add("n_format_json_index", "a sharded checkpoint's model.safetensors.index.json", report("bug class", _FOREIGN),
    ("file-is-json",), raw=b'{\n  "metadata": {"total_size": 16},\n  "weight_map": {"w": "model-00001-of-00001.safetensors"}\n}\n')
add("n_format_gguf", "a GGUF file header (version 3, no tensors)", report("bug class", _FOREIGN),
    ("file-is-gguf",), raw=b"GGUF\x03\x00\x00\x00" + bytes(16))
add("n_format_hdf5", "the HDF5 signature and an empty superblock", report("bug class", _FOREIGN),
    ("file-is-hdf5",), raw=b"\x89HDF\r\n\x1a\n" + bytes(88))
add("n_format_tflite", "a TensorFlow Lite flatbuffer's identifier", report("bug class", _FOREIGN),
    ("file-is-tflite",), raw=b"\x1c\x00\x00\x00TFL3" + bytes(24))
add("n_format_gzip", "a gzip stream (mtime 0): N = 559903 runs past the file", report("bug class", _FOREIGN),
    ("file-is-archive",),
    raw=b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xabV*W\xb2R\x886\xd03\xd0Q\x00\x12\xb1\xb5\\\x00\xea\xae\xba\x8e\x12\x00\x00\x00")
add("n_format_elf", "the start of an ELF executable", report("bug class", _FOREIGN),
    ("file-is-executable",), raw=b"\x7fELF\x02\x01\x01\x00" + bytes(56))
add("n_format_text", "a line of /etc/passwd: text, not a length prefix", report("bug class", _FOREIGN),
    ("file-is-text",), raw=b"root:x:0:0:root:/root:/bin/bash\n")

# --- header bytes: UTF-8 --------------------------------------------------------
_META = '{"__metadata__":{"k":"%s"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}'
for _name, _bad, _what in (
    ("invalid_byte_ff", b"\xff", "byte 0xFF"),
    ("overlong_slash", b"\xc0\xaf", "an overlong encoding of '/'"),
    ("encoded_surrogate", b"\xed\xa0\x80", "a UTF-8-encoded surrogate"),
    ("truncated_sequence", b"\xe2\x82", "a truncated 3-byte sequence"),
    ("continuation_alone", b"\x80", "a lone continuation byte"),
    ("latin1_e_acute", b"\xe9", "Latin-1 e-acute"),
):
    add(f"n_utf8_{_name}", f"{_what} inside a metadata value", ref("read_metadata: InvalidHeader (UTF-8)"), ("header-not-utf8",),
        json=(_META % "X").encode().replace(b"X", _bad), data=16)
add("n_utf8_bom", "a UTF-8 byte-order mark before '{'", ref("serde_json rejects a BOM"), ("json-syntax",),
    tensors=W, lead=b"\xef\xbb\xbf")

# --- header bytes: leading bytes and padding ----------------------------------
add("i_header_leading_space", "a space before '{'", spec(FORMAT + ": the header MUST begin with '{'; the reference skips whitespace"),
    ("header-leading-bytes",), tensors=W, lead=b" ")
add("i_header_leading_newline", "a newline before '{'", spec(FORMAT + ": the header MUST begin with '{'; the reference skips whitespace"),
    ("header-leading-bytes",), tensors=W, lead=b"\n")
add("i_header_leading_tabs_8", "eight tabs before '{'", spec(FORMAT + ": the header MUST begin with '{'; the reference skips whitespace"),
    ("header-leading-bytes",), tensors=W, lead=b"\t" * 8)
for _name, _byte in (("tab", b"\t"), ("newline", b"\n"), ("cr", b"\r")):
    add(f"i_padding_{_name}", f"header padded with {_name} bytes instead of spaces", spec(FORMAT + ": padding is 0x20; the reference accepts any JSON whitespace"),
        ("header-padding",), tensors=W, tail=_byte * 8)
add("i_padding_mixed_whitespace", "padding of spaces then one tab", spec(FORMAT + ": padding is 0x20; the reference accepts any JSON whitespace"),
    ("header-padding",), tensors=W, tail=b"       \t")
add("n_padding_nul", "header padded with NUL bytes", report("ruvnet/RuView#1522", "NUL-padded header"), ("header-trailing-bytes",),
    json='{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', pad=b"\x00", data=16)
add("n_padding_nul_then_spaces", "one NUL, then spaces", report("ruvnet/RuView#1522", "NUL-padded header"), ("header-trailing-bytes",),
    tensors=W, tail=b"\x00       ")
add("n_padding_spaces_then_nul", "spaces, then a NUL as the last header byte", report("ruvnet/RuView#1522", "NUL-padded header"),
    ("header-trailing-bytes",), tensors=W, tail=b"       \x00")
add("n_padding_nul_hides_json", "NUL padding followed by a second JSON object", spec(FORMAT + ": one JSON object, then padding"),
    ("header-trailing-bytes",), tensors=W, tail=b'\x00{"x":1}')
add("n_header_trailing_garbage", "a letter after the JSON object", ref("serde_json: trailing characters"), ("header-trailing-bytes",),
    tensors=W, tail=b"x       ")
add("n_header_two_objects", "two JSON objects back to back", ref("serde_json: trailing characters"), ("header-trailing-bytes",),
    tensors=W, tail=b"{}      ")
add("n_header_form_feed_padding", "padding with form feed, which JSON does not count as whitespace", ref("serde_json whitespace is space, tab, LF, CR"),
    ("header-trailing-bytes",), tensors=W, tail=b"\x0c" * 8)
add("n_header_nbsp_padding", "padding with U+00A0 no-break spaces", ref("serde_json whitespace is space, tab, LF, CR"),
    ("header-trailing-bytes",), tensors=W, tail="\u00a0".encode() * 4)

# --- JSON syntax ----------------------------------------------------------------
for _name, _json, _what in (
    ("empty_header_spaces", "        ", "a header of eight spaces"),
    ("unterminated_object", '{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}', "a missing closing brace"),
    ("trailing_comma", '{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},}', "a trailing comma in the header object"),
    ("trailing_comma_array", '{"w":{"dtype":"F32","shape":[2,2,],"data_offsets":[0,16]}}', "a trailing comma in shape"),
    ("single_quotes", "{'w':{'dtype':'F32','shape':[2,2],'data_offsets':[0,16]}}", "single-quoted strings"),
    ("comment", '{/*c*/"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', "a /* */ comment"),
    ("missing_colon", '{"w" {"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', "a missing colon"),
    ("unquoted_key", '{w:{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', "an unquoted key"),
    ("number_plus_sign", '{"w":{"dtype":"F32","shape":[+2,2],"data_offsets":[0,16]}}', "a '+' sign on a number"),
    ("unterminated_string", '{"w', "an unterminated string"),
    ("truth_typo", '{"__metadata__":tru}', "the literal 'tru'"),
):
    add(f"n_json_{_name}", f"header JSON with {_what}", ref("serde_json syntax error: InvalidHeaderDeserialization"), ("json-syntax",),
        json=_json, data=16 if "16" in _json else 0)
for _name, _tok, _what, _slug in (
    ("nan_in_shape", "NaN", "NaN", "json-number"),
    ("infinity_in_offsets", "Infinity", "Infinity", "json-number"),
    ("leading_zero", "02", "a leading zero", "json-number"),
    ("huge_exponent", "1e999", "a float that overflows f64", "json-number"),
    ("digits_5000", "1" * 5000, "an integer of 5000 digits", "json-number"),
    ("hex", "0x2", "a hex literal", "json-syntax"),
):
    _shape = f"[{_tok},2]" if "offsets" not in _name else "[2,2]"
    _offs = f"[0,{_tok}]" if "offsets" in _name else "[0,16]"
    add(f"n_json_number_{_name}", f"{_what} in a tensor field", ref("serde_json number grammar"), (_slug,),
        json='{"w":{"dtype":"F32","shape":' + _shape + ',"data_offsets":' + _offs + "}}", data=16)
for _name, _text, _what in (
    ("control_char", '"a\x01b"', "a raw U+0001 control character"),
    ("raw_tab", '"a\tb"', "a raw tab"),
    ("lone_high_surrogate", '"\\ud800"', "a lone high surrogate escape"),
    ("lone_low_surrogate", '"\\udc00x"', "a lone low surrogate escape"),
    ("reversed_surrogates", '"\\udc00\\ud800"', "surrogate escapes in the wrong order"),
    ("bad_escape", '"a\\xb"', "the escape \\x"),
    ("short_unicode_escape", '"a\\u12"', "a \\u escape with two hex digits"),
):
    add(f"n_json_string_{_name}", f"tensor name with {_what}", ref("serde_json string grammar"), ("json-string",),
        json="{" + _text + ':{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', data=16)

# Nesting: the header object is level 1 and the tensor entry level 2; serde_json
# refuses the 128th level.  Only an unknown field can hold nested values, and
# unknown fields are strict-only findings, so the accepted case is an i_ file.
def _deep(levels: int) -> str:
    arrays = levels - 2
    return '{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16],"x":' + "[" * arrays + "]" * arrays + "}}"


add("i_json_depth_127", "127 nesting levels, the most serde_json allows (in an unknown field)", ref("serde_json recursion limit 128"),
    ("tensor-field-unknown",), json=_deep(127), data=16)
add("n_json_depth_128", "128 nesting levels, one past serde_json's limit", ref("serde_json recursion limit 128"), ("json-depth",),
    json=_deep(128), data=16)
add("n_json_depth_5000_arrays", "a header of 5000 nested arrays", ref("serde_json recursion limit 128"), ("json-depth",),
    json="[" * 5000 + "]" * 5000)
add("n_json_depth_20000_objects", "20,000 nested objects inside an unknown field", ref("serde_json recursion limit 128"),
    ("json-depth",), json='{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16],"x":' + '{"a":' * 20_000 + "1" + "}" * 20_002, data=16)

# --- header object, metadata -----------------------------------------------------
for _name, _json in (("array", "[]"), ("string", '"w"'), ("null", "null"), ("number", "8"), ("true", "true")):
    add(f"n_header_not_object_{_name}", f"the header is a JSON {_name}", ref("serde: expected a map"), ("header-not-object",), json=_json)
add("i_metadata_null", "__metadata__ is null, as mlx writes it", ref("Option<HashMap>: null reads as absent"), ("metadata-null",), metadata=None, tensors=W,
    strict="accept")  # a warning: mlx writes it, every surveyed loader reads it
for _name, _val in (("number", 1), ("true", True), ("array", ["a"]), ("string", "pt")):
    add(f"n_metadata_is_{_name}", f"__metadata__ is a JSON {_name}", ref("serde: __metadata__ is a map of strings"), ("metadata-invalid",),
        metadata=_val, tensors=W)
for _name, _val in (("number", 1), ("null", None), ("object", {"a": "b"}), ("array", ["x"]), ("bool", False)):
    add(f"n_metadata_value_{_name}", f"a metadata value that is a JSON {_name}", ref("serde: metadata values are strings"), ("metadata-invalid",),
        metadata={"format": "pt", "bad": _val}, tensors=W)
add("n_metadata_twice", "__metadata__ appears twice", ref("serde: duplicate field `__metadata__`"), ("duplicate-field",),
    entries=[("__metadata__", {"a": "1"}), ("__metadata__", {"b": "2"}), ("w", T("F32", [2, 2], [0, 16]))])
add("i_metadata_duplicate_key", "a key repeated inside __metadata__; the last value wins", spec(FORMAT + ": duplicate keys are disallowed; the reference keeps the last"),
    ("duplicate-key",), json='{"__metadata__":{"k":"1","k":"2"},"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}', data=16)
add("y_name_metadata_not_first", "__metadata__ after the tensors", spec(FORMAT + ": __metadata__ may appear anywhere in the object"),
    entries=[("w", T("F32", [2, 2], [0, 16])), ("__metadata__", {"format": "pt"})])

# --- duplicate tensor names and fields ---------------------------------------------
add("i_dup_tensor_identical", "the same tensor entry twice", report("safetensors/safetensors#401", "duplicate keys in the header"),
    ("duplicate-key",), entries=[("w", T("F32", [2, 2], [0, 16])), ("w", T("F32", [2, 2], [0, 16]))])
add("i_dup_tensor_redefines_dtype", "a duplicate name that redefines the dtype over the same bytes", report("bug class", "duplicate names that redefine a dtype"),
    ("duplicate-key",), entries=[("w", T("F32", [2, 2], [0, 16])), ("w", T("I32", [4], [0, 16]))])
add("i_dup_tensor_redefines_shape", "a duplicate name that redefines the shape over the same bytes", report("bug class", "duplicate names"),
    ("duplicate-key",), entries=[("w", T("F32", [2, 2], [0, 16])), ("w", T("F32", [4], [0, 16]))])
add("n_dup_tensor_leaves_hole", "a duplicate name moves the tensor, leaving its first range unindexed", report("safetensors/safetensors#401", "duplicate keys"),
    ("duplicate-key", "offsets-not-contiguous"), entries=[("w", T("F32", [2, 2], [0, 16])), ("v", T("F32", [2, 2], [16, 32])), ("w", T("F32", [2, 2], [32, 48]))])
for _field, _val in (("dtype", "I32"), ("shape", [4]), ("data_offsets", [0, 16])):
    add(f"n_dup_field_{_field}", f"the field {_field} twice in one tensor entry", ref("serde: duplicate field"), ("duplicate-field",),
        json='{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16],' + f'"{_field}":' + __import__("json").dumps(_val) + "}}", data=16)

# --- tensor entries ---------------------------------------------------------------
add("i_entry_array_form", "a tensor entry written as [dtype, shape, offsets]", ref("serde reads a struct from a sequence"), ("tensor-entry-array",),
    entries=[("w", ["F32", [2, 2], [0, 16]])], data=16)
add("n_entry_array_two_items", "a tensor entry written as an array of two items", ref("serde: invalid length"),
    ("tensor-entry-array", "tensor-entry-invalid"), entries=[("w", ["F32", [2, 2]])], data=16)
for _name, _val in (("string", "F32"), ("null", None), ("number", 16), ("true", True)):
    add(f"n_entry_is_{_name}", f"a tensor entry that is a JSON {_name}", ref("serde: expected struct TensorInfo"), ("tensor-entry-invalid",),
        entries=[("w", _val)])
add("n_entry_empty_object", "a tensor entry {}", ref("serde: missing field"), ("tensor-field-missing",), entries=[("w", {})])
add("n_entry_missing_dtype", "a tensor entry without dtype", ref("serde: missing field `dtype`"), ("tensor-field-missing",),
    entries=[("w", {"shape": [2, 2], "data_offsets": [0, 16]})], data=16)
add("n_entry_missing_shape", "a tensor entry without shape", ref("serde: missing field `shape`"), ("tensor-field-missing",),
    entries=[("w", {"dtype": "F32", "data_offsets": [0, 16]})], data=16)
add("n_entry_missing_data_offsets", "a tensor entry without data_offsets", report("bug class", "data_offsets missing"), ("tensor-field-missing",),
    entries=[("w", {"dtype": "F32", "shape": [2, 2]})], data=16)
add("i_entry_unknown_field", "a tensor entry with an extra field", ref("serde ignores unknown fields"), ("tensor-field-unknown",),
    entries=[("w", {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16], "quant": "none"})])
add("i_entry_unknown_field_null", "an extra field whose value is null", ref("serde ignores unknown fields"), ("tensor-field-unknown",),
    entries=[("w", {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16], "extra": None})])
# serde_json 1.x without float_roundtrip computes a float as a u64
# significand times a power of ten, not correctly rounded: some numbers just
# below f64::MAX come out infinite there ("number out of range") although
# they round to f64::MAX correctly.  An unknown field holds them, so only the
# number decides.
add("n_json_number_rounds_to_infinity", "1.7976931348623158e308 in an unknown field: serde_json's product overflows",
    ref("serde_json f64_from_parts: number out of range"), ("json-number",),
    entries=[("w", {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16], "scale": Raw("1.7976931348623158e308")})], data=16)
add("i_json_number_f64_max", "f64::MAX, 1.7976931348623157e308, in an unknown field", ref("serde_json f64_from_parts: finite"),
    ("tensor-field-unknown",),
    entries=[("w", {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16], "scale": Raw("1.7976931348623157e308")})], data=16)
add("i_dtype_unit_variant_object", 'dtype written as {"F32": null}', ref("serde reads a unit variant from a one-key map"), ("dtype-not-string",),
    entries=[("w", T({"F32": None}, [2, 2], [0, 16]))])
for _name, _val, _what in (
    ("f128", "F128", "F128"),
    ("lowercase", "f32", "lowercase f32"),
    ("empty", "", "the empty string"),
    ("fp32_alias", "float32", "the numpy name float32"),
    ("trailing_space", "F32 ", "'F32 ' with a space"),
    ("f8_generic", "F8", "F8 without a variant"),
    ("i4", "I4", "I4, not in the spec"),
    ("number", 7, "the number 7"),
    ("null", None, "null"),
    ("array", ["F32"], "an array"),
    ("object_unknown_variant", {"F128": None}, 'the object {"F128": null}'),
):
    add(f"n_dtype_{_name}", f"dtype is {_what}", report("kekzl/imp#1603", "unknown dtype skips validation") if _name == "f128" else ref("serde: unknown variant"),
        ("dtype-unknown",), entries=[("w", T(_val, [2, 2], [0, 16]))])
for _name, _val, _what in (
    ("negative_dim", [Raw("-2"), 2], "a negative dimension"),
    ("float_dim", [Raw("2.0"), 2], "2.0"),
    ("exponent_dim", [Raw("2e0"), 2], "2e0"),
    ("negative_zero_dim", [Raw("-0"), 2], "-0"),
    ("dim_2pow64", [Raw(str(1 << 64)), 2], "a dimension of 2^64"),
    ("string_dim", ["2", 2], "a string dimension"),
    ("null_dim", [None, 2], "a null dimension"),
    ("nested", [[2, 2]], "a nested array"),
    ("not_array", 4, "a number"),
    ("null", None, "null"),
):
    add(f"n_shape_{_name}", f"shape holds {_what}", ref("serde: shape is Vec<usize>"), ("shape-invalid",),
        entries=[("w", T("F32", _val, [0, 16]))])
for _name, _val, _what, _src in (
    ("negative_begin", [Raw("-8"), 8], "a negative begin", report("0xShug0/audio.cpp#138", "negative data_offsets")),
    ("negative_end", [0, Raw("-16")], "a negative end", report("gomlx/go-huggingface#57", "negative start")),
    ("negative_both", [Raw("-24"), Raw("-8")], "a negative range inside the header", report("bug class", "data_offsets negative")),
    ("one_element", [16], "one element", report("ml-explore/mlx#3363", "entry count not validated")),
    ("three_elements", [0, 16, 32], "three elements", report("ml-explore/mlx#3363", "entry count not validated")),
    ("empty_array", [], "no elements", report("bug class", "data_offsets with too few elements")),
    ("strings", ["0", "16"], "strings", ref("serde: data_offsets is (usize, usize)")),
    ("float_end", [0, Raw("16.0")], "16.0", ref("serde: an integer with a fraction is a float")),
    ("end_2pow64", [0, Raw(str(1 << 64))], "2^64, one past u64", ref("serde: integers above u64 are floats")),
    ("null", None, "null", ref("serde: data_offsets is (usize, usize)")),
    ("object", {"begin": 0, "end": 16}, "an object", ref("serde: data_offsets is (usize, usize)")),
):
    add(f"n_offsets_{_name}", f"data_offsets with {_what}", _src, ("offsets-invalid",), entries=[("w", T("F32", [2, 2], _val))], data=16)

# --- layout of the data region ------------------------------------------------------
add("n_offsets_reversed", "data_offsets [16, 0]", report("0xShug0/audio.cpp#138", "data_end < data_begin"), ("offsets-reversed",),
    entries=[("w", T("F32", [2, 2], [16, 0]))], data=16)
add("n_offsets_wrap_begin_near_u64_max", "begin = 2^64 - 8, end = 8: end - begin wraps to 16", report("bug class", "data_offsets wrapping mod 2^64"),
    ("offsets-reversed", "buffer-truncated"), entries=[("w", T("F32", [2, 2], [U64 - 7, 8]))], data=16)
add("n_offsets_wrap_end_u64_max", "[2^64 - 17, 2^64 - 1]: the absolute offsets wrap mod 2^64 into the header",
    report("bug class", "data_offsets wrapping mod 2^64"), ("offsets-not-contiguous", "buffer-truncated"),
    entries=[("w", T("U8", [16], [U64 - 16, U64]))], data=16)
add("n_offsets_wrap_to_prefix", "begin = 2^64 - 8 - N: 8 + N + begin wraps to 0, the length prefix", report("bug class", "data_offsets wrapping mod 2^64"),
    ("offsets-not-contiguous", "buffer-truncated"), entries=[("w", T("U8", [8], [U64 + 1 - 8 - 128, U64 + 1 - 128]))], data=8, header_size=128)
add("n_offsets_wrap_to_header", "begin = 2^64 - N: 8 + N + begin wraps to 8, the start of the header", report("bug class", "data_offsets wrapping mod 2^64"),
    ("offsets-not-contiguous", "buffer-truncated"), entries=[("w", T("U8", [8], [U64 + 1 - 128, U64 + 1 - 120]))], data=8, header_size=128)
add("n_offsets_beyond_file", "a tensor whose range ends past the file", report("ml-explore/mlx#3409", "offsets not validated against file size"),
    ("buffer-truncated",), entries=[("w", T("F32", [1000], [0, 4000]))], data=16)
add("n_offsets_begin_huge", "a tensor at [2^62, 2^62 + 16]", report("gomlx/go-huggingface#57", "offsets far beyond the buffer"),
    ("offsets-not-contiguous", "buffer-truncated"), entries=[("w", T("F32", [2, 2], [1 << 62, (1 << 62) + 16]))], data=16)
add("n_layout_hole_at_start", "the only tensor starts at 16, leaving bytes 0..16 unindexed", spec(FORMAT + ": the byte buffer cannot contain holes"),
    ("offsets-not-contiguous",), entries=[("w", T("F32", [2, 2], [16, 32]))], data=32)
add("n_layout_hole_between", "8 unindexed bytes between two tensors", spec(FORMAT + ": the byte buffer cannot contain holes"),
    ("offsets-not-contiguous",), entries=[("a", T("F32", [2], [0, 8])), ("b", T("F32", [2], [16, 24]))], data=24)
add("n_layout_alias_same_range", "two tensors alias the same bytes", report("safetensors/safetensors#586", "tied tensors sharing data are refused"),
    ("offsets-not-contiguous",), entries=[("a", T("F32", [2, 2], [0, 16])), ("b", T("F32", [2, 2], [0, 16]))])
add("n_layout_alias_partial_overlap", "two tensors overlap by 8 bytes", report("bug class", "tensors that alias each other's bytes"),
    ("offsets-not-contiguous",), entries=[("a", T("F32", [4], [0, 16])), ("b", T("F32", [4], [8, 24]))], data=24)
add("n_layout_alias_contained", "a tensor inside another tensor's range", report("bug class", "tensors that alias each other's bytes"),
    ("offsets-not-contiguous",), entries=[("a", T("F32", [4], [0, 16])), ("b", T("F32", [1], [4, 8]))], data=16)
add("n_layout_zero_size_inside_other", "a zero-sized tensor at [4, 4] inside [0, 16]", ref("a zero-sized tensor inside another is InvalidOffset"),
    ("offsets-not-contiguous",), entries=[("a", T("F32", [4], [0, 16])), ("z", T("F32", [0], [4, 4]))], data=16)
add("n_shape_larger_than_bytes", "shape [1000, 1000] F32 over 16 bytes", report("ml-explore/mlx#3363", "declared shape larger than data_offsets"),
    ("byte-length-mismatch",), entries=[("w", T("F32", [1000, 1000], [0, 16]))], data=16)
add("n_shape_smaller_than_bytes", "shape [2] F32 over 16 bytes", report("ztxz16/fastllm#712", "buffer sized from shape, read from data_offsets"),
    ("byte-length-mismatch",), entries=[("w", T("F32", [2], [0, 16]))], data=16)
add("n_shape_one_byte_short", "F32 [2, 2] over 15 bytes", ref("read_metadata: TensorInvalidInfo"), ("byte-length-mismatch",),
    entries=[("w", T("F32", [2, 2], [0, 15]))], data=15)
add("n_shape_product_overflows", "shape [2^32, 2^32, 2]: the element count overflows u64", report("google-ai-edge/LiteRT#9255", "integer overflow"),
    ("size-overflow",), entries=[("w", T("U8", [1 << 32, 1 << 32, 2], [0, 16]))], data=16)
add("n_shape_product_wraps_to_16", "shape [2^62 + 4, 4] U8: the product wraps to 16 mod 2^64", report("bug class", "shape products that wrap to small numbers"),
    ("size-overflow",), entries=[("w", T("U8", [(1 << 62) + 4, 4], [0, 16]))], data=16)
add("n_shape_bits_overflow", "shape [2^61] F32: the count fits, count x 32 bits does not", ref("read_metadata: ValidationOverflow on bits"),
    ("size-overflow",), entries=[("w", T("F32", [1 << 61], [0, 16]))], data=16)
add("n_shape_overflow_before_zero", "shape [2^63, 4, 0]: overflows before the 0 is reached", ref("element count is a checked product in shape order"),
    ("size-overflow",), entries=[("w", T("F32", [1 << 63, 4, 0], [0, 0]))])
add("n_shape_int32_truncation", "shape [2^32 + 16] U8 over 16 bytes: equals 16 when truncated to 32 bits", report("bug class", "dimensions truncated to int32"),
    ("byte-length-mismatch",), entries=[("w", T("U8", [(1 << 32) + 16], [0, 16]))], data=16)
add("n_shape_int32_negative", "shape [2^31] U8 over 16 bytes: negative as int32", report("bug class", "dimensions truncated to int32"),
    ("byte-length-mismatch",), entries=[("w", T("U8", [1 << 31], [0, 16]))], data=16)
add("n_subbyte_f4_odd_count", "three F4 values: 12 bits", ref("read_metadata: MisalignedSlice"), ("subbyte-misaligned",),
    entries=[("w", T("F4", [3], [0, 2]))], data=2)
add("n_subbyte_f6_two_values", "two F6_E2M3 values: 12 bits", ref("read_metadata: MisalignedSlice"), ("subbyte-misaligned",),
    entries=[("w", T("F6_E2M3", [2], [0, 2]))], data=2)
add("n_subbyte_f4_wrong_span", "four F4 values (2 bytes) over 4 bytes", ref("read_metadata: TensorInvalidInfo"), ("byte-length-mismatch",),
    entries=[("w", T("F4", [4], [0, 4]))], data=4)
add("n_buffer_trailing_1_byte", "one byte after the last tensor", report("bug class", "trailing bytes after the last tensor"), ("buffer-trailing-bytes",),
    tensors=W, trailing=b"\x00")
add("n_buffer_trailing_4096_bytes", "4096 bytes after the last tensor", report("bug class", "trailing bytes after the last tensor"),
    ("buffer-trailing-bytes",), tensors=W, trailing=b"\xab" * 4096)
add("n_buffer_trailing_after_empty_header", "data bytes after a header with no tensors", ref("read_metadata: MetadataIncompleteBuffer"),
    ("buffer-trailing-bytes",), json="{}", data=16)
add("n_buffer_trailing_hidden_payload", "a second safetensors file appended after the data", report("bug class", "trailing bytes after the last tensor"),
    ("buffer-trailing-bytes",), tensors=W, trailing=b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
add("n_buffer_truncated_1_byte", "the last byte of the data is missing", report("bug class", "truncated files"), ("buffer-truncated",),
    tensors=W, truncate=1)
add("n_buffer_truncated_all_data", "the file ends right after the header", report("bug class", "truncated files"), ("buffer-truncated",),
    tensors=W, truncate=16)
add("n_buffer_truncated_second_tensor", "the second tensor is cut in half", report("bug class", "truncated files"), ("buffer-truncated",),
    tensors=[("a", "F32", [4]), ("b", "F32", [4])], truncate=8)
add("n_buffer_truncated_in_header", "the file ends inside the header", report("bug class", "truncated files"), ("header-length-exceeds-file",),
    tensors=W, truncate=40)
