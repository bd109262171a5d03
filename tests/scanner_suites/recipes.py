# Strategy: one row per case of a public scanner's own test suite, as data.
# Each row says where the case comes from (repository, file, test or sample),
# what file it is (container and streams, through tests/scanner_suites/build),
# what loading it calls, the suite's label and what stcheck must say.  The
# payloads are inert: `true`, `1+1`, `pass`, `/dev/null`, or arguments that
# make the call fail before it does anything (a dict where a host is
# expected); a suite's network or shell command is never reproduced.
#
# expected: "error"   loading runs code (or cannot be judged): an error finding;
#           "warning" an archive stcheck cannot read: at least a warning;
#           "clean"   no error (a warning such as ST705 is fine).
# A row whose expectation differs from the suite's label says why in reason.
from __future__ import annotations

import marshal
import struct
from typing import Final

from scanner_suites.build import (
    Body,
    Build,
    Call,
    Compressed,
    Concat,
    Container,
    Dumps,
    New,
    Npy,
    Npz,
    Op,
    Ops,
    Plain,
    Recipe,
    Ref,
    SevenZip,
    Stream,
    TorchSave,
    TorchZip,
    Value,
    Zip,
    framed,
)

SUITES: Final = {
    "picklescan": "mmaitre314/picklescan",
    "modelscan": "protectai/modelscan",
    "fickling": "trailofbits/fickling",
    "modelaudit": "promptfoo/modelaudit",
}

_PS_GEN = "mmaitre314/picklescan tests/init_data_files.py"
_PS_TEST = "tests/test_scanner.py::test_scan_file_path"
_MS = "protectai/modelscan tests/test_modelscan.py"
_FK = "trailofbits/fickling test/test_bypasses.py::TestBypasses"
_MA = "promptfoo/modelaudit"

# The suites' payloads, made inert.
EVAL: Final = Ref("builtins", "eval")
SYSTEM: Final = Ref("posix", "system")
CODE: Final = "1+1"  # for eval and the code-running helpers (the suites run `__import__('os').system('whoami')`)


def _call(module: str, name: str, *args: Value, protocol: int = 4) -> Stream:
    return Stream(Call(Ref(module, name), args), protocol)


def object_array(elements: list[Value], shape: tuple[int, ...], core: str = "numpy.core.multiarray") -> Value:
    """An object ndarray as numpy's __reduce__ spells it: _reconstruct, then BUILD with (version, shape, dtype, fortran, items)."""
    array = Call(Ref(core, "_reconstruct"), (Ref("numpy", "ndarray"), (0,), b"b"))
    dtype = Build(Call(Ref("numpy", "dtype"), ("O8", False, True)), (3, "|", None, None, None, -1, -1, 63))
    return Build(array, (1, shape, dtype, False, elements))


def _int_array(values: list[int], shape: tuple[int, ...], core: str = "numpy._core.multiarray") -> Value:
    array = Call(Ref(core, "_reconstruct"), (Ref("numpy", "ndarray"), (0,), b"b"))
    dtype = Build(Call(Ref("numpy", "dtype"), ("i8", False, True)), (3, "<", None, None, None, -1, -1, 0))
    return Build(array, (1, shape, dtype, False, b"".join(struct.pack("<q", v) for v in values)))


def _ints(values: list[int]) -> bytes:
    return b"".join(struct.pack("<q", v) for v in values)


def _r(  # noqa: PLR0917 - a table row, positional as the table reads
    id_: str,
    suite: str,
    provenance: str,
    name: str,
    container: Container,
    calls: str,
    label: str,
    expected: str,
    reason: str = "",
    *,
    cli: bool = False,
) -> Recipe:
    return Recipe(f"{suite}-{id_}", suite, provenance, name, container, calls, label, expected, reason, cli)


# -- picklescan ------------------------------------------------------------------

# (sample, module, qualified name, inert args): initialize_pickle_file_from_reduce
# of tests/init_data_files.py, protocol 4, each checked by test_scan_file_path.
_PS_REDUCE: Final[tuple[tuple[str, str, str, tuple[Value, ...]], ...]] = (
    ("GHSA-4r9r-ch6f-vxmx", "torch.utils.bottleneck.__main__", "run_cprofile", (CODE, {})),
    ("GHSA-86cj-95qr-2p4f", "torch._dynamo.guards", "GuardBuilder.get", ({}, CODE)),
    (
        "GHSA-f4x7-rfwp-v3xw",
        "torch.fx.experimental.symbolic_shapes",
        "ShapeEnv.evaluate_guards_expression",
        ({}, CODE, []),
    ),
    ("GHSA-f745-w6jp-hpxx", "torch.utils.collect_env", "run", ("true",)),
    (
        "GHSA-jhph-76pp-mggw",
        "torch.utils.collect_env",
        "run_and_read_all",
        (Ref("torch.utils.collect_env", "run"), "true"),
    ),
    ("GHSA-h3qp-7fh3-f8h4", "torch.utils.data.datapipes.utils.decoder", "basichandlers", ("pickle", b"")),
    ("GHSA-vr7h-p6mm-wpmh", "torch.jit.unsupported_tensor_ops", "execWrapper", (CODE, {}, {})),
    ("GHSA-vv6j-3g6g-2pvj", "torch.utils._config_module", "ConfigModule.load_config", ({}, b"")),
    ("GHSA-5qwp-399c-mjwf", "trace", "Trace.run", ({}, CODE)),
    ("GHSA-g344-hcph-8vgg", "trace", "Trace.runctx", ({}, CODE, {}, {})),
    ("GHSA-x696-vm39-cp64", "profile", "Profile.run", ({}, CODE)),
    ("GHSA-6vqj-c2q5-j97w", "profile", "Profile.runctx", ({}, CODE, {}, {})),
    ("GHSA-f54q-57x4-jg88", "lib2to3.pgen2.grammar", "Grammar.loads", ({}, b"")),
    ("GHSA-3vg9-h568-4w9m", "idlelib.debugobj", "ObjectTreeItem.SetText", ({}, CODE)),
    ("GHSA-6w4w-5w54-rjvr", "idlelib.autocomplete", "AutoComplete.get_entity", ({}, CODE)),
    ("GHSA-7cq8-mj8x-j263", "idlelib.autocomplete", "AutoComplete.fetch_completions", ({}, CODE, 1)),
    ("GHSA-cj3c-v495-4xqh", "code", "InteractiveInterpreter.runcode", ({}, CODE)),
    ("GHSA-8r4j-24qv-fmq9", "idlelib.calltip", "Calltip.fetch_tip", ({}, CODE)),
    ("GHSA-9xph-j2h6-g47v", "idlelib.calltip", "get_entity", (CODE,)),
    ("GHSA-4whj-rm5r-c2v8", "torch.utils.bottleneck.__main__", "run_autograd_prof", (CODE, {})),
    ("GHSA-xp4f-hrf8-rxw7", "ensurepip", "_run_pip", (["--version"],)),
    ("GHSA-p9w7-82w4-7q8m", "lib2to3.pgen2.pgen", "ParserGenerator.make_label", (None, {}, '""+"1"')),
    ("GHSA-m869-42cg-3xwr", "idlelib.run", "Executive.runcode", ({}, CODE)),
    ("GHSA-j343-8v2j-ff7w", "idlelib.pyshell", "ModifiedInterpreter.runcommand", ({}, CODE)),
    ("GHSA-3gf5-cxq9-w223", "idlelib.pyshell", "ModifiedInterpreter.runcode", ({}, CODE)),
    ("GHSA-fqq6-7vqf-w3fg", "doctest", "debug_script", (CODE, True)),
    ("GHSA-9w88-8rmg-7g2p", "cProfile", "runctx", (CODE, None, None)),
    ("GHSA-49gj-c84q-6qm9", "cProfile", "run", (CODE,)),
    ("GHSA-7wx9-6375-f5wh", "profile", "run", (CODE,)),
    (
        "GHSA-q77w-mwjj-7mqx",
        "asyncio.unix_events",
        "_UnixSubprocessTransport._start",
        ({}, "true", True, None, None, None, 0),
    ),
    ("GHSA-m273-6v24-x4m4", "distutils.file_util", "write_file", ("/dev/null", ["inert"])),
    ("GHSA-4675-36f9-wf6r", "ctypes", "CDLL", (None,)),
    ("GHSA-vqmv-47xg-9wpr", "pty", "spawn", (["true"],)),
    ("GHSA-r8g5-cgf2-4m4m", "numpy.f2py.crackfortran", "getlincoef", (CODE, [])),
    ("io_FileIO", "_io", "FileIO", ("/dev/null", "r")),
    ("urllib_request_urlopen", "urllib.request", "urlopen", ("",)),
    ("logging_FileHandler", "logging", "FileHandler", ("/dev/null",)),
    ("GHSA-vvpj-8cmc-gx39", "pkgutil", "resolve_name", ("os:getcwd",)),
    ("GHSA-g38g-8gr9-h9xp-uuid", "uuid", "_get_command_stdout", ("true",)),
    ("GHSA-g38g-8gr9-h9xp-osx-support", "_osx_support", "_read_output", ("true",)),
    ("GHSA-g38g-8gr9-h9xp-aix-support", "_aix_support", "_read_cmd_output", ("true",)),
    ("GHSA-g38g-8gr9-h9xp-imaplib", "imaplib", "IMAP4_stream", ("true",)),
)

