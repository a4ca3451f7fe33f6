"""SODM (joker.sodm): partitioning, levels, warm-started merges, parallel engines (issue 16)."""

import itertools
import warnings

import numpy as np
import pytest
import torch

from joker import JokerClassifier
from joker.sodm import SODMClassifier, greedy_landmarks, nearest_landmark, stratified_split


def _binary(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.standard_normal(n) > 0.4, 1, -1)
    return X, y


@pytest.fixture(scope="module")
def a9a_5000():
    from joker.data import load_dataset

    ds = load_dataset("a9a", n_train=5000, n_test=2000, seed=0, dtype="float64", progress=False)
    return ds.X_train, ds.y_train, ds.X_test


def test_landmarks_are_the_greedy_determinant_maximisers(refs):
    X, _ = _binary(n=40, d=3, seed=3)
    sigma = 1.2
    got = greedy_landmarks(torch.as_tensor(X), 6, "gaussian", sigma, seed=5)
    K = refs.gaussian_kernel(X, X, sigma)
    chosen = [int(got[0])]  # every point ties first (k(x, x) = 1): the seed picks it
    for _ in range(5):
        dets = [np.linalg.det(K[np.ix_(chosen + [j], chosen + [j])]) if j not in chosen else -1.0
                for j in range(len(X))]
        chosen.append(int(np.argmax(dets)))
    assert got.tolist() == chosen


def test_strata_are_the_nearest_landmarks_in_kernel_distance(refs):
    X, _ = _binary(n=60, d=3, seed=4)
    C = X[[1, 7, 30]]
    sigma = 0.9
    K = refs.gaussian_kernel(X, C, sigma)
    dist = np.sqrt(np.maximum(2.0 - 2.0 * K, 0.0))  # k(x, x) + k(c, c) - 2 k(x, c)
    got = nearest_landmark(torch.as_tensor(X), torch.as_tensor(C), "gaussian", sigma)
    assert got.tolist() == np.argmin(dist, axis=1).tolist()


@pytest.mark.parametrize("levels", [3, 6])
def test_stratified_split_keeps_class_proportions_within_one_point(a9a_5000, levels):
    X, y, _ = a9a_5000
    Xt = torch.as_tensor(X)
    from joker.bandwidth import median_sigma

    sigma = median_sigma(Xt)
    strata = nearest_landmark(Xt, Xt[greedy_landmarks(Xt, 50, "gaussian", sigma)], "gaussian", sigma)
    P = 2 ** levels
    part = stratified_split(strata, y, P, seed=0)
    sizes = np.bincount(part, minlength=P)
    assert sizes.max() - sizes.min() <= 1 and sizes.sum() == len(y)
    for c in (-1.0, 1.0):
        # every partition holds floor or ceil of n_c / P points of each class: within one point of its share
        share = np.sum(y == c) / P
        counts = np.bincount(part[y == c], minlength=P)
        assert np.all(np.abs(counts - share) < 1.0), (c, counts, share)
    if levels == 3:  # 625 points a partition: the proportion of positives is within 1 percentage point
        overall = np.mean(y > 0)
        assert all(abs(np.mean(y[part == p] > 0) - overall) <= 0.01 for p in range(P))
    for c, s in sorted(set(zip(y, strata)))[:20]:  # each (class, stratum) cell is dealt round-robin
        counts = np.bincount(part[(y == c) & (strata == s)], minlength=P)
        assert counts.max() - counts.min() <= 1


def test_one_level_is_joker_exact_odm():
    X, y = _binary(n=500)
    kw = dict(sigma=1.5, lam=1.0, odm_theta=0.2, odm_upsilon=0.7, tol=1e-10, max_epochs=500)
    sodm = SODMClassifier(levels=0, n_jobs=1, random_state=3, **kw).fit(X, y)
    ref = JokerClassifier(loss="odm", random_state=3, **kw).fit(X, y)
    assert sodm.converged_ and sodm.dual_gap_ <= 1e-10
    np.testing.assert_allclose(sodm.decision_function(X), ref.decision_function(X), rtol=0, atol=1e-8)
    assert [h["level"] for h in sodm.history_] == [0]


