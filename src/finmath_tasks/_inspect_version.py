"""The Inspect releases this package supports, checked when it is imported.

``INSPECT_FLOOR`` is the oldest release every task, the demo, ``finmath`` and the
quick tests were run with (CI's floor environment runs exactly it); ``INSPECT_BELOW``
is the first release we do not accept: Inspect versions ``0.MINOR.PATCH``, and a
new minor (0.4) is where an incompatible change is announced. ``pyproject.toml``
declares the same range (``tests/test_inspect_version.py`` checks they agree).

Without this check an older Inspect fails deep inside an import (``cannot import
name ...``) and ``inspect eval`` only says that no task was found.
"""

from __future__ import annotations

import os
import re
import warnings
from importlib.metadata import PackageNotFoundError, version

INSPECT_FLOOR = "0.3.275"
INSPECT_BELOW = "0.4"
SUPPORTED = f"inspect-ai>={INSPECT_FLOOR},<{INSPECT_BELOW}"
ANY_INSPECT_ENV = "FINMATH_ANY_INSPECT"
"""Set to 1 to try an unsupported Inspect anyway (a warning instead of the error): for
trying a new Inspect release before the range is raised, or finding the floor."""


class UnsupportedInspectError(ImportError):
    """The installed inspect-ai is outside the supported range."""


def release(text: str) -> tuple[int, ...]:
    """The numeric release of a version string: ``0.3.201.dev4+g12`` -> ``(0, 3, 201)``."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if not match:
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def supported(installed: str) -> bool:
    """Is ``installed`` in ``[INSPECT_FLOOR, INSPECT_BELOW)``? (``0.3`` == ``0.3.0``)"""

    def padded(v: tuple[int, ...]) -> tuple[int, ...]:
        return v + (0,) * (4 - len(v))

    return (
        padded(release(INSPECT_FLOOR))
        <= padded(release(installed))
        < padded(release(INSPECT_BELOW))
    )


def installed_inspect() -> str | None:
    try:
        return version("inspect-ai")
    except PackageNotFoundError:
        return None


def check_inspect(installed: str | None = None) -> None:
    """Raise ``UnsupportedInspectError`` naming the installed and supported versions."""
    found = installed_inspect() if installed is None else installed
    if found is None:
        raise UnsupportedInspectError(
            f"finmath-tasks needs {SUPPORTED}, and inspect-ai is not installed: "
            f"pip install '{SUPPORTED}'"
        )
    try:
        ok = supported(found)
    except ValueError:  # an unreadable version string: let Inspect itself decide
        return
    if not ok and os.environ.get(ANY_INSPECT_ENV) == "1":
        warnings.warn(
            f"finmath-tasks supports {SUPPORTED}; running with inspect-ai {found} "
            f"because {ANY_INSPECT_ENV}=1",
            stacklevel=2,
        )
    elif not ok:
        raise UnsupportedInspectError(
            f"finmath-tasks supports {SUPPORTED}; the installed inspect-ai is {found}. "
            f"Install a supported release: pip install '{SUPPORTED}'"
        )
