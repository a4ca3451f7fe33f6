"""Fixtures of the reports tests: one hand-built MLflow store per session."""

import pytest

import reports_fakestore


@pytest.fixture(scope="session")
def fake_store(tmp_path_factory):
    """(tracking URI, {experiment: {run_id: trial}}) of a hand-built store.

    Experiments: ``table4`` (two datasets x seven methods, every outcome,
    plus three runs that must not be used) and ``rff-sweep`` (logged last,
    joker-inexact over n_components).
    """
    return reports_fakestore.build(tmp_path_factory.mktemp("fakestore"))


@pytest.fixture(scope="session")
def fake_report(fake_store, tmp_path_factory):
    """The full report of experiment ``table4`` of :func:`fake_store`."""
    from reports.cli import build_report

    uri, _ = fake_store
    return build_report(uri, "table4", out=tmp_path_factory.mktemp("report"),
                        echo=lambda *a: None)