@pytest.mark.slow
def test_three_levels_on_a9a_reach_the_direct_odm_optimum(a9a_5000):
    X, y, X_test = a9a_5000
    from joker.bandwidth import median_sigma

    kw = dict(sigma=median_sigma(X), lam=1.0, tol=1e-12, kkt_tol=1e-8, max_epochs=1000)
    sodm = SODMClassifier(levels=3, n_jobs=1, random_state=0, **kw).fit(X, y)
    ref = JokerClassifier(loss="odm", random_state=1, **kw).fit(X, y)
    assert sodm.converged_ and ref.converged_
    assert [h["level"] for h in sodm.history_] == [3, 2, 1, 0]
    assert [h["n_partitions"] for h in sodm.history_] == [8, 4, 2, 1]
    np.testing.assert_allclose(sodm.decision_function(X_test), ref.decision_function(X_test), rtol=0, atol=1e-6)
    # The merged warm start starts the full problem far closer to the optimum than a cold start
    # (to 1e-12 it still needs about as many epochs: the last digits cost the same, docs/sodm.md).
    assert sodm.model_.history_[0]["gap"] < 0.1 * ref.history_[0]["gap"]  # measured 0.066 against 1


def test_merge_rescales_the_children_duals_to_the_parent_lam():
    X, y = _binary(n=400, seed=2)
    s = SODMClassifier(levels=1, n_jobs=1, sigma=1.5, lam=2.0, tol=1e-3, local_tol=1e-8, max_epochs=500).fit(X, y)
    # Each half solved with lam/2 to 1e-8 approximates the same function, so the
    # merged start f = sum_i beta_i / lam k(x_i, .) starts the full problem close to its optimum.
    lv1, lv0 = s.history_
    assert lv1["lam"] == pytest.approx(1.0) and lv0["lam"] == 2.0
    cold = JokerClassifier(loss="odm", sigma=1.5, lam=2.0, tol=1e-3, random_state=0).fit(X, y)
    start_gap = s.model_.history_[0]["gap"]
    assert start_gap < cold.history_[0]["gap"] / 10


def test_loky_and_serial_levels_agree():
    X, y = _binary(n=600, seed=5)
    kw = dict(levels=2, sigma=1.5, lam=1.0, tol=1e-6, random_state=0)
    serial = SODMClassifier(n_jobs=1, **kw).fit(X, y)
    loky = SODMClassifier(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_allclose(loky.decision_function(X), serial.decision_function(X), rtol=0, atol=1e-12)
    assert [h["gap"] for h in loky.history_] == pytest.approx([h["gap"] for h in serial.history_], rel=1e-9)


def test_dask_local_cluster_and_serial_agree():
    distributed = pytest.importorskip("distributed")
    X, y = _binary(n=600, seed=6)
    kw = dict(levels=2, sigma=1.5, lam=1.0, tol=1e-6, random_state=0)
    serial = SODMClassifier(n_jobs=1, **kw).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster:
            on_dask = SODMClassifier(scheduler=cluster.scheduler_address, **kw).fit(X, y)
    np.testing.assert_allclose(on_dask.decision_function(X), serial.decision_function(X), rtol=0, atol=1e-12)
    assert [h["n_partitions"] for h in on_dask.history_] == [4, 2, 1]


def test_bad_input_is_a_one_line_error():
    X, y = _binary(n=40)
    with pytest.raises(ValueError, match="binary"):
        SODMClassifier(levels=0).fit(X, np.arange(40) % 3)
    with pytest.raises(ValueError, match=r"levels=6 makes 64 partitions but a class has only \d+ points"):
        SODMClassifier(levels=6, sigma=1.0).fit(X, y)
    with pytest.raises(ValueError, match="n_jobs"):
        SODMClassifier(n_jobs=0).fit(X, y)
    with pytest.raises(ValueError, match="n_parts"):
        stratified_split(np.zeros(5), np.ones(5), 6)


@pytest.mark.parametrize("wrong", [lambda X: X[:, :2], lambda X: X[:, :2].tolist()])
def test_predict_on_the_wrong_width_names_sodm(wrong):
    X, y = _binary(n=200, d=3)
    model = SODMClassifier(levels=1, n_landmarks=5, n_jobs=1).fit(X, y)
    with pytest.raises(ValueError, match="^X has 2 features, but SODMClassifier is expecting 3 features as input.$"):
        model.predict(wrong(X))


@pytest.mark.parametrize("n_jobs", [2, 3])
def test_a_kernel_cache_changes_no_iterate_and_the_solves_of_a_level_share_it(monkeypatch, n_jobs):
    import joker.sodm.driver as driver

    seen = []  # (level partitions, cache_size of each solve)

    def serial_map(fn, tasks, n_jobs=1, client=None):
        seen.append((len(tasks), [t[3]["cache_size"] for t in tasks]))
        return [fn(*t) for t in tasks]

    X, y = _binary(n=600, seed=5)
    kw = dict(levels=2, sigma=1.5, lam=1.0, tol=1e-8, random_state=0)
    plain = SODMClassifier(n_jobs=1, cache_size=0, **kw).fit(X, y)
    monkeypatch.setattr(driver, "map_level", serial_map)
    cached = SODMClassifier(n_jobs=n_jobs, cache_size=8.0, **kw).fit(X, y)
    # level 2: 4 partitions, min(n_jobs, 4) at once; level 1: 2 partitions, min(n_jobs, 2) = 2 at once
    assert seen == [(4, [8.0 / min(n_jobs, 4)] * 4), (2, [4.0, 4.0])]
    assert cached.model_.cache_size == 8.0
    assert cached.model_.cache_size_ == pytest.approx(600 * 600 * 8 / 2**20)  # the whole 600 x 600 kernel
    assert plain.model_.cache_size_ == 0.0
    assert [h["epochs"] for h in cached.history_] == [h["epochs"] for h in plain.history_]
    np.testing.assert_allclose(cached.decision_function(X), plain.decision_function(X), rtol=0, atol=1e-10)


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "big", True])
def test_a_bad_cache_size_is_a_one_line_error(bad):
    X, y = _binary(n=100)
    with pytest.raises(ValueError, match="cache_size must be"):
        SODMClassifier(levels=1, n_jobs=1, cache_size=bad).fit(X, y)


