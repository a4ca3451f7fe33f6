"""Which code recorded the runs, against the code that draws the report.

A store outlives the code: a run recorded before a fix shows that fix's
absence (no checkpoints, an old problem text, old timings). The report says
so in its notes instead of letting a reader take old records for the
current code's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pandas as pd

#: The repository the report's code lives in.
ROOT = Path(__file__).resolve().parents[1]


def head_commit(root: Path = ROOT) -> str | None:
    """The commit the report's code is at.

    Parameters
    ----------
    root : pathlib.Path
        A folder inside a git work tree.

    Returns
    -------
    str or None
        The full 40-digit sha of ``HEAD``; None outside a git work tree or
        without git.
    """
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) == 40 else None


def code_notes(runs: pd.DataFrame, head: str | None) -> list[str]:
    """Notes on runs recorded by other code than the report's.

    Parameters
    ----------
    runs : pandas.DataFrame
        The used runs, with the trial tags ``git_commit`` and ``git_dirty``
        (strings; missing on old records).
    head : str or None
        The report's commit (:func:`head_commit`); None: unknown, and only
        the runs' own mix is said.

    Returns
    -------
    list of str
        Empty when every run was recorded at ``head`` from a clean tree;
        otherwise one note naming each other commit (first 7 digits) and its
        number of runs, and one for runs from a modified tree. Runs without
        a commit (no tag, or ``"unknown"`` outside a git checkout) are not
        counted.
    """
    if runs is None or runs.empty:
        return []
    commits = runs.get("git_commit", pd.Series("", index=runs.index)).fillna("").astype(str)
    commits = commits[commits.str.fullmatch(r"[0-9a-f]{40}")]  # no tag or "unknown": nothing to compare
    notes = []
    other = commits[commits != head] if head else commits
    if head is None and commits.nunique() <= 1:
        other = other.iloc[0:0]
    if len(other):
        counts = other.value_counts()
        said = ", ".join(f"{c[:7]} ({k} run{'s' * (k != 1)})"
                         for c, k in counts.items())
        where = f"not at this report's code ({head[:7]})" if head else "at more than one commit"
        notes.append(f"{len(other)} of {len(runs)} runs were recorded at {said}, {where}: their numbers, "
                     "checkpoints and problem texts are that code's; rerun the sweep for the current code's.")
    dirty = runs.get("git_dirty", pd.Series("", index=runs.index)).fillna("").astype(str)
    n_dirty = int((dirty == "true").sum())
    if n_dirty:
        notes.append(f"{n_dirty} of {len(runs)} runs were recorded from a modified work tree "
                     "(git_dirty): their commit alone does not say which code ran.")
    return notes
