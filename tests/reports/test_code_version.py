"""The report says when its runs were recorded by other code (reports.code_version)."""

import pandas as pd

from reports import code_version

A, B = "a" * 40, "b" * 40


def _runs(commits, dirty=None):
    return pd.DataFrame({"git_commit": commits, "git_dirty": dirty or ["false"] * len(commits)})


def test_runs_at_head_say_nothing():
    assert code_version.code_notes(_runs([A, A, A]), A) == []


def test_runs_at_other_commits_are_counted_by_commit():
    notes = code_version.code_notes(_runs([A, B, B, None, "unknown", "c" * 40]), A)
    assert len(notes) == 1  # runs without a known commit are not counted
    assert notes[0].startswith("3 of 6 runs were recorded at bbbbbbb (2 runs), ccccccc (1 run),")
    assert "not at this report's code (aaaaaaa)" in notes[0]


def test_dirty_runs_are_said_apart():
    notes = code_version.code_notes(_runs([A, A], ["true", "false"]), A)
    assert notes == ["1 of 2 runs were recorded from a modified work tree (git_dirty): "
                     "their commit alone does not say which code ran."]


def test_unknown_head_says_only_a_mix():
    assert code_version.code_notes(_runs([A, A]), None) == []
    assert "at more than one commit" in code_version.code_notes(_runs([A, B]), None)[0]


def test_head_commit_is_this_checkout():
    sha = code_version.head_commit()
    assert sha is None or (len(sha) == 40 and int(sha, 16) >= 0)
    assert code_version.head_commit(__import__("pathlib").Path("/")) is None