# (sample, module, name, inert args, protocol): the Malicious* classes of
# tests/init_data_files.py, pickled by initialize_pickle_file.
_PS_CLASSES: Final[tuple[tuple[str, str, str, tuple[Value, ...], int], ...]] = (
    ("malicious1_v0", "builtins", "eval", (CODE,), 0),
    ("malicious1_v3", "builtins", "eval", (CODE,), 3),
    ("malicious1_v4", "builtins", "eval", (CODE,), 4),
    ("malicious2_v0", "posix", "system", ("true",), 0),
    ("malicious2_v3", "posix", "system", ("true",), 3),
    ("malicious2_v4", "posix", "system", ("true",), 4),
    # protocol 0 spells http.client by its Python 2 name (pickle's fix_imports)
    ("malicious3", "httplib", "HTTPSConnection", ("localhost",), 0),
    ("malicious4", "requests.api", "get", ("",), 4),
    ("malicious5", "aiohttp.client", "ClientSession", (), 4),
    ("malicious7", "socket", "create_connection", ({},), 4),
    ("malicious8", "subprocess", "run", (["true"],), 4),
    ("malicious9", "sys", "exit", (0,), 4),
    ("malicious14", "runpy", "_run_code", ("pass", {}), 4),
    ("malicious16", "pip", "main", (["--version"],), 0),
    ("malicious17", "torch._inductor.codecache", "compile_file", ("", "", ["true"]), 4),
    ("malicious18", "pydoc", "pipepager", ("", "true"), 4),
    ("malicious20", "venv", "create", ({},), 4),
    ("malicious21", "timeit", "timeit", ("", "pass"), 4),
    ("malicious22", "numpy.testing._private.utils", "runstring", ("pass", {}), 4),
)

# The stream of picklescan's "data.pkl" zip members: eval, protocol 4.
_EVAL4: Final = _call("builtins", "eval", CODE)

# `V` (UNICODE) strings memoised with PUT, then fetched back for STACK_GLOBAL:
# the Imaginary CTF "Safe Pickle" stream (no PROTO, starts with `V`).
_CTF_OPS: Final = (
    ("UNICODE", "os"),
    ("PUT", 2),
    ("POP",),
    ("UNICODE", "system"),
    ("PUT", 3),
    ("POP",),
    ("UNICODE", "torch"),
    ("PUT", 0),
    ("POP",),
    ("UNICODE", "LongStorage"),
    ("PUT", 1),
    ("POP",),
    ("GET", 2),
    ("GET", 3),
    ("STACK_GLOBAL",),
    ("MARK",),
    ("UNICODE", "true"),
    ("TUPLE",),
    ("REDUCE",),
    ("STOP",),
)

# Slaviero's "Sour Pickles" chain, protocol 0: globals(), compile(), eval(),
# getattr(dict, 'get'), apply(); the compiled code made inert.
_SOUR: Final = Ops(
    (
        ("GLOBAL", "__builtin__ globals"),
        ("MARK",),
        ("TUPLE",),
        ("REDUCE",),
        ("PUT", 100),
        ("POP",),
        ("GLOBAL", "__builtin__ compile"),
        ("MARK",),
        ("STRING", "picklesmashed=1+1;"),
        ("STRING", ""),
        ("STRING", "exec"),
        ("TUPLE",),
        ("REDUCE",),
        ("PUT", 101),
        ("POP",),
        ("GLOBAL", "__builtin__ eval"),
        ("MARK",),
        ("GET", 101),
        ("GET", 100),
        ("TUPLE",),
        ("REDUCE",),
        ("PUT", 102),
        ("POP",),
        ("GLOBAL", "__builtin__ getattr"),
        ("MARK",),
        ("GLOBAL", "__builtin__ dict"),
        ("STRING", "get"),
        ("TUPLE",),
        ("REDUCE",),
        ("PUT", 103),
        ("POP",),
        ("GLOBAL", "__builtin__ apply"),
        ("MARK",),
        ("GET", 103),
        ("MARK",),
        ("GET", 100),
        ("STRING", "picklesmashed"),
        ("LIST",),
        ("TUPLE",),
        ("REDUCE",),
        ("PUT", 104),
        ("POP",),
        ("GET", 104),
        ("STOP",),
    )
)


def _operator_chain(getter: str, args: tuple[str, ...]) -> Ops:
    """builtins.__import__('os'), then _operator.<getter>(*args)(os)(...), protocol 0 with `builtins`."""
    call_args = () if getter == "methodcaller" else (("MARK",), ("UNICODE", "true"), ("TUPLE",), ("REDUCE",))
    return Ops(
        (
            ("GLOBAL", "builtins __import__"),
            ("MARK",),
            ("UNICODE", "os"),
            ("TUPLE",),
            ("REDUCE",),
            ("PUT", 0),
            ("POP",),
            ("GLOBAL", f"_operator {getter}"),
            ("MARK",),
            *(("UNICODE", a) for a in args),
            ("TUPLE",),
            ("REDUCE",),
            ("MARK",),
            ("GET", 0),
            ("TUPLE",),
            ("REDUCE",),
            *call_args,
            ("STOP",),
        )
    )


def _memo_exploit(first: tuple[Op, ...], gets: tuple[int, int]) -> Ops:
    """A call of posix.system, then a STACK_GLOBAL from memo entries that are missing or not strings."""
    return Ops(
        (
            ("PROTO", 4),
            ("GLOBAL", "os system"),
            ("UNICODE", "true"),
            ("TUPLE1",),
            ("REDUCE",),
            ("POP",),
            *first,
            ("BINGET", gets[0]),
            ("BINGET", gets[1]),
            ("STACK_GLOBAL",),
            ("BININT1", 0x42),
            ("STOP",),
        )
    )


