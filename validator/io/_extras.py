# Strategy: the one place that says how to install an optional extra, for
# the command line (through validator.config.install) and for the library's
# entry points (needs_extra: validator.open, save, validator.compat.*), which
# sit in layers below config.
# stcheck is on no package index, so a hint that installs the extra by the
# package's name finds nothing, or, worse, whatever someone registers under
# that name later.  A hint must work as written, so it names a source that
# exists:
#   1. the checkout this package runs from (a source tree: the folder above
#      validator/ holds stcheck's pyproject.toml), as a path;
#   2. else the checkout pip installed it from, named in the distribution's
#      direct_url.json (PEP 610), when that folder still holds the project;
#   3. else the extra's own requirements, read from the installed metadata:
#      packages that are on PyPI under their own names;
#   4. else a placeholder path to a clone, saying that stcheck is not on PyPI.
# Paths are str, handled with os.path as in the rest of the package.
# ruff: noqa: PTH100, PTH118, PTH120, PTH123
from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["PACKAGE_PARENT", "MissingExtraError", "hint_for", "needs_extra"]

_DIST = "stcheck"
PACKAGE_PARENT: Final = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
)  # above validator/io/


def _is_checkout(folder: str) -> bool:
    """Whether ``folder`` holds stcheck's own pyproject.toml."""
    try:
        with open(os.path.join(folder, "pyproject.toml"), "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return False
    return re.search(rb'(?m)^name\s*=\s*"stcheck"', head) is not None


def _installed_from() -> str | None:
    """The local folder pip installed stcheck from (PEP 610), if it is still a checkout."""
    from importlib import metadata  # noqa: PLC0415 - only on the error path that needs a hint
    from urllib.parse import unquote, urlparse  # noqa: PLC0415 - as above

    try:
        text = metadata.distribution(_DIST).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    try:
        url = json.loads(text or "{}").get("url", "")
    except (ValueError, AttributeError):
        return None
    parsed = urlparse(url) if isinstance(url, str) else None
    if parsed is None or parsed.scheme != "file":
        return None
    folder = unquote(parsed.path)
    return folder if _is_checkout(folder) else None


def _requirements(extra: str) -> list[str]:
    """The extra's requirements from the installed metadata (markers other than the extra kept)."""
    from importlib import metadata  # noqa: PLC0415 - only on the error path that needs a hint

    try:
        declared = metadata.requires(_DIST) or []
    except metadata.PackageNotFoundError:
        return []
    wanted = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    found = []
    for requirement in declared:
        spec, _, marker = requirement.partition(";")
        if not wanted.search(marker):
            continue
        rest = wanted.sub("", marker).strip()
        rest = re.sub(r"^\s*and\s+|\s+and\s*$", "", rest).strip()
        found.append(spec.strip() + (f"; {rest}" if rest else ""))
    return found


def hint_for(extra: str, package_parent: str = PACKAGE_PARENT) -> str:
    """A `pip install` command, working as written, that installs ``extra``
    (``package_parent``: the folder above the running validator/)."""
    checkout = package_parent if _is_checkout(package_parent) else _installed_from()
    if checkout is not None:
        return f"pip install {shlex.quote(f'{checkout}[{extra}]')} (the {extra} extra, from this checkout of stcheck)"
    packages = _requirements(extra)
    if packages:
        return f"pip install {' '.join(map(shlex.quote, packages))} (the {extra} extra's packages, from PyPI)"
    return (
        f"pip install '/path/to/stcheck[{extra}]' from a clone of the stcheck repository "
        "(stcheck itself is not on PyPI)"
    )


# The third-party packages of the library's entry points -> the extra that
# installs them.  A framework with no extra of its own (JAX, MLX, Paddle) is
# named by its package on PyPI: the user chose that framework.
_EXTRA_OF: Final = {"numpy": "numpy", "ml_dtypes": "numpy", "torch": "torch"}
_ON_PYPI: Final = {"paddle": "paddlepaddle", "jax": "jax", "jaxlib": "jax", "mlx": "mlx", "tensorflow": "tensorflow"}


class MissingExtraError(ModuleNotFoundError):
    """A library entry point needs a package that is not installed; the
    message names the extra (or the framework's package) that installs it.

    A ModuleNotFoundError, so ``except ImportError`` still catches it."""


@contextlib.contextmanager
def needs_extra(what: str) -> Iterator[None]:
    """Turn a missing third-party package inside the block into a
    MissingExtraError saying that ``what`` needs it and how to install it.

    A missing module of stcheck itself is a bug, and is not hidden."""
    try:
        yield
    except ModuleNotFoundError as exc:  # a MissingExtraError too: the outermost entry point names itself
        top = (exc.name or "").partition(".")[0]
        if not top or top == "validator":
            raise
        extra = _EXTRA_OF.get(top)
        how = hint_for(extra) if extra is not None else f"pip install {_ON_PYPI.get(top, top)}"
        msg = f"{what} needs {top}, which is not installed: {how}"
        raise MissingExtraError(msg, name=top) from exc
