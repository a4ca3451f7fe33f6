"""Trial identity: code version and config hash (the resume key).

A trial is identified by the hash of its resolved spec (a
:class:`joker.bench.config.spec.TrialSpec`, see
:func:`joker.bench.config.schema.resolve_trial`) together with the code version
and the record schema version, so a finished run is reused only for the
same settings, the same code and the same kind of record.
The code version is a content hash of the Python sources of ``joker/`` and
``baselines/`` (no git needed, unchanged by edits to docs or tests) and the
package version.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from typing import Any

from ..config.paths import repo_root
from .record import RECORD_SCHEMA_VERSION
from ..config.spec import TrialSpec

#: Spec keys that do not change a trial's result (display/bookkeeping only).
_NOT_HASHED = frozenset({"sweep"})


def code_version() -> str:
    """Return the code version string.

    Returns
    -------
    str
        ``"<package version>+src.<12 hex digits>"``: the sha256 of the paths
        and contents of every ``*.py`` under ``joker/`` and ``baselines/``;
        or ``$JOKER_BENCH_CODE_VERSION`` when set.
    """
    if os.environ.get("JOKER_BENCH_CODE_VERSION"):
        return os.environ["JOKER_BENCH_CODE_VERSION"]
    return _source_version()


@functools.lru_cache(maxsize=1)
def _source_version() -> str:
    root = repo_root()
    h = hashlib.sha256()
    for pkg in ("joker", "baselines"):
        base = root / pkg
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            h.update(str(path.relative_to(root)).encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
    return f"{_package_version()}+src.{h.hexdigest()[:12]}"


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("joker-bench")
    except Exception:  # not installed: fall back to pyproject's line
        pyproject = repo_root() / "pyproject.toml"
        for line in pyproject.read_text().splitlines() if pyproject.exists() else []:
            if line.strip().startswith("version"):
                return line.split("=", 1)[1].strip().strip('"')
        return "0"


def canonical_json(obj: Any) -> str:
    """Serialise ``obj`` deterministically (sorted keys, no spaces)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def config_hash(spec: TrialSpec | dict[str, Any], version: str | None = None) -> str:
    """Hash a resolved trial spec with the code version and the record schema version.

    Parameters
    ----------
    spec : TrialSpec or dict
        Resolved trial spec, or its plain form (:meth:`TrialSpec.to_dict`);
        both give the same hash.
    version : str, optional
        Code version; default :func:`code_version`.

    Returns
    -------
    str
        16 hex digits of sha256(canonical spec without ``sweep`` + code
        version + :data:`joker.bench.records.record.RECORD_SCHEMA_VERSION`).
    """
    plain = spec.to_dict() if isinstance(spec, TrialSpec) else spec
    keyed = {k: v for k, v in plain.items() if k not in _NOT_HASHED}
    payload = canonical_json({"spec": keyed, "code": version or code_version(), "schema": RECORD_SCHEMA_VERSION})
    return hashlib.sha256(payload.encode()).hexdigest()[:16]