def test_max_time_bounds_the_whole_fit_level_by_level(monkeypatch):
    """max_time is the whole fit's deadline: with a clock that gains 1 s per solve's parameters, levels 2 and 1
    and the final one get (left) / (levels still to run) / (rounds of the level's solves), the final level what is
    left; a fit without max_time gives no solve a limit."""
    from joker.sodm import driver

    X, y = _binary(n=400, seed=1)
    clock = [0.0]
    monkeypatch.setattr(driver.time, "perf_counter", lambda: clock[0])
    given = []
    original = SODMClassifier._joker_params

    def spy(self, lam, tol, kkt_tol, max_time, share=1):
        given.append(max_time)
        clock[0] += 1.0  # one second passes per solve set up
        return original(self, lam, tol, kkt_tol, max_time, share)

    monkeypatch.setattr(SODMClassifier, "_joker_params", spy)
    s = SODMClassifier(levels=2, n_jobs=1, sigma=1.5, lam=1.0, tol=1e-3, max_time=100.0).fit(X, y)
    # level 2: 4 partitions, 1 worker: 4 rounds over 3 levels left, shared at t = 0 -> 100 / 3 / 4 each;
    # level 1: 2 partitions, shared at t = 4 -> (100 - 4) / 2 / 2; the final level at t = 6 -> 94
    assert given == pytest.approx([100 / 12] * 4 + [96 / 4] * 2 + [94.0])
    assert s.model_.max_time == pytest.approx(94.0)
    given.clear()
    SODMClassifier(levels=1, n_jobs=1, sigma=1.5, lam=1.0, tol=1e-3).fit(X, y)
    assert given == [None, None, None]


def test_the_final_warm_start_is_reserved_from_the_levels_shares(monkeypatch):
    """With the exact kernel the final level's K alpha0 (n x nnz entries at the measured pace) counts in its time:
    from the second level on the levels share what is left less that reserve; the final level gets all that is
    left, the reserve included, and its history row records it. The first level knows no support: no reserve."""
    from joker.sodm import driver

    X, y = _binary(n=400, seed=1)
    clock = [0.0]
    monkeypatch.setattr(driver.time, "perf_counter", lambda: clock[0])
    pace = 1e-4  # seconds per kernel entry, as if measured
    monkeypatch.setattr(SODMClassifier, "_warm_start_pace", lambda self, X: pace)
    given, support = [], []
    original_params, original_reserve = SODMClassifier._joker_params, SODMClassifier._final_reserve

    def spy(self, lam, tol, kkt_tol, max_time, share=1):
        given.append(max_time)
        clock[0] += 1.0
        return original_params(self, lam, tol, kkt_tol, max_time, share)

    def reserve(self, beta, n):
        support.append(None if beta is None else int(np.count_nonzero(beta)))
        return original_reserve(self, beta, n)

    monkeypatch.setattr(SODMClassifier, "_joker_params", spy)
    monkeypatch.setattr(SODMClassifier, "_final_reserve", reserve)
    s = SODMClassifier(levels=2, n_jobs=1, sigma=1.5, lam=1.0, tol=1e-3, max_time=100.0).fit(X, y)
    # level 2's share (no support yet), level 1's skip test and share, before the final level
    assert support[0] is None and support[1] == support[2] > 0 and support[3] > 0 and len(support) == 4
    assert given == pytest.approx([100 / 12] * 4 + [(96 - 400 * support[1] * pace) / 4] * 2 + [94.0])
    assert s.warm_start_entry_s_ == pace and s.skipped_levels_ == []
    assert s.final_reserve_s_ == pytest.approx(400 * support[3] * pace)
    assert s.history_[-1]["reserved_s"] == pytest.approx(400 * support[3] * pace)
    # no deadline, or random features: nothing is measured or reserved
    for kwargs in ({}, {"max_time": 100.0, "n_components": 64}):
        s = SODMClassifier(levels=1, n_jobs=1, sigma=1.5, lam=1.0, tol=1e-3, **kwargs).fit(X, y)
        assert s.warm_start_entry_s_ is None and s.final_reserve_s_ is None
        assert s.history_[-1]["reserved_s"] is None