def _picklescan() -> list[Recipe]:
    ps = "picklescan"
    rows: list[Recipe] = [
        _r(
            f"benign0_v{version}",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/benign0_v{version}.pkl; {_PS_TEST}",
            f"benign0_v{version}.pkl",
            Plain(Dumps(["a", "b", "c"], version)),
            "nothing: a list of three strings",
            "safe",
            "clean",
            cli=version == 0,
        )
        for version in (0, 3, 4)
    ]
    for sample, module, name, args, proto in _PS_CLASSES:
        suffix = ".pickle" if sample in {"malicious4", "malicious5"} else ".pkl"
        rows.append(
            _r(
                sample,
                ps,
                f"{_PS_GEN} initialize_pickle_files -> tests/data/{sample}{suffix}; {_PS_TEST}",
                sample + suffix,
                Plain(_call(module, name, *args, protocol=proto)),
                f"{module}.{name}{args!r}",
                "malicious",
                "error",
                cli=sample == "malicious1_v0",
            )
        )
    for sample, module, name, args in _PS_REDUCE:
        suffix = ".bin" if sample == "GHSA-jgw4-cr84-mqxg" else ".pkl"
        rows.append(
            _r(
                sample,
                ps,
                f"{_PS_GEN} initialize_pickle_file_from_reduce -> tests/data2/{sample}{suffix}; {_PS_TEST}",
                sample + suffix,
                Plain(_call(module, name, *args)),
                f"{module}.{name}{args!r}",
                "malicious",
                "error",
            )
        )
    q77w_args: tuple[Value, ...] = ({}, "true", True, None, None, None, 0)
    # Two GHSA-g38g-8gr9-h9xp samples are raw bytes there (their modules are
    # missing on some platforms): no FRAME, no memo.
    rows += [
        _r(
            sample,
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data2/{sample}.pkl (raw bytes); {_PS_TEST}",
            f"{sample}.pkl",
            Plain(Stream(Call(Ref(module, name), args), memo=False, frame=False)),
            f"{module}.{name}{args!r}",
            "malicious",
            "error",
        )
        for sample, module, name, args in (
            ("GHSA-g38g-8gr9-h9xp-pyrepl-pager", "_pyrepl.pager", "pipe_pager", ("text", "true")),
            ("GHSA-g38g-8gr9-h9xp-test", "test.support.script_helper", "assert_python_ok", ("-c pass",)),
        )
    ]
    rows += [
        _r(
            "GHSA-jgw4-cr84-mqxg",
            ps,
            f"{_PS_GEN} initialize_pickle_file_from_reduce -> tests/data2/GHSA-jgw4-cr84-mqxg.bin; {_PS_TEST}",
            "GHSA-jgw4-cr84-mqxg.bin",
            Plain(_call("asyncio.unix_events", "_UnixSubprocessTransport._start", *q77w_args)),
            "asyncio.unix_events._UnixSubprocessTransport._start (a .bin: a pickle by its content only)",
            "malicious",
            "error",
            cli=True,
        ),
        _r(
            "malicious0",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/malicious0.pkl (Sour Pickles); {_PS_TEST}",
            "malicious0.pkl",
            Plain(_SOUR),
            "__builtin__.globals, compile, eval, getattr, apply (protocol 0, memo PUT/GET)",
            "malicious",
            "error",
        ),
        _r(
            "malicious6",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/malicious6.pkl; {_PS_TEST}",
            "malicious6.pkl",
            Plain(Concat((Dumps(["a", "b", "c"]), _call("requests.api", "get", "")))),
            "a benign list stream, then a second stream calling requests.api.get",
            "malicious",
            "error",
        ),
        _r(
            "malicious10",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/malicious10.pkl (INST); {_PS_TEST}",
            "malicious10.pkl",
            Plain(Ops((("MARK",), ("STRING", "pass"), ("INST", "__builtin__ exec"), ("STOP",)))),
            "__builtin__.exec('pass') through INST",
            "malicious",
            "error",
        ),
        _r(
            "malicious11",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/malicious11.pkl (Imaginary CTF Safe Pickle); test_scan_directory_path",
            "malicious11.pkl",
            Plain(Ops(_CTF_OPS)),
            "os.system('true') from memoised UNICODE strings; no PROTO, first byte `V`",
            "malicious",
            "error",
        ),
        _r(
            "malicious-invalid-bytes",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/malicious-invalid-bytes.pkl; tests/test_scanner.py::test_invalid_bytes_err",
            "malicious-invalid-bytes.pkl",
            Plain(Ops((*_CTF_OPS, ("RAW", b"\n\n\t\t")))),
            "os.system('true') as malicious11, then junk after STOP",
            "malicious",
            "error",
        ),
        _r(
            "malicious12",
            ps,
            "mmaitre314/picklescan tests/data/malicious12.pkl (pickleassem recipe in tests/init_data_files.py); test_scan_directory_path",
            "malicious12.pkl",
            Plain(
                Stream(
                    Call(
                        Call(
                            Call(Ref("operator", "attrgetter"), ("system",)),
                            (Call(Ref("builtins", "__import__"), ("os",)),),
                        ),
                        ("true",),
                    )
                )
            ),
            "operator.attrgetter('system')(builtins.__import__('os'))('true')",
            "malicious",
            "error",
        ),
        _r(
            "malicious13a",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/malicious13a.pkl; tests/test_scanner.py::test_pickle_files",
            "malicious13a.pkl",
            Plain(_call("pickle", "loads", Call(Ref("_codecs", "encode"), ("I12345\n.", "latin1")), protocol=0)),
            "pickle.loads of a stream that gives 12345, its bytes spelled _codecs.encode(str, 'latin1') at protocol 0",
            "malicious",
            "error",
        ),
        _r(
            "malicious13b",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/malicious13b.pkl; tests/test_scanner.py::test_pickle_files",
            "malicious13b.pkl",
            Plain(_call("_pickle", "loads", b"I12345\n.")),
            "_pickle.loads(b'I12345\\n.')",
            "malicious",
            "error",
        ),
        *(
            _r(
                f"malicious15{letter}",
                ps,
                f"{_PS_GEN} initialize_pickle_files -> tests/data/malicious15{letter}.pkl (Malicious15); test_scan_directory_path",
                f"malicious15{letter}.pkl",
                Plain(
                    Stream(
                        Call(
                            method,
                            (Build(New(Ref("bdb", "Bdb")), {"skip": None, "breaks": {}, "fncache": {}}), "pass"),
                        ),
                        proto,
                    )
                ),
                "bdb.Bdb.run(Bdb(), 'pass')" + (" through getattr below protocol 4" if proto < 4 else ""),
                "malicious",
                "error",
            )
            for letter, proto, method in (
                ("a", 2, Call(Ref("builtins", "getattr"), (Ref("bdb", "Bdb"), "run"))),
                ("b", 4, Ref("bdb", "Bdb.run")),
            )
        ),
        _r(
            "malicious19",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/malicious19.pkl (Malicious19); test_scan_directory_path",
            "malicious19.pkl",
            Plain(
                Stream(
                    Call(
                        Build(
                            Call(Ref("functools", "partial"), (Ref("torch.serialization", "load"),)),
                            (
                                Ref("torch.serialization", "load"),
                                ("some_other_model.bin",),
                                {"pickle_file": "config.json", "weights_only": False},
                                None,
                            ),
                        ),
                        (),
                    )
                )
            ),
            "functools.partial(torch.load, 'some_other_model.bin', weights_only=False)()",
            "malicious",
            "error",
        ),
        _r(
            "malicious23",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data2/malicious23.pkl (GHSA-9gvj-pp9x-gcfr); {_PS_TEST}",
            "malicious23.pkl",
            Plain(
                Ops(
                    (
                        ("STRING", "os"),
                        ("STRING", "system"),
                        ("STACK_GLOBAL",),
                        ("STRING", "true"),
                        ("TUPLE1",),
                        ("REDUCE",),
                        ("STOP",),
                    )
                )
            ),
            "os.system('true') from protocol-0 STRING operands of STACK_GLOBAL, no PROTO",
            "malicious",
            "error",
        ),
        _r(
            "keyerror-exploit",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data2/keyerror-exploit.pkl; {_PS_TEST}",
            "keyerror-exploit.pkl",
            Plain(_memo_exploit((("SHORT_BINUNICODE", "os"), ("MEMOIZE",)), (3, 0))),
            "os.system('true'), then a STACK_GLOBAL from a missing memo key",
            "malicious",
            "error",
        ),
        _r(
            "type-confusion-exploit",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data2/type-confusion-exploit.pkl; {_PS_TEST}",
            "type-confusion-exploit.pkl",
            Plain(
                _memo_exploit(
                    (("BININT", 42), ("MEMOIZE",), ("SHORT_BINUNICODE", "os"), ("MEMOIZE",)),
                    (0, 1),
                )
            ),
            "os.system('true'), then a STACK_GLOBAL of (42, 'os')",
            "malicious",
            "error",
        ),
        _r(
            "GHSA-955r-x9j8-7rhh",
            ps,
            f"mmaitre314/picklescan tests/data2/GHSA-955r-x9j8-7rhh.pkl; {_PS_TEST}",
            "GHSA-955r-x9j8-7rhh.pkl",
            Plain(_operator_chain("methodcaller", ("system", "true"))),
            "_operator.methodcaller('system', 'true')(builtins.__import__('os'))",
            "malicious",
            "error",
        ),
        _r(
            "GHSA-46h3-79wf-xr6c",
            ps,
            f"mmaitre314/picklescan tests/data2/GHSA-46h3-79wf-xr6c.pkl; {_PS_TEST}",
            "GHSA-46h3-79wf-xr6c.pkl",
            Plain(_operator_chain("attrgetter", ("system",))),
            "_operator.attrgetter('system')(builtins.__import__('os'))('true')",
            "malicious",
            "error",
        ),
        _r(
            "GHSA-84r2-jw7c-4r5q",
            ps,
            f"{_PS_GEN} reduce_GHSA_84r2_jw7c_4r5q -> tests/data2/GHSA-84r2-jw7c-4r5q.pkl; {_PS_TEST}",
            "GHSA-84r2-jw7c-4r5q.pkl",
            Plain(
                Stream(
                    Call(
                        Call(Ref("operator", "methodcaller"), ("getcwd",)),
                        (Call(Ref("pydoc", "locate"), ("os",)),),
                    )
                )
            ),
            "operator.methodcaller('getcwd')(pydoc.locate('os')) (the suite calls system)",
            "malicious",
            "error",
        ),
        _r(
            "types_CodeType",
            ps,
            f"{_PS_GEN} initialize_codetype_exploit_file -> tests/data2/types_CodeType.pkl; {_PS_TEST}",
            "types_CodeType.pkl",
            Plain(_call("types", "CodeType")),
            "types.CodeType(...): the suite passes a code object's fields; here none, so the call fails",
            "malicious",
            "error",
        ),
        _r(
            "cloudpickle_codeinjection",
            ps,
            f"{_PS_GEN} initialize_cloudpickle_exploit_file -> tests/data2/cloudpickle_codeinjection.pkl; {_PS_TEST}",
            "cloudpickle_codeinjection.pkl",
            Plain(
                Stream(
                    Call(
                        Ref("cloudpickle.cloudpickle", "_make_function"),
                        (
                            Call(Call(Ref("cloudpickle.cloudpickle", "_builtin_type"), ("CodeType",)), ()),
                            {"__builtins__": Call(Ref("cloudpickle.cloudpickle", "subimport"), ("builtins",))},
                            "_obfuscated_eval",
                            None,
                            None,
                        ),
                    ),
                    5,
                )
            ),
            "cloudpickle's _make_function(_builtin_type('CodeType')(...), globals with subimport('builtins'))",
            "malicious",
            "error",
            "cloudpickle is not installed: the same imports and call shape, without a real code object",
        ),
        _r(
            "sys_module_override_sploit",
            ps,
            "mmaitre314/picklescan tests/data/sys_module_override_sploit.pkl; tests/test_scanner.py::test_scan_directory_path",
            "sys_module_override_sploit.pkl",
            Plain(
                Ops(
                    (
                        ("PROTO", 4),
                        ("UNICODE", "torch._utils"),
                        ("MEMOIZE",),
                        ("UNICODE", "_rebuild_tensor"),
                        ("MEMOIZE",),
                        ("STACK_GLOBAL",),
                        ("MEMOIZE",),
                        ("POP",),
                        ("UNICODE", "torch"),
                        ("UNICODE", "_utils"),
                        ("STACK_GLOBAL",),
                        ("MEMOIZE",),
                        ("POP",),
                        ("BINGET", 3),
                        ("EMPTY_DICT",),
                        ("BINGET", 1),
                        ("UNICODE", "builtins"),
                        ("SETITEM",),
                        ("BUILD",),
                        ("POP",),
                        ("BINGET", 0),
                        ("BINGET", 1),
                        ("STACK_GLOBAL",),
                        ("BINGET", 3),
                        ("EMPTY_DICT",),
                        ("BINGET", 1),
                        ("UNICODE", "eval"),
                        ("SETITEM",),
                        ("BUILD",),
                        ("POP",),
                        ("BINGET", 0),
                        ("BINGET", 1),
                        ("STACK_GLOBAL",),
                        ("STACK_GLOBAL",),
                        ("UNICODE", "pass"),
                        ("TUPLE1",),
                        ("REDUCE",),
                        ("STOP",),
                    )
                )
            ),
            "BUILD on the module torch._utils rebinds _rebuild_tensor to 'builtins', then 'eval': "
            "a STACK_GLOBAL of two STACK_GLOBAL results calls builtins.eval",
            "malicious",
            "error",
        ),
        _r(
            "broken_model",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/broken_model.pkl; test_scan_directory_path",
            "broken_model.pkl",
            Plain(Ops((("GLOBAL", "builtins exec"), ("MARK",), ("RAW", b"X>\nx = 1 + 1tRX.")))),
            "builtins.exec imported, then a BINUNICODE whose length runs past the end",
            "malicious",
            "error",
        ),
        _r(
            "pytorch_magic_bypass",
            ps,
            f"{_PS_GEN} initialize_pytorch_magic_bypass_file -> tests/data/pytorch_magic_bypass.pt; tests/test_scanner.py::test_scan_pytorch",
            "pytorch_magic_bypass.pt",
            Plain(
                Concat(
                    (
                        _call("builtins", "eval", "0x1950A86A20F9469CFC6C", protocol=2),
                        Dumps(1001, 2),
                        Dumps({}, 2),
                        Dumps([], 2),
                        _call("posix", "system", "true", protocol=2),
                        Dumps(None, 2),
                    )
                )
            ),
            "a legacy torch stream whose magic number comes from __builtin__.eval, and a posix.system stream",
            "malicious",
            "error",
            cli=True,
        ),
        _r(
            "bad_pytorch",
            ps,
            f"{_PS_GEN} initialize_pickle_files -> tests/data/bad_pytorch.pt; {_PS_TEST}",
            "bad_pytorch.pt",
            Plain(b"\x89PNG\r\n\x1a\n"),
            "nothing: a PNG signature named .pt",
            "safe",
            "error",
            "a .pt is unpickled by torch.load whatever it holds; stcheck refuses a pickle it cannot read to "
            "STOP rather than vouch for it (issue 35: never 'text' or clean). Here torch.load fails at byte 0, "
            "so the error is a refusal, not a claim that code runs",
        ),
        _r(
            "not_a_pickle",
            ps,
            f"{_PS_GEN} initialize_not_a_pickle_file -> tests/data/not_a_pickle.bin; tests/test_scanner.py::test_not_a_pickle_file",
            "not_a_pickle.bin",
            Plain(b"cmod\n\xf8\n"),
            "a GLOBAL of module 'mod', name b'\\xf8' (not UTF-8), then the end",
            "safe",
            "clean",
            "the file's first byte is GLOBAL, so torch.load and pickle.load unpickle it, but both fail decoding "
            "the name, before any import: pickle cannot call what it has not imported, so no code runs. A .bin "
            "is judged by its content (raw OpenVINO/GGML weights share the suffix): no finding",
        ),
        _r(
            "pytorch_model_legacy",
            ps,
            "mmaitre314/picklescan tests/data/pytorch_model.bin; tests/test_scanner.py::test_scan_pytorch",
            "pytorch_model.bin",
            TorchSave(legacy=True),
            "torch.FloatStorage, collections.OrderedDict, torch._utils._rebuild_tensor_v2",
            "safe",
            "clean",
        ),
        _r(
            "new_pytorch_model",
            ps,
            "mmaitre314/picklescan tests/data/new_pytorch_model.bin; tests/test_scanner.py::test_scan_pytorch",
            "pytorch_model.bin",
            TorchSave(legacy=False),
            "a torch.save zip of a state dict",
            "safe",
            "clean",
        ),
        _r(
            "malicious1_zip",
            ps,
            f"{_PS_GEN} initialize_zip_file -> tests/data/malicious1.zip; {_PS_TEST}",
            "malicious1.zip",
            Zip((("data.pkl", _EVAL4),)),
            "builtins.eval in a zip's data.pkl",
            "malicious",
            "error",
            cli=True,
        ),
        _r(
            "malicious1_central_directory",
            ps,
            f"{_PS_GEN} initialize_corrupt_zip_file_central_directory -> tests/data/malicious1_central_directory.zip; {_PS_TEST}",
            "malicious1_central_directory.zip",
            Zip((("data.pkl", _EVAL4),), rename_local="datap.kl"),
            "builtins.eval in data.pkl, the local header naming it datap.kl",
            "malicious",
            "error",
        ),
        _r(
            "malicious1_crc",
            ps,
            f"{_PS_GEN} initialize_corrupt_zip_file_crc -> tests/data2/malicious1_crc.zip; {_PS_TEST}",
            "malicious1_crc.zip",
            Zip((("data.pkl", _EVAL4),), corrupt=(b"1+1", b"2+2")),
            "builtins.eval in data.pkl whose CRC no longer matches",
            "malicious",
            "error",
        ),
        *(
            _r(
                f"malicious1_{flag:#x}",
                ps,
                f"mmaitre314/picklescan tests/data/malicious1_{flag:#x}.zip; {_PS_TEST}",
                f"malicious1_{flag:#x}.zip",
                Zip((("model/config.pkl", _EVAL4),), flag_bits=flag),
                f"builtins.eval in model/config.pkl, stored, general purpose flag {flag:#x} set",
                "malicious",
                "warning",
                "an archive whose member zipfile refuses (flag bits): stcheck must at least say it did not read it "
                "(ST708 archive-unreadable); an error naming eval is better still",
            )
            for flag in (0x1, 0x20, 0x40)
        ),
        _r(
            "malicious1_wrong_ext",
            ps,
            f"{_PS_GEN} initialize_zip_file -> tests/data/malicious1_wrong_ext.zip; {_PS_TEST}",
            "malicious1_wrong_ext.zip",
            Zip((("data.txt", _EVAL4),)),
            "builtins.eval pickled into a member named data.txt",
            "malicious",
            "warning",
            "no loader stcheck names unpickles a .txt member of a plain zip; stcheck must at least say which "
            "members it did not vet; an error naming eval is better still",
        ),
        _r(
            "malicious1_7z",
            ps,
            f"{_PS_GEN} initialize_7z_file -> tests/data/malicious1.7z; {_PS_TEST}",
            "malicious1.7z",
            SevenZip("data.pkl", _EVAL4),
            "builtins.eval in data.pkl inside a 7z (Copy coder)",
            "malicious",
            "warning",
            "stcheck does not open 7z archives: it must say so (ST708 archive-unreadable)",
            cli=True,
        ),
        _r(
            "benign_password_protected",
            ps,
            "mmaitre314/picklescan tests/data/benign_password_protected.zip; test_scan_directory_path",
            "benign_password_protected.zip",
            Zip((("test.txt", b"hello, password"),), flag_bits=0x1),
            "nothing: an encrypted text member",
            "safe",
            "warning",
            "an encrypted member cannot be read, so stcheck cannot say what it holds (ST708 archive-unreadable)",
        ),
        _r(
            "object_array",
            ps,
            f"{_PS_GEN} initialize_numpy_files -> tests/data2/object_array.npy; tests/test_scanner.py::test_scan_numpy",
            "object_array.npy",
            Npy("|O", (2, 2), Stream(object_array([1, 2, 3, 4], (2, 2)), 3)),
            "numpy.core.multiarray._reconstruct, numpy.ndarray, numpy.dtype; elements are ints",
            "safe",
            "clean",
            "issue 35 tier two: an object array of builtin values rebuilds data only",
        ),
        _r(
            "int_array",
            ps,
            f"{_PS_GEN} initialize_numpy_files -> tests/data2/int_array.npy; tests/test_scanner.py::test_scan_numpy",
            "int_array.npy",
            Npy("<i8", (2, 2), _ints([1, 2, 3, 4])),
            "nothing: an int64 array",
            "safe",
            "clean",
        ),
        *(
            _r(
                f"object_arrays{tag}",
                ps,
                f"{_PS_GEN} initialize_numpy_files -> tests/data2/object_arrays{tag}.npz; "
                "tests/test_scanner.py::test_scan_file_path_npz",
                f"object_arrays{tag}.npz",
                Npz(
                    (
                        ("a", Npy("|O", (3,), Stream(object_array([0, 1, 2], (3,)), 3))),
                        ("b", Npy("|O", (3,), Stream(object_array([3, 4, 5], (3,)), 3))),
                    ),
                    compressed=bool(tag),
                ),
                "two object arrays of ints",
                "safe",
                "clean",
                "issue 35 tier two: an object array of builtin values rebuilds data only",
            )
            for tag in ("", "_compressed")
        ),
        *(
            _r(
                f"int_arrays{tag}",
                ps,
                f"{_PS_GEN} initialize_numpy_files -> tests/data2/int_arrays{tag}.npz; "
                "tests/test_scanner.py::test_scan_file_path_npz",
                f"int_arrays{tag}.npz",
                Npz(
                    (("a", Npy("<i8", (3,), _ints([0, 1, 2]))), ("b", Npy("<i8", (3,), _ints([3, 4, 5])))),
                    compressed=bool(tag),
                ),
                "nothing: two int64 arrays",
                "safe",
                "clean",
            )
            for tag in ("", "_compressed")
        ),
        _r(
            "dns_exfiltration",
            ps,
            f"{_PS_GEN} initialize_numpy_files -> tests/data2/dns_exfiltration.npy; tests/test_scanner.py::test_scan_numpy",
            "dns_exfiltration.npy",
            Npy(
                "|O",
                (1,),
                Stream(
                    object_array([Call(Ref("ssl", "get_server_certificate"), ({},))], (1,), "numpy._core.multiarray"),
                    4,
                ),
            ),
            "ssl.get_server_certificate inside an object array's elements (numpy 2's np.save: protocol 4)",
            "malicious",
            "error",
        ),
    ]
    return rows


