# Strategy: every hint that says how to install an extra works as written
# (issue 24).  stcheck is on no package index: `pip install 'stcheck[remote]'`
# finds nothing today and whatever squats the name tomorrow.  The one hint
# function (validator.config.install.install_hint) names this checkout, the
# checkout pip installed from (PEP 610's direct_url.json), or the extra's own
# PyPI packages; each command and library error that needs an extra uses it.
from __future__ import annotations

import builtins
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from validator._errors import SourceError
from validator.cli.main import main
from validator.config import install

ROOT = Path(__file__).resolve().parent.parent
CHECKOUT_HINT = f"pip install '{ROOT}[remote]' (the remote extra, from this checkout of stcheck)"


def test_from_a_checkout_the_hint_names_the_checkout() -> None:
    assert install.install_hint("remote") == CHECKOUT_HINT


class _Dist:
    def __init__(self, direct_url: str | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        return self.direct_url if name == "direct_url.json" else None


def test_installed_from_a_checkout_the_hint_names_that_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    clone = tmp_path / "my clone"
    clone.mkdir()
    (clone / "pyproject.toml").write_text('[project]\nname = "stcheck"\n')
    monkeypatch.setattr(install, "_PACKAGE_PARENT", str(tmp_path / "site-packages"))
    url = json.dumps({"url": (clone.as_uri()), "dir_info": {}})
    monkeypatch.setattr(metadata, "distribution", lambda name: _Dist(url))
    assert (
        install.install_hint("cluster")
        == f"pip install '{clone}[cluster]' (the cluster extra, from this checkout of stcheck)"
    )


def test_otherwise_the_hint_names_the_extras_packages_on_pypi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    monkeypatch.setattr(install, "_PACKAGE_PARENT", str(tmp_path))
    monkeypatch.setattr(metadata, "distribution", lambda name: _Dist(None))
    declared = [
        'urllib3>=2.2; extra == "remote"',
        'numpy>=1.24; extra == "scan"',
        'tomli>=2; python_version < "3.11" and extra == "scan"',
    ]
    monkeypatch.setattr(metadata, "requires", lambda name: declared)
    assert install.install_hint("remote") == "pip install 'urllib3>=2.2' (the remote extra's packages, from PyPI)"
    assert install.install_hint("scan") == (
        "pip install 'numpy>=1.24' 'tomli>=2; python_version < \"3.11\"' (the scan extra's packages, from PyPI)"
    )


def test_with_nothing_to_go_on_the_hint_says_stcheck_is_not_on_pypi(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from importlib import metadata

    def missing(name: str) -> Any:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(install, "_PACKAGE_PARENT", str(tmp_path))
    monkeypatch.setattr(metadata, "distribution", missing)
    monkeypatch.setattr(metadata, "requires", missing)
    hint = install.install_hint("postgres")
    assert (
        hint
        == "pip install '/path/to/stcheck[postgres]' from a clone of the stcheck repository (stcheck itself is not on PyPI)"
    )


def test_no_source_file_offers_the_package_name_an_index_does_not_have() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in [*ROOT.glob("validator/**/*.py"), ROOT / "README.md", ROOT / "fuzz" / "README.md"]
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"pip install '?stcheck\[", line)
    ]
    assert offenders == []


# --- every place that needs an extra ----------------------------------------------------


def _hide(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    """Make ``import NAME`` fail as it does when the package is not installed."""
    real = builtins.__import__

    def fake(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.partition(".")[0] in names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real(name, *args, **kwargs)

    for name in list(sys.modules):
        if name.partition(".")[0] in names or name == "validator.remote" or name.startswith("validator.remote."):
            monkeypatch.delitem(sys.modules, name)  # re-imported, so that the hidden package is imported again
    monkeypatch.setattr(builtins, "__import__", fake)


def test_check_of_a_url_without_the_remote_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _hide(monkeypatch, "urllib3")
    assert main(["check", "--no-config", "https://example.invalid/m.safetensors"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == f"stcheck: https://example.invalid/m.safetensors: remote checks need urllib3, which is not installed: {CHECKOUT_HINT}\n"
    )


def test_download_without_the_remote_extra(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _hide(monkeypatch, "urllib3")
    assert main(["download", "https://example.invalid/m.safetensors", "-d", "out"]) == 2
    assert capsys.readouterr().err == f"stcheck download: needs urllib3, which is not installed: {CHECKOUT_HINT}\n"


def test_hf_addresses_without_huggingface_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("urllib3")
    from validator._errors import RemoteError
    from validator.remote._hub import parse_hf, resolve

    _hide(monkeypatch, "huggingface_hub")
    with pytest.raises(RemoteError) as caught:
        resolve(parse_hf("hf://org/model"), timeout=1)
    assert str(caught.value) == f"hf:// addresses need huggingface_hub: {CHECKOUT_HINT}"


def test_a_cluster_without_dask(monkeypatch: pytest.MonkeyPatch) -> None:
    from validator.pipeline.cluster import ClusterError, _import_distributed

    _hide(monkeypatch, "distributed")
    with pytest.raises(ClusterError) as caught:
        _import_distributed()
    assert (
        str(caught.value)
        == f"--cluster needs Dask: pip install '{ROOT}[cluster]' (the cluster extra, from this checkout of stcheck)"
    )


def test_a_postgres_cache_without_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    from validator.pipeline.cache import CacheError, PostgresCache

    _hide(monkeypatch, "psycopg")
    with pytest.raises(CacheError) as caught:
        PostgresCache("postgresql://nobody@127.0.0.1:9/x")
    assert str(caught.value) == (
        f"a PostgreSQL cache needs psycopg: pip install '{ROOT}[postgres]' (the postgres extra, from this checkout of stcheck)"
    )


def test_a_deep_scan_without_numpy(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "numpy" else real(name, *a))
    assert main(["scan", "--no-config", "--deep", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"stcheck scan: --deep needs numpy: pip install '{ROOT}[scan]' (the scan extra, from this checkout of stcheck)\n"
    )


def test_the_library_says_the_same_where_it_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    from validator.pipeline.plan import check_remote

    _hide(monkeypatch, "urllib3")
    with pytest.raises(SourceError, match=re.escape(CHECKOUT_HINT)):
        check_remote("https://example.invalid/x.safetensors", "strict", None)