def test_the_warm_start_pace_times_resets_of_every_row(monkeypatch):
    """The pace is measured on what the final level runs: ExactKernelOperator.reset over all n rows with
    min(n, PACE_ENTRIES // n) non-zero duals, at least twice, and is per kernel entry (seconds / (n k))."""
    from joker import operators
    from joker.sodm import driver

    X, y = _binary(n=400, seed=1)
    calls, clock = [], [0.0]
    monkeypatch.setattr(driver.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(driver, "PACE_ENTRIES", 400 * 37)
    original = operators.ExactKernelOperator.reset

    def timed(op, alpha):
        calls.append((op.X.shape[0], int(torch.count_nonzero(alpha))))
        clock[0] += 0.5 if len(calls) == 1 else 0.25  # the first run pays for first touch
        return original(op, alpha)

    monkeypatch.setattr(operators.ExactKernelOperator, "reset", timed)
    s = SODMClassifier(levels=1, n_jobs=1, sigma=1.5, lam=1.0, tol=1e-3)
    s.sigma_ = 1.5
    assert s._warm_start_pace(X) == pytest.approx(0.25 / (400 * 37))
    assert calls == [(400, 37)] * 2  # two runs: the clock then passed PACE_SECONDS


def test_a_level_whose_warm_starts_do_not_fit_is_skipped(monkeypatch):
    """A level of 2^l partitions costs about n * nnz / 2^l kernel entries of warm starts; when the seconds left,
    less the final level's reserve n * nnz * pace, cannot hold that, the level and the ones after it are skipped
    and the final level starts from the last merged duals."""
    from joker.sodm import driver

    X, y = _binary(n=400, seed=1)
    clock = [0.0]
    monkeypatch.setattr(driver.time, "perf_counter", lambda: clock[0])
    support = []
    original_run = SODMClassifier._run_level

    def run_level(self, X, Y, level, beta, n, client):
        clock[0] += 10.0  # each level run takes 10 s of the clock
        out = original_run(self, X, Y, level, beta, n, client)
        support.append((level, int(np.count_nonzero(out))))
        return out

    monkeypatch.setattr(SODMClassifier, "_run_level", run_level)
    # a pace such that after level 3 (t = 10) the final reserve is 60 s: left 100 - 10 - 60 = 30 s holds level 2's
    # warm starts (60 / 4 = 15 s) and, at t = 20, not level 1's (60 / 2 = 30 s > 100 - 20 - 60 = 20 s)
    def pace(self, X):
        return None  # set below, once the first level's support is known

    monkeypatch.setattr(SODMClassifier, "_warm_start_pace", pace)
    original_no_time = SODMClassifier._no_time_for

    def no_time(self, level, beta, n):
        if beta is not None and self.warm_start_entry_s_ is None:
            self.warm_start_entry_s_ = 60.0 / (n * np.count_nonzero(beta))
        return original_no_time(self, level, beta, n)

    monkeypatch.setattr(SODMClassifier, "_no_time_for", no_time)
    s = SODMClassifier(levels=3, n_jobs=1, sigma=1.5, lam=1.0, tol=1e-3, max_time=100.0).fit(X, y)
    assert [lv for lv, _ in support] == [3, 2]
    assert s.skipped_levels_ == [1]
    assert [h["level"] for h in s.history_] == [3, 2, 0]
    nnz = support[-1][1]
    assert s.final_reserve_s_ == pytest.approx(400 * nnz * s.warm_start_entry_s_)
    # without max_time every level runs
    s = SODMClassifier(levels=3, n_jobs=1, sigma=1.5, lam=1.0, tol=1e-3).fit(X, y)
    assert s.skipped_levels_ == [] and [h["level"] for h in s.history_] == [3, 2, 1, 0]