# -- modelscan -------------------------------------------------------------------

_NESTED_SYSTEM: Final = b"".join(
    (
        b"\x80\x05",
        b"cos\nsystem\n",
        b"Vtrue\n",
        b"\x85R.",
    )
)


def _modelscan() -> list[Recipe]:
    ms = "modelscan"
    rows: list[Recipe] = []
    for version in (0, 3, 4):
        for stem, body, label, expected in (
            ("benign0", Dumps(["a", "b", "c"], version), "safe", "clean"),
            ("malicious1", _call("builtins", "eval", CODE, protocol=version), "malicious", "error"),
            ("malicious2", _call("posix", "system", "true", protocol=version), "malicious", "error"),
        ):
            rows.append(
                _r(
                    f"{stem}_v{version}",
                    ms,
                    f"{_MS} fixture file_path -> data/{stem}_v{version}.pkl; test_scan_file_path",
                    f"{stem}_v{version}.pkl",
                    Plain(body),
                    "nothing: a list of strings"
                    if label == "safe"
                    else ("builtins.eval('1+1')" if stem == "malicious1" else "posix.system('true')"),
                    label,
                    expected,
                )
            )
            if stem != "malicious2":
                rows.append(
                    _r(
                        f"{stem}_v{version}_dill",
                        ms,
                        f"{_MS} fixture file_path initialize_dill_file -> data/{stem}_v{version}.dill; test_scan_file_path",
                        f"{stem}_v{version}.dill",
                        Plain(body),
                        "as the .pkl twin, under dill's extension",
                        label,
                        expected,
                        "dill is not installed: rebuilt with pickle's spelling; the suite's test expects these "
                        "very globals (__builtin__.eval, builtins.eval) in dill's output",
                    )
                )
    # The rest of fixture file_path: the same Malicious classes as picklescan's.
    by_sample = {sample: (module, name, args, proto) for sample, module, name, args, proto in _PS_CLASSES}
    for sample in ("malicious3", "malicious4", "malicious5", "malicious7", "malicious8", "malicious9"):
        module, name, args, proto = by_sample[sample]
        suffix = ".pickle" if sample in {"malicious4", "malicious5"} else ".pkl"
        rows.append(
            _r(
                sample,
                ms,
                f"{_MS} fixture file_path -> data/{sample}{suffix}; test_scan_pickle_operators",
                sample + suffix,
                Plain(_call(module, name, *args, protocol=proto)),
                f"{module}.{name}{args!r}",
                "malicious",
                "error",
            )
        )
    rows += [
        _r(
            "malicious12",
            ms,
            f"{_MS} malicious12_gen -> data/malicious12.pkl; test_scan_pickle_operators",
            "malicious12.pkl",
            Plain(
                Ops(
                    (
                        ("PROTO", 5),
                        ("GLOBAL", "pickle loads"),
                        ("BINBYTES", _NESTED_SYSTEM),
                        ("TUPLE1",),
                        ("REDUCE",),
                        ("POP",),
                        ("NONE",),
                        ("STOP",),
                    )
                )
            ),
            "pickle.loads of a nested stream that calls os.system('true')",
            "malicious",
            "error",
        ),
        _r(
            "malicious13",
            ms,
            f"{_MS} malicious13_gen -> data/malicious13.pkl; test_scan_pickle_operators",
            "malicious13.pkl",
            Plain(
                Ops(
                    (
                        ("PROTO", 5),
                        ("GLOBAL", "builtins eval.__call__"),
                        ("UNICODE", CODE),
                        ("TUPLE1",),
                        ("REDUCE",),
                        ("STOP",),
                    )
                )
            ),
            "GLOBAL 'builtins eval.__call__' (a dotted name, resolved attribute by attribute from protocol 4)",
            "malicious",
            "error",
        ),
        _r(
            "malicious14",
            ms,
            f"{_MS} malicious14_gen -> data/malicious14.pkl; test_scan_pickle_operators",
            "malicious14.pkl",
            Plain(Ops((*_CTF_OPS, ("RAW", b"\n\n\t\t")))),
            "os.system('true') from memoised UNICODE strings, junk after STOP",
            "malicious",
            "error",
        ),
        _r(
            "malicious6",
            ms,
            f"{_MS} fixture file_path -> data/malicious6.pkl; test_scan_pickle_operators",
            "malicious6.pkl",
            Plain(Concat((Dumps(["a", "b", "c"]), _call("requests.api", "get", "")))),
            "a benign list stream, then a second stream calling requests.api.get",
            "malicious",
            "error",
        ),
        _r(
            "malicious11",
            ms,
            f"{_MS} fixture file_path -> data/malicious11.pkl; test_scan_pickle_operators",
            "malicious11.pkl",
            Plain(Ops(_CTF_OPS)),
            "os.system('true') from memoised UNICODE strings; no PROTO, first byte `V`",
            "malicious",
            "error",
        ),
        _r(
            "malicious1_zip",
            ms,
            f"{_MS} fixture file_path -> data/malicious1.zip; test_scan_file_path",
            "malicious1.zip",
            Zip((("data.pkl", _EVAL4),)),
            "builtins.eval in a zip's data.pkl",
            "malicious",
            "error",
        ),
        _r(
            "malicious15",
            ms,
            f"{_MS} fixture file_path -> data/malicious15.pkl (Malicious15); test_scan_file_path",
            "malicious15.pkl",
            Plain(Stream(Call(Ref("bdb", "Bdb.run"), (Build(New(Ref("bdb", "Bdb")), {"skip": None}), "pass")))),
            "bdb.Bdb.run(Bdb(), 'pass')",
            "malicious",
            "error",
        ),
        _r(
            "test_zip",
            ms,
            f"{_MS} fixture zip_file_path -> test.zip; test_scan_zip",
            "test.zip",
            Zip((("data.pkl", _EVAL4),)),
            "builtins.eval in a zip's data.pkl",
            "malicious",
            "error",
        ),
        _r(
            "password_protected",
            ms,
            "protectai/modelscan tests/data/password_protected.zip; tests/test_modelscan.py::test_scan_file_path",
            "password_protected.zip",
            Zip((("test.txt", b""),), flag_bits=0x1),
            "nothing: an encrypted empty text member",
            "safe",
            "warning",
            "an encrypted member cannot be read (ST708 archive-unreadable)",
        ),
        _r(
            "unsafe_zip_pytorch",
            ms,
            "protectai/modelscan tests/data/unsafe_zip_pytorch.pt; tests/test_modelscan.py::test_scan_pytorch",
            "unsafe_zip_pytorch.pt",
            TorchZip(
                Ops(
                    (
                        ("PROTO", 2),
                        ("GLOBAL", "posix system"),
                        ("BINUNICODE", "true"),
                        ("TUPLE1",),
                        ("REDUCE",),
                        ("GLOBAL", "collections OrderedDict"),
                        ("EMPTY_TUPLE",),
                        ("REDUCE",),
                        ("EMPTY_DICT",),
                        ("BINUNICODE", "_metadata"),
                        ("GLOBAL", "collections OrderedDict"),
                        ("EMPTY_TUPLE",),
                        ("REDUCE",),
                        ("BINUNICODE", ""),
                        ("EMPTY_DICT",),
                        ("BINUNICODE", "version"),
                        ("BININT1", 1),
                        ("SETITEM",),
                        ("SETITEM",),
                        ("SETITEM",),
                        ("BUILD",),
                        ("STOP",),
                    )
                ),
                root="unsafe_zip_pytorch",
            ),
            "posix.system('true') left under a state dict in a torch zip's data.pkl",
            "malicious",
            "error",
            cli=True,
        ),
        _r(
            "safe_zip_pytorch",
            ms,
            f"{_MS} fixture pytorch_file_path -> safe_zip_pytorch.pt; test_scan_pytorch",
            "safe_zip_pytorch.pt",
            TorchSave(legacy=False),
            "a torch.save zip of a state dict",
            "safe",
            "clean",
        ),
        _r(
            "safe_old_format_pytorch",
            ms,
            f"{_MS} fixture pytorch_file_path -> safe_old_format_pytorch.pt; test_scan_pytorch",
            "safe_old_format_pytorch.pt",
            TorchSave(legacy=True),
            "a legacy torch.save stream of a state dict",
            "safe",
            "clean",
        ),
        _r(
            "bad_pytorch",
            ms,
            f"{_MS} fixture pytorch_file_path -> bad_pytorch.pt; test_scan_pytorch",
            "bad_pytorch.pt",
            Plain(b"\x89PNG\r\n\x1a\n"),
            "nothing: a PNG signature named .pt",
            "safe",
            "error",
            "as picklescan-bad_pytorch: a .pt that cannot be read to STOP is refused, not vouched for",
        ),
        _r(
            "safe_numpy",
            ms,
            f"{_MS} numpy_file_path -> safe_numpy.npy; test_scan_numpy",
            "safe_numpy.npy",
            Npy("<i8", (2, 3), _ints([1, 2, 3, 4, 5, 6])),
            "nothing: an int64 array",
            "safe",
            "clean",
        ),
        _r(
            "unsafe_numpy",
            ms,
            "protectai/modelscan tests/test_utils.py generate_unsafe_pickle_file -> unsafe_numpy.npy; "
            "tests/test_modelscan.py::test_scan_numpy",
            "unsafe_numpy.npy",
            Plain(
                Stream(
                    _int_array([1, 2, 3, 4, 5, 6], (2, 3)),
                    before=(Call(Ref("builtins", "exec"), ("pass",)),),
                )
            ),
            "builtins.exec('pass') injected before an int array, as a raw pickle named .npy (np.load falls back to pickle)",
            "malicious",
            "error",
        ),
        _r(
            "malicious0",
            ms,
            f"{_MS} fixture file_path -> data/malicious0.pkl (Sour Pickles); test_scan_file_path",
            "malicious0.pkl",
            Plain(_SOUR),
            "__builtin__.globals, compile, eval, getattr, apply",
            "malicious",
            "error",
        ),
        _r(
            "malicious10",
            ms,
            f"{_MS} fixture file_path -> data/malicious10.pkl (INST); test_scan_file_path",
            "malicious10.pkl",
            Plain(Ops((("MARK",), ("STRING", "pass"), ("INST", "__builtin__ exec"), ("STOP",)))),
            "__builtin__.exec('pass') through INST",
            "malicious",
            "error",
        ),
    ]
    return rows


