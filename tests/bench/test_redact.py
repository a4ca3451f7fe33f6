"""Tracking-URI passwords never reach what the harness prints, logs or tags."""

import logging
import os

import pytest

from joker.bench.records.redact import RedactingFilter, protect, redact_uri


@pytest.mark.parametrize("text, expected", [
    ("http://me:s3cr3t@host:5000", "http://me:***@host:5000"),
    ("postgresql+psycopg2://u:p%40ss@db:5432/mlflow", "postgresql+psycopg2://u:***@db:5432/mlflow"),
    # as Hydra escapes it in the override lines it logs
    (r"mlflow.tracking_uri=http\://me\:s3cr3t@host\:5000 sweep=x", r"mlflow.tracking_uri=http\://me\:***@host\:5000 sweep=x"),
    ("a=https://a:b@h/ b=https://c:d@k/", "a=https://a:***@h/ b=https://c:***@k/"),
    # nothing to hide: unchanged
    ("postgresql+psycopg2://mlflow@127.0.0.1:16814/mlflow", "postgresql+psycopg2://mlflow@127.0.0.1:16814/mlflow"),
    ("sqlite:////tmp/x/mlflow.db", "sqlite:////tmp/x/mlflow.db"),
    ("http://host:5000/#/experiments/1/runs/a@b", "http://host:5000/#/experiments/1/runs/a@b"),
])
def test_redact_uri(text, expected):
    assert redact_uri(text) == expected


def test_log_records_are_masked():
    record = logging.LogRecord("hydra", logging.INFO, __file__, 1, "\t#%d : %s", (0, "u=http://a:pw@h:1"), None)
    assert RedactingFilter().filter(record) is True
    assert record.getMessage() == "\t#0 : u=http://a:***@h:1"


def test_protect_silences_mlflow_url_lines_only_for_uris_with_a_password(monkeypatch):
    monkeypatch.setenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "")  # restored after the test
    monkeypatch.delenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT")
    protect("http://127.0.0.1:5000")
    assert "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT" not in os.environ
    protect("http://me:pw@127.0.0.1:5000")
    assert os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] == "true"
