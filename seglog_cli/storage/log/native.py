"""The optional compiled hot loops (``_native.c``), or None.

seglog runs without them (no C compiler at install time, or ``SEGLOG_PURE_PYTHON=1``): the
pure-Python code paths are the reference and give identical results, only slower. Callers look
the functions up here once; tests switch them off with :func:`set_enabled`.
"""

from __future__ import annotations

import os

try:
    from seglog_cli.storage.log import _native as _compiled
except ImportError:  # built without a C compiler
    _compiled = None

module = None if os.environ.get("SEGLOG_PURE_PYTHON") else _compiled


def available() -> bool:
    return _compiled is not None


def set_enabled(enabled: bool) -> None:
    """Use (or stop using) the compiled loops from now on (tests compare both paths)."""
    global module
    module = _compiled if enabled else None