# -- fickling --------------------------------------------------------------------


def _bare(module: str, name: str, *args: Value) -> Stream:
    """A hand-assembled protocol-4 call: no FRAME, no memo."""
    return Stream(Call(Ref(module, name), args), memo=False, frame=False)


def _sg(module: str, name: str, *then: Op) -> tuple[Op, ...]:
    return (("SHORT_BINUNICODE", module), ("SHORT_BINUNICODE", name), ("STACK_GLOBAL",), *then)


def _fickling() -> list[Recipe]:
    fk = "fickling"
    code = marshal.dumps(compile("pass", "<inert>", "exec"))
    rows: list[Recipe] = []

    def add(  # noqa: PLR0917 - a table row
        test: str,
        sample: str,
        body: Body,
        calls: str,
        label: str = "malicious",
        expected: str = "error",
        reason: str = "",
        **kw: bool,
    ) -> None:
        rows.append(
            _r(sample, fk, f"{_FK}::{test}", f"{sample}.pkl", Plain(body), calls, label, expected, reason, **kw)
        )

    add(
        "test_missing_pty_unsafe_imports_ghsa",
        "pty_spawn_ghsa",
        Stream(Build(Call(Ref("pty", "spawn"), ("true",)), "gottem")),
        "pty.spawn('true'), then BUILD",
    )
    add(
        "test_missing_pty_unsafe_imports_pr",
        "pty_spawn_obj",
        Ops((("MARK",), ("GLOBAL", "pty spawn"), ("STRING", "true"), ("OBJ",), ("STOP",))),
        "pty.spawn('true') through OBJ",
    )
    add(
        "test_missing_marshal_and_types",
        "marshal_types",
        Ops(
            (
                ("PROTO", 4),
                ("FRAME", 0),
                *_sg("marshal", "loads"),
                ("MEMOIZE",),
                ("BINGET", 0),
                ("SHORT_BINBYTES", code),
                ("TUPLE1",),
                ("REDUCE",),
                ("MEMOIZE",),
                *_sg("types", "FunctionType"),
                ("MEMOIZE",),
                ("BINGET", 2),
                ("BINGET", 1),
                ("EMPTY_DICT",),
                ("TUPLE2",),
                ("REDUCE",),
                ("MEMOIZE",),
                ("BINGET", 3),
                ("EMPTY_TUPLE",),
                ("REDUCE",),
                ("MEMOIZE",),
                ("SHORT_BINUNICODE", "gottem"),
                ("BUILD",),
                ("STOP",),
            )
        ),
        "types.FunctionType(marshal.loads(<code of 'pass'>), {})()",
    )
    add(
        "test_missing_runpy",
        "runpy_run_path",
        _call("runpy", "run_path", "/dev/null", protocol=5),
        "runpy.run_path('/dev/null')",
    )
    add(
        "test_missing_cprofile",
        "cprofile_run",
        framed(
            (
                ("SHORT_BINUNICODE", "cProfile"),
                ("MEMOIZE",),
                ("SHORT_BINUNICODE", "run"),
                ("MEMOIZE",),
                ("STACK_GLOBAL",),
                ("MEMOIZE",),
                ("REDUCE",),
                ("MEMOIZE",),
            ),
            5,
        ),
        "cProfile.run imported, REDUCE with no argument tuple (the loader fails before the call); "
        "the FRAME says the frame's true length (the suite's says 58)",
    )
    add(
        "test_missing_ctypes",
        "ctypes_getattr",
        Stream(Call(Call(Ref("builtins", "getattr"), (Call(Ref("ctypes", "CDLL"), (None,)), "getpid")), ())),
        "builtins.getattr(ctypes.CDLL(None), 'getpid')() (the suite calls system from libc)",
    )
    add(
        "test_missing_pydoc",
        "pydoc_locate",
        Stream(Call(Call(Ref("pydoc", "locate"), ("os.getcwd",)), ())),
        "pydoc.locate('os.getcwd')() (the suite locates os.system)",
    )
    add(
        "test_missing_importlib",
        "importlib_import_module",
        Stream(
            Call(Call(Ref("builtins", "getattr"), (Call(Ref("importlib", "import_module"), ("os",)), "getcwd")), ())
        ),
        "getattr(importlib.import_module('os'), 'getcwd')()",
    )
    add(
        "test_missing_code",
        "code_interactive",
        Stream(
            Call(
                Call(Ref("builtins", "getattr"), (Call(Ref("code", "InteractiveInterpreter"), ()), "runsource")),
                ("pass",),
            )
        ),
        "getattr(code.InteractiveInterpreter(), 'runsource')('pass')",
    )
    add(
        "test_missing_multiprocessing",
        "multiprocessing_spawnv_passfds",
        _call("multiprocessing.util", "spawnv_passfds", b"/bin/true", [b"/bin/true"], (), protocol=5),
        "multiprocessing.util.spawnv_passfds(b'/bin/true', [b'/bin/true'], ())",
    )
    add(
        "test_builtins_import_bypass",
        "builtins_import_getattr",
        Ops(
            (
                ("GLOBAL", "builtins __import__"),
                ("STRING", "os"),
                ("TUPLE1",),
                ("REDUCE",),
                ("PUT", 0),
                ("POP",),
                ("GLOBAL", "builtins getattr"),
                ("GET", 0),
                ("STRING", "getcwd"),
                ("TUPLE2",),
                ("REDUCE",),
                ("PUT", 1),
                ("POP",),
                ("GET", 1),
                ("EMPTY_TUPLE",),
                ("REDUCE",),
                ("STOP",),
            )
        ),
        "getattr(builtins.__import__('os'), 'getcwd')() through the memo",
    )
    add(
        "test_safe_builtins_not_flagged",
        "builtins_len",
        Ops((("GLOBAL", "builtins len"), ("EMPTY_LIST",), ("TUPLE1",), ("REDUCE",), ("STOP",))),
        "builtins.len([])",
        "safe",
        "error",
        "len is harmless, but stcheck's allowlists are closed lists of what the model loaders need; any other "
        "call is refused rather than judged one by one (fickling keeps a list of safe builtins instead)",
    )
    add(
        "test_safe_builtin_dict_not_flagged",
        "builtins_dict",
        Ops((("GLOBAL", "builtins dict"), ("EMPTY_TUPLE",), ("REDUCE",), ("STOP",))),
        "builtins.dict()",
        "safe",
        "clean",
        "issue 35 tier two lists builtins.dict as data-only",
    )
    add(
        "test_unsafe_builtins_still_flagged",
        "builtins_getattr",
        Ops(
            (
                ("GLOBAL", "builtins getattr"),
                ("STRING", "os"),
                ("STRING", "system"),
                ("TUPLE2",),
                ("REDUCE",),
                ("STOP",),
            )
        ),
        "builtins.getattr('os', 'system')",
    )
    add(
        "test_unsafe_builtin_eval_still_flagged",
        "builtins_eval",
        Ops((("GLOBAL", "builtins eval"), ("STRING", CODE), ("TUPLE1",), ("REDUCE",), ("STOP",))),
        "builtins.eval('1+1')",
        cli=True,
    )
    add(
        "test_operator_methodcaller",
        "operator_methodcaller",
        _operator_chain("methodcaller", ("system", "true")),
        "_operator.methodcaller('system', 'true')(builtins.__import__('os'))",
    )
    add(
        "test_distutils_write_file",
        "distutils_write_file",
        Ops(
            (
                ("PROTO", 4),
                *_sg("distutils.file_util", "write_file"),
                ("SHORT_BINUNICODE", "/dev/null"),
                ("MARK",),
                ("SHORT_BINUNICODE", "inert"),
                ("LIST",),
                ("TUPLE2",),
                ("REDUCE",),
                ("STOP",),
            )
        ),
        "distutils.file_util.write_file('/dev/null', ['inert'])",
    )
    add("test_io_fileio", "io_fileio", _bare("_io", "FileIO", "/dev/null"), "_io.FileIO('/dev/null')")
    add(
        "test_numpy_f2py_getlincoef",
        "numpy_getlincoef",
        _bare("numpy.f2py.crackfortran", "getlincoef", CODE, {}),
        "numpy.f2py.crackfortran.getlincoef('1+1', {})",
    )
    for module, cls in (
        ("smtplib", "SMTP"),
        ("imaplib", "IMAP4"),
        ("ftplib", "FTP"),
        ("poplib", "POP3"),
        ("telnetlib", "Telnet"),
        ("nntplib", "NNTP"),
    ):
        add(
            "test_network_protocol_ssrf",
            f"ssrf_{module}",
            Ops(
                (
                    ("PROTO", 4),
                    ("GLOBAL", f"{module} {cls}"),
                    ("EMPTY_DICT",),
                    ("TUPLE1",),
                    ("REDUCE",),
                    ("EMPTY_DICT",),
                    ("BUILD",),
                    ("STOP",),
                )
            ),
            f"{module}.{cls}({{}}) (a dict for a host: fails before connecting; the suite names 127.0.0.1)",
        )
    add(
        "test_asyncio_subprocess",
        "asyncio_subprocess",
        _call("asyncio.unix_events", "_UnixSubprocessTransport._start", {}, "true", True, None, None, None, 0),
        "asyncio.unix_events._UnixSubprocessTransport._start({}, 'true', True, ...)",
    )
    add(
        "test_obj_pop_call_invisibility",
        "obj_pop",
        Ops(
            (
                ("PROTO", 4),
                ("MARK",),
                *_sg("smtplib", "SMTP"),
                ("SHORT_BINUNICODE", ""),
                ("OBJ",),
                ("POP",),
                ("NONE",),
                ("STOP",),
            )
        ),
        "smtplib.SMTP('') through OBJ, its result popped",
    )
    add(
        "test_missing_uuid",
        "uuid_command",
        _bare("uuid", "_get_command_stdout", "true", "PROOF_OF_CONCEPT"),
        "uuid._get_command_stdout('true', 'PROOF_OF_CONCEPT')",
    )
    add(
        "test_missing_aix_support",
        "aix_support",
        _bare("_aix_support", "_read_cmd_output", "true"),
        "_aix_support._read_cmd_output('true')",
    )
    add(
        "test_missing_osx_support",
        "osx_support",
        _bare("_osx_support", "_find_build_tool", "true"),
        "_osx_support._find_build_tool('true')",
    )
    add(
        "test_dotted_attr_via_stdlib_module",
        "pathlib_os_system",
        Ops((("PROTO", 4), *_sg("pathlib", "os.getcwd"), ("EMPTY_TUPLE",), ("REDUCE",), ("STOP",))),
        "pathlib's os.getcwd() through a dotted STACK_GLOBAL name (the suite reaches os.system)",
    )
    add(
        "test_ml_allowlist_not_shadowed_by_unsafe_imports_ml",
        "ast_parse_import",
        Ops((("PROTO", 4), *_sg("ast", "parse"), ("STOP",))),
        "ast.parse imported, not called",
        reason="loading returns a function from outside every allowlist; stcheck refuses the import as fickling does",
    )
    for module in ("_interpreters", "_xxsubinterpreters"):
        add(
            "test_private_stdlib_interpreters_blocklisted",
            f"{module.strip('_')}_create",
            Ops((("PROTO", 4), *_sg(module, "create"), ("EMPTY_TUPLE",), ("REDUCE",), ("STOP",))),
            f"{module}.create()",
        )
    add(
        "test_private_stdlib_allowlist",
        "codecs_encode_import",
        Ops((("PROTO", 4), *_sg("_codecs", "encode"), ("STOP",))),
        "_codecs.encode imported, not called",
        "safe",
        "clean",
        "numpy's protocol-2 arrays call _codecs.encode, so it is on stcheck's allowlist",
    )
    add(
        "test_private_stdlib_allowlist",
        "future_annotations_import",
        Ops((("PROTO", 4), *_sg("__future__", "annotations"), ("STOP",))),
        "__future__.annotations imported, not called",
        "safe",
        "error",
        "nothing is called, but the loaded object is a global from outside stcheck's closed allowlists; stcheck "
        "refuses every such import rather than keep a second list of inert ones",
    )
    add(
        "test_private_stdlib_allowlist",
        "future_dotted_import",
        Ops((("PROTO", 4), *_sg("__future__", "_ssl.RAND_bytes"), ("STOP",))),
        "__future__'s _ssl.RAND_bytes through a dotted name",
    )
    hidden = b"cos\nsystem\nVtrue\n\x85R"
    add(
        "test_frame_boundary_divergence",
        "frame_boundary_divergence",
        Ops(
            (
                ("PROTO", 5),
                ("NONE",),
                ("UNICODE", "a" * (8192 * 16 - 17)),
                ("POP",),
                ("MARK",),
                ("FRAME", 2),
                ("BINBYTES", None),
                ("RAW", b"\x07\x01\x00\x00\x00\x00"),
                ("RAW", (hidden + b"(").ljust(256 + 5, b"N")),
                ("POP_MARK",),
                ("STOP",),
            )
        ),
        "a FRAME of 2 bytes holding a BINBYTES of 263: pickle.load(file) runs the os.system('true') inside",
    )
    for desc, body in (
        ("BINBYTES", b"B" + struct.pack("<I", 20) + b"A" * 20),
        ("SHORT_BINUNICODE", b"\x8c\x14" + b"A" * 20),
        ("GLOBAL_module", b"cmacos\nsystem\n"),
        ("GLOBAL_attr", b"cos\nsystem\n"),
        ("UNICODE", b"Vhello world\n"),
        ("BININT", b"J" + struct.pack("<i", 7)),
    ):
        declared = {
            "BINBYTES": 5,
            "SHORT_BINUNICODE": 3,
            "GLOBAL_module": 4,
            "GLOBAL_attr": 7,
            "UNICODE": 5,
            "BININT": 2,
        }[desc]
        add(
            "test_frame_boundary_straddle_variants",
            f"frame_straddle_{desc}",
            Ops((("PROTO", 5), ("FRAME", declared), ("RAW", body), ("STOP",))),
            f"a FRAME of {declared} bytes that a {desc} opcode overruns",
            reason=""
            if desc.startswith("GLOBAL")
            else "a frame the opcodes overrun: pickle.load(file) and pickle.loads read it differently, so stcheck refuses it",
        )
    add(
        "test_frame_boundary_straddle_variants",
        "frame_straddle_nested_frame",
        Ops((("PROTO", 5), ("FRAME", 30), ("NONE",), ("FRAME", 2), ("NONE",), ("STOP",))),
        "a FRAME opening inside another FRAME",
        reason="pickle refuses a frame inside a frame; stcheck must not read past what the loader would",
    )
    expansion = "trailofbits/fickling test/test_expansion_attack_analysis.py::TestExpansionAttackAnalysis"
    for test, sample, ops, calls in (
        (
            "test_memo_expansion_detection",
            "memo_expansion",
            (("EMPTY_LIST",), ("MEMOIZE",), *((("BINGET", 0), ("APPEND",)) * 60)),
            "nothing: a list that holds itself 60 times (memo GETs)",
        ),
        (
            "test_dup_expansion_detection",
            "dup_expansion",
            (("EMPTY_LIST",), *((("DUP",),) * 150)),
            "nothing: one empty list DUPed 150 times on the stack",
        ),
    ):
        rows.append(
            _r(
                sample,
                fk,
                f"{expansion}::{test}",
                f"{sample}.pkl",
                Plain(Ops((("PROTO", 4), *ops, ("STOP",)))),
                calls,
                "malicious",
                "clean",
                "fickling calls it suspicious (a Billion-Laughs shape); loading builds one small list through "
                "references and calls nothing, which is the question stcheck answers",
            )
        )
    for desc, value in (
        ("small_list", [1, 2, 3, 4]),
        ("large_unframed_bytes", b"x" * 100000),
        ("interleaved", [1, b"y" * 100000, 2]),
        ("several_frames", list(range(200000))),
        ("nested", {"a": [1, 2, {"b": (3, 4)}], "c": [5, 6]}),
    ):
        for protocol in (2, 4, 5):
            add(
                "test_well_formed_frames_are_not_flagged",
                f"well_formed_{desc}_v{protocol}",
                Dumps(value, protocol),
                f"nothing: pickle.dumps({desc}, protocol={protocol})",
                "safe",
                "clean",
            )
    return rows


# -- ModelAudit ------------------------------------------------------------------


def _modelaudit() -> list[Recipe]:
    ma = "modelaudit"
    rows: list[Recipe] = []

    def asset(  # noqa: PLR0917 - a table row
        path: str,
        test: str,
        body: Body | Container,
        calls: str,
        label: str,
        expected: str,
        reason: str = "",
        **kw: bool,
    ) -> None:
        name = path.rsplit("/", 1)[1]
        stem = name.removesuffix(".pkl")
        container = Plain(body) if isinstance(body, (Stream, Ops, Dumps, Concat, bytes)) else body
        rows.append(_r(stem, ma, f"{_MA} {path}; {test}", name, container, calls, label, expected, reason, **kw))

    gen_exploits = "tests/test_bug1_confidence_exploit.py::test_exploit_files_detect_dangerous_functions"
    for stem, module, name, args in (
        ("exploit1_basic_torch_bypass", "os", "system", ("true",)),
        ("exploit2_advanced_torch_bypass", "subprocess", "call", ("true",)),
        ("exploit3_sophisticated_hybrid", "os", "system", ("true",)),
        ("exploit4_supply_chain_attack", "os", "system", ("true",)),
        ("exploit5_ultra_high_confidence", "os", "system", ("true",)),
        ("exploit6_ordereddict_bypass", "os", "system", ("true",)),
        ("exploit7_nested_collections", "subprocess", "Popen", (["true"],)),
    ):
        asset(
            f"tests/assets/exploits/{stem}.pkl",
            gen_exploits,
            _call(module, name, *args),
            f"{module}.{name}{args!r}",
            "malicious",
            "error",
        )
    asset(
        "tests/assets/exploits/exploit9_manual_construction.pkl",
        gen_exploits,
        Ops(
            (
                ("PROTO", 4),
                *(
                    op
                    for module, name in (
                        ("torch", "Tensor"),
                        ("torch.nn", "Module"),
                        ("torch.nn", "Linear"),
                        ("torch.nn", "Conv2d"),
                        ("collections", "OrderedDict"),
                    )
                    for op in _sg(module, name, ("POP",))
                ),
                *_sg("os", "system"),
                ("SHORT_BINUNICODE", "true"),
                ("TUPLE1",),
                ("REDUCE",),
                ("STOP",),
            )
        ),
        "torch.Tensor, torch.nn.Module, Linear, Conv2d, collections.OrderedDict imported as cover, then os.system('true')",
        "malicious",
        "error",
    )
    asset(
        "tests/assets/pickles/memo_attack.pkl",
        "tests/assets/generators/generate_advanced_pickle_tests.py generate_memo_attack; "
        "tests/scanners/test_pickle_scanner.py",
        _call("subprocess", "call", ["#", "MEMO_ATTACK_PAYLOAD"], protocol=5),
        "subprocess.call(['#', ...]) (inert in the suite already: no such program)",
        "malicious",
        "error",
    )
    asset(
        "tests/assets/pickles/stack_global_attack.pkl",
        "tests/assets/generators/generate_advanced_pickle_tests.py generate_stack_global_attack; "
        "tests/scanners/test_pickle_scanner.py",
        _call("posix", "system", "# STACK_GLOBAL_PAYLOAD", protocol=5),
        "posix.system('# ...') (a shell comment)",
        "malicious",
        "error",
    )
    asset(
        "tests/assets/pickles/multiple_stream_attack.pkl",
        "tests/assets/generators/generate_advanced_pickle_tests.py; "
        "tests/scanners/test_pickle_scanner.py (multiple_stream_attack)",
        Concat((Dumps({"model": "safe_weights"}, 5), _call("builtins", "eval", "'HIDDEN_ATTACK_PAYLOAD'", protocol=5))),
        "a benign dict stream, then a second stream calling builtins.eval",
        "malicious",
        "error",
        cli=True,
    )
    for alias in ("nt", "posix"):
        asset(
            f"tests/assets/pickles/{alias}_alias_attack.pkl",
            "tests/assets/generators/generate_os_alias_tests.py",
            Stream(Ref(alias, "system")),
            f"{alias}.system imported, not called",
            "malicious",
            "error",
        )
    asset(
        "tests/assets/samples/pickles/evil.pickle",
        "tests/scanners/test_oci_layer_scanner.py (evil.pickle in a layer tar)",
        _call("posix", "system", "true"),
        "posix.system('true') (the suite removes a file)",
        "malicious",
        "error",
    )
    asset(
        "tests/assets/samples/pickles/malicious_system_call.pkl",
        "tests/assets/generators/generate_security_assets.py",
        _call("posix", "system", "true"),
        "posix.system('true')",
        "malicious",
        "error",
    )
    asset(
        "tests/assets/scenarios/security_scenarios/mixed_malicious_model/model.pkl",
        "security scenario mixed_malicious_model",
        _call("builtins", "eval", CODE),
        "builtins.eval('1+1') (the suite fetches a URL)",
        "malicious",
        "error",
    )
    asset(
        "tests/assets/samples/pickles/dill_func.pkl",
        "tests/scanners/test_pickle_scanner.py::TestPickleScanner::test_scan_dill_pickle",
        Stream(
            Call(
                Ref("dill._dill", "_create_function"),
                (Call(Ref("dill._dill", "_create_code"), (0, 0)), {}, "<lambda>", None, None),
            )
        ),
        "dill._dill._create_function(dill._dill._create_code(...), ...)",
        "malicious",
        "error",
        "dill is not installed: the same imports and call shape, with code fields that fail to build",
    )
    asset(
        "tests/assets/scenarios/license_scenarios/agpl_component/agpl_model.pkl",
        "license scenario agpl_component (neural_network.py)",
        Stream(
            Build(
                New(Ref("__main__", "AGPLNeuralNetwork")),
                {"layers": [2, 2], "weights": [_int_array([1, 2, 3, 4], (2, 2), "numpy.core.multiarray")]},
            )
        ),
        "__main__.AGPLNeuralNetwork rebuilt with numpy arrays as state",
        "safe",
        "error",
        "the suite uses it for license checks; loading it resolves __main__.AGPLNeuralNetwork, whatever the "
        "loading program's __main__ defines: outside every allowlist",
    )
    for stem, value in (
        ("safe_data", {"safe": "data"}),
        ("simple_nested", {"outer_data": "legitimate", "inner_pickle": b"\x80\x04N."}),
        ("nested_pickle_raw", {"legitimate_data": "weights", "hidden_payload": _NESTED_SYSTEM}),
        ("nested_pickle_base64", {"model_config": "ResNet50", "encoded_weights": "gASVPwAAAAAAAACMCGJ1aWx0aW5z"}),
        ("nested_pickle_hex", {"architecture": "transformer", "hex_data": _NESTED_SYSTEM.hex()}),
        ("decode_exec_chain", {"suspicious_code": "b3Muc3lzdGVtKCd0cnVlJyk=", "_internal_config": "os.system('true')"}),
    ):
        label = "safe" if stem in {"safe_data", "simple_nested"} else "malicious"
        asset(
            f"tests/assets/samples/pickles/{stem}.pkl",
            "tests/assets/generators/generate_nested_pickle_assets.py; tests/test_nested_pickle_integration.py",
            Dumps(value, 4),
            "nothing: a dict of strings and bytes"
            + ("" if label == "safe" else " (some of them an encoded pickle or code text)"),
            label,
            "clean",
            ""
            if label == "safe"
            else "loading returns the strings as data; nothing in the stream decodes or runs them, so no loader "
            "runs code (ModelAudit flags the encoded text heuristically; a later pickle.loads by the program "
            "is that program's code, not the file's)",
        )
    asset(
        "tests/assets/samples/pytorch/malicious_eval.pt",
        "tests/assets/generators/generate_security_assets.py",
        Zip((("version", b"3"), ("data.pkl", _EVAL4))),
        "builtins.eval in a root-level data.pkl of a zip named .pt",
        "malicious",
        "error",
    )
    asset(
        "tests/assets/samples/pytorch/safe_model.pt",
        "tests/assets/generators/generate_security_assets.py",
        Zip((("version", b"3"), ("data.pkl", Dumps({"weights": {"layer1": [0.1, 0.2]}}, 4)))),
        "nothing: a dict of lists in a root-level data.pkl",
        "safe",
        "clean",
    )
    asset(
        "tests/assets/samples/archives/path_traversal.zip",
        "tests/assets/generators/generate_security_assets.py (path_traversal.zip)",
        Zip(
            (
                ("../../../etc/evil.txt", b"inert"),
                ("model/malicious.pkl", _call("posix", "system", "true")),
            )
        ),
        "a member named ../../../etc/evil.txt, and posix.system in model/malicious.pkl",
        "malicious",
        "error",
        cli=True,
    )
    asset(
        "tests/assets/samples/archives/safe_model.zip",
        "tests/assets/generators/generate_security_assets.py (safe_model.zip)",
        Zip((("model/weights.txt", b"0.1 0.2"), ("README.txt", b"a model"))),
        "nothing: two text members",
        "safe",
        "clean",
    )
    asset(
        "tests/assets/samples/archives/malicious.7z",
        "tests/assets/generators/generate_7z_test_assets.py generate_malicious_7z; tests/scanners/test_sevenzip_scanner.py",
        SevenZip("malicious_model.pkl", _EVAL4),
        "builtins.eval in malicious_model.pkl inside a 7z",
        "malicious",
        "warning",
        "stcheck does not open 7z archives: it must say so (ST708 archive-unreadable)",
    )
    asset(
        "tests/assets/samples/archives/path_traversal.7z",
        "tests/assets/generators/generate_7z_test_assets.py generate_path_traversal_7z; tests/scanners/test_sevenzip_scanner.py",
        SevenZip("../../../dangerous_file.pkl", _EVAL4),
        "builtins.eval in a 7z member named ../../../dangerous_file.pkl",
        "malicious",
        "warning",
        "stcheck does not open 7z archives: it must say so (ST708 archive-unreadable)",
    )
    rows.append(
        _r(
            "malicious.pkl.gz",
            ma,
            f"{_MA} tests/scanners/test_compressed_scanner.py::test_compressed_scanner_surfaces_malicious_inner_findings",
            "malicious.pkl.gz",
            Compressed("gzip", Stream({"payload": Call(EVAL, (CODE,))})),
            "builtins.eval inside a dict, gzip-compressed",
            "malicious",
            "error",
            "issue 35 item 7: a compressed pickle is unpickled by joblib.load and by users' gzip.open + pickle.load",
            cli=True,
        )
    )
    rows.append(
        _r(
            "safe_model.pkl.gz",
            ma,
            f"{_MA} tests/scanners/test_compressed_scanner.py::test_compressed_scanner_routes_benign_inner_payload",
            "safe_model.pkl.gz",
            Compressed("gzip", Dumps({"layer": [1, 2, 3]})),
            "nothing: a dict of a list, gzip-compressed",
            "safe",
            "clean",
        )
    )
    return rows


RECIPES: Final[tuple[Recipe, ...]] = (*_picklescan(), *_modelscan(), *_fickling(), *_modelaudit())

# Cases of the suites that are not rebuilt here, and why.
LEFT_OUT: Final = (
    (
        "modelscan",
        "tests/test_modelscan.py::test_scan_keras / test_scan_tensorflow",
        "need keras and tensorflow to write HDF5 and SavedModel files",
    ),
    (
        "modelaudit",
        "tests/assets/samples/keras/*.h5, tests/assets/samples/tensorflow/*",
        "need h5py/tensorflow; stcheck's Keras Lambda check is tested elsewhere",
    ),
    ("modelaudit", "tests/assets/samples/safetensors/*", "safetensors metadata heuristics, not pickles"),
    ("modelaudit", "tests/assets/samples/jinja2/*", "chat templates, not model files stcheck loads"),
    (
        "modelaudit",
        "tests/assets/exploits/exploit_ultimate_50pct.pkl",
        "the same os.system call as exploit9 behind more torch imports",
    ),
    (
        "fickling",
        "test/test_pytorch.py, test/test_polyglot.py",
        "need torchvision models and fickling's polyglot writer",
    ),
)
