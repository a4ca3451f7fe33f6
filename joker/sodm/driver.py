"""SODMClassifier: ODM on stratified partitions, merged pairwise level by level (IJCAI 2023, arXiv:2305.04837).

Wang, Zhang et al., "Scalable Optimal Margin Distribution Machine", IJCAI
2023, s.3 (the method; ``docs/sodm.md`` says where this version follows or
completes the authors' code):

1. landmarks, strata and a stratified split of the data into 2^L partitions
   (:mod:`joker.sodm.partition`);
2. level L: each partition solves its ODM dual with Joker (DBCD-TR,
   ``loss="odm"``), in parallel (:mod:`joker.sodm.parallel`);
3. levels L-1, ..., 1: partitions 2j and 2j+1 are merged; the concatenated
   duals of the two children warm-start the merged problem;
4. level 0 is the full problem, solved to ``tol`` from the merged duals and
   certified by Joker's relative duality gap and KKT residual.

Regularisation per level. The ODM of SODM's code weights the mean of the
losses, lambda/m sum_i loss_i, on a partition of m points; divided by
lambda/m this is Joker's primal with lam = m / lambda (``docs/sodm.md``). A
partition of m_p of the n points therefore gets lam_p = lam * m_p / n
(lam: the full problem's Joker lam), and the full problem gets lam itself.
At an optimum Joker's dual is alpha_i = -loss'_i / lam_p, so lam_p alpha_i
does not depend on the level: the children's duals are merged on that
scale, alpha_parent_i = lam_child alpha_child_i / lam_parent.
"""

from __future__ import annotations

import numbers
import time
import warnings

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..bandwidth import resolve_sigma
from ..binary import BinaryClassifierMixin
from ..estimators import ConvergenceWarning, JokerClassifier
from ..inputs import InputFrame, bandwidth_scale, binary_labels, validate_X, validate_Xy
from ..solver import DEFAULTS
from .parallel import dask_client, map_level
from .partition import greedy_landmarks, nearest_landmark, stratified_split

#: Least ``max_time`` (seconds) a solve is given when ``max_time`` bounds the fit and little is left: the final
#: level still runs at least its first block steps and reports its certificate.
MIN_FINAL_SECONDS = 1e-3

#: The pace of the final level's warm start (:meth:`SODMClassifier._warm_start_pace`): resets of about
#: PACE_ENTRIES kernel entries each (0.03-0.1 s on 2 cores), the fastest of 2 to PACE_RUNS runs, more runs
#: only while under PACE_SECONDS.
PACE_ENTRIES, PACE_RUNS, PACE_SECONDS = 1 << 25, 3, 0.25

__all__ = ["SODMClassifier", "solve_partition"]


def solve_partition(X, y, alpha0, params, threads):
    """One local ODM solve (runs in a worker): Joker on one partition.

    Parameters
    ----------
    X : ndarray of shape (m, d)
    y : ndarray of shape (m,)
        +-1 labels (both present).
    alpha0 : ndarray of shape (m,) or None
        Warm start (the merged children's duals).
    params : dict
        ``JokerClassifier`` parameters (``loss="odm"``, the partition's lam
        and tolerance).
    threads : int
        Torch threads of this solve.

    Returns
    -------
    dict
        ``alpha`` (ndarray (m,)), ``gap``, ``kkt``, ``epochs``, ``seconds``,
        ``converged``.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # the level's record says whether it converged
            m = JokerClassifier(**params).fit(X, y, alpha0=alpha0)
    finally:
        torch.set_num_threads(before)
    return {"alpha": m.dual_alpha_, "gap": float(m.dual_gap_), "kkt": float(m.kkt_residual_),
            "epochs": int(m.n_epochs_), "seconds": float(m.fit_time_), "converged": bool(m.converged_)}


class SODMClassifier(BinaryClassifierMixin, BaseEstimator):
    """Scalable ODM (SODM, IJCAI 2023, arXiv:2305.04837) with Joker solving every partition; binary only.

    Parameters
    ----------
    levels : int, default 6
        L >= 0: 2^L partitions (the authors' code: 6, i.e. 64). 0: one
        partition, i.e. plain Joker ODM on the data as given.
    n_landmarks : int, default 50
        Landmarks S that define the strata (the authors' code: 50).
    local_tol : float, default 1e-2
        Relative duality gap to which the partitions of levels L, ..., 1 are
        solved (they only warm-start the next level).
    n_jobs : int, default -1
        joblib (loky) workers for one level's partitions; 1: serial, in this
        process; -1: every core joblib sees.
    threads_per_job : int, default 1
        Torch threads of each local solve (the final level uses the
        process's threads).
    scheduler : str or None, default None
        Address of a Dask distributed scheduler; when given the local solves
        run on that cluster instead of joblib.
    lam : float, default 1.0
        Joker's lam (sum of losses) of the full problem; lam = n / lambda for
        the ODM's lambda of the mean-loss form (``docs/sodm.md``).
    sigma : float or "median", default "median"
        Bandwidth, fixed once on the full data (median heuristic: 5,000 rows,
        seed 0), used by every level.
    kernel : {"gaussian", "laplacian"}, default "gaussian"
    odm_theta, odm_upsilon : float, default 0.1, 0.5
        ODM margin half-width theta in [0, 1) and weight upsilon > 0.
    n_components : int or None, default None
        None: exact kernel; M: M random Fourier features (one feature map,
        seeded by ``random_state``, shared by every level).
    cache_size : float or "auto", default "auto"
        MiB of exact-kernel rows that the solves of one level keep together
        (:class:`joker.JokerClassifier`'s ``cache_size``): the final level's
        one solve keeps all of it, each of a level's concurrent partition
        solves ``cache_size / min(workers, partitions)`` (workers: ``n_jobs``,
        or every partition of the level on a Dask cluster). A partition's
        solve never holds more than its own m x m kernel. "auto": each solve
        uses the estimator's own "auto". No effect with random features.
    block_size, tol, kkt_tol, max_epochs, max_time, dtype, device, solver_options
        As in :class:`joker.JokerClassifier`; ``tol``/``kkt_tol`` apply to the
        final level, ``max_epochs`` to every solve. ``max_time`` (seconds,
        None: no limit) bounds the whole fit: each partition level's solves
        get an equal share of the seconds left per level still to run (the
        final level included), divided by the rounds a level needs when it
        has more partitions than workers; the final level gets what is left
        (at least ``MIN_FINAL_SECONDS``). With the exact kernel the final
        level starts by computing K alpha0 over every row and the merged
        duals' support (n x nnz kernel entries, tens of seconds at n =
        200,000), and that pass counts in its time: from the second level
        on, the levels' shares leave it out (``final_reserve_s_``, priced at
        a pace measured once at the start of the fit), and a level whose own
        warm starts no longer fit beside it is skipped with the levels after
        it (``skipped_levels_``).
    random_state : int, default 0
        Seeds the first landmark, the split and every solve.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    model_ : joker.JokerClassifier
        The final level's model (the full problem).
    partition_ : ndarray of int64, shape (n_samples,)
        Partition of each training point at level L.
    landmarks_ : ndarray of int64
        Row indices of the landmarks (empty when ``levels == 0``).
    sigma_ : float
    dual_gap_, kkt_residual_, converged_, n_epochs_
        The final level's certificate (Joker's).
    history_ : list of dict
        One row per level: level, n_partitions, rows (largest partition),
        lam (of that partition), seconds (wall time of the level), gap and
        kkt (worst partition), epochs (most epochs of a partition),
        converged (every partition).
    fit_time_ : float
        Seconds (landmarks, split, every level).
    warm_start_entry_s_ : float or None
        Measured seconds per kernel entry of the final level's warm start
        (``ExactKernelOperator.reset`` on every row, the fit's dtype and
        threads); None without ``max_time``, with random features or with
        ``levels == 0``.
    skipped_levels_ : list of int
        Partition levels not run because the time left (``max_time``) could
        not hold their warm starts beside the final level's
        (:meth:`_no_time_for`); the final level then starts from the last
        merged duals. Empty without ``max_time``.
    final_reserve_s_ : float or None
        Seconds last reserved for that warm start: ``n * nnz *
        warm_start_entry_s_``, nnz the support of the merged duals of the
        last level run (None as above). The final level's history row
        has it as ``reserved_s``.

    Raises
    ------
    ValueError
        More than two classes; fewer points of a class than partitions; bad
        parameters.
    """

    def __init__(self, levels=6, n_landmarks=50, local_tol=1e-2, n_jobs=-1, threads_per_job=1, scheduler=None,
                 lam=1.0, sigma="median", kernel="gaussian", odm_theta=0.1, odm_upsilon=0.5, n_components=None,
                 cache_size="auto", block_size=DEFAULTS.block_size, tol=DEFAULTS.tol, kkt_tol=DEFAULTS.kkt_tol,
                 max_epochs=DEFAULTS.max_epochs, max_time=DEFAULTS.max_time, dtype="float64", device="cpu",
                 solver_options=None, random_state=0):
        self.levels = levels
        self.n_landmarks = n_landmarks
        self.local_tol = local_tol
        self.n_jobs = n_jobs
        self.threads_per_job = threads_per_job
        self.scheduler = scheduler
        self.lam = lam
        self.sigma = sigma
        self.kernel = kernel
        self.odm_theta = odm_theta
        self.odm_upsilon = odm_upsilon
        self.n_components = n_components
        self.cache_size = cache_size
        self.block_size = block_size
        self.tol = tol
        self.kkt_tol = kkt_tol
        self.max_epochs = max_epochs
        self.max_time = max_time
        self.dtype = dtype
        self.device = device
        self.solver_options = solver_options
        self.random_state = random_state

    # ------------------------------------------------------------------ checks
    def _check_params(self):
        for name, lo in (("levels", 0), ("n_landmarks", 1), ("threads_per_job", 1)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo:
                raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
        if not (isinstance(self.local_tol, numbers.Real) and self.local_tol >= 0):
            raise ValueError(f"local_tol must be a number >= 0, got {self.local_tol!r}")
        if isinstance(self.n_jobs, bool) or not isinstance(self.n_jobs, numbers.Integral) or self.n_jobs == 0:
            raise ValueError(f"n_jobs must be a non-zero int (-1: all cores), got {self.n_jobs!r}")
        if not isinstance(self.random_state, numbers.Integral):
            raise ValueError(f"random_state must be an int (it seeds the split and every solve), "
                             f"got {self.random_state!r}")
        auto = isinstance(self.cache_size, str) and self.cache_size == "auto"
        if not auto and (isinstance(self.cache_size, bool) or not isinstance(self.cache_size, numbers.Real)
                         or not (np.isfinite(self.cache_size) and self.cache_size >= 0)):
            raise ValueError(f"cache_size must be \"auto\" or a number of MiB >= 0 (0: no cache), "
                             f"got {self.cache_size!r}")
        if self.scheduler is not None and not isinstance(self.scheduler, str):
            raise ValueError(f"scheduler must be None or a Dask scheduler address, got {self.scheduler!r}")

    def _joker_params(self, lam, tol, kkt_tol, max_time, share=1):
        """JokerClassifier parameters of one solve; ``share``: solves of the level running at once."""
        cache = self.cache_size if isinstance(self.cache_size, str) else float(self.cache_size) / share
        return dict(loss="odm", kernel=self.kernel, sigma=self.sigma_, lam=lam, n_components=self.n_components,
                    cache_size=cache, block_size=self.block_size, tol=tol, kkt_tol=kkt_tol,
                    max_epochs=self.max_epochs, max_time=max_time, odm_theta=self.odm_theta,
                    odm_upsilon=self.odm_upsilon, device=self.device, dtype=self.dtype,
                    random_state=int(self.random_state), solver_options=self.solver_options)

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Fit SODM: split, solve the partitions level by level, then the full problem.

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)
            A tensor is brought to the CPU (the partitions are solved in
            worker processes).
        y : array-like of shape (n_samples,)
            Two classes, any values.

        Returns
        -------
        self
        """
        t0 = time.perf_counter()
        for attr in ("model_", "classes_"):  # a fit that fails leaves the estimator unfitted
            self.__dict__.pop(attr, None)
        self._check_params()
        X, y = validate_Xy(self, X, y)
        X = X.detach().cpu().numpy() if torch.is_tensor(X) else X
        self.classes_, Y = binary_labels(self, y)
        n, L = X.shape[0], int(self.levels)
        smallest = int(min((Y > 0).sum(), (Y < 0).sum()))
        if smallest < 2 ** L:
            raise ValueError(f"levels={L} makes {2 ** L} partitions but a class has only {smallest} points; "
                             f"use levels <= {int(np.log2(smallest))}")
        self.sigma_ = resolve_sigma(self.sigma, X)
        if L == 0:
            self.landmarks_ = np.empty(0, dtype=np.int64)
            self.partition_ = np.zeros(n, dtype=np.int64)
        else:
            # the inputs framed as the Joker estimators frame them (centred in float64, scaled near sigma)
            frame, Xt = InputFrame.fit_transform(X, torch.float64, "cpu", scale=bandwidth_scale(self.sigma_))
            sigma = self.sigma_ / frame.scale
            self.landmarks_ = greedy_landmarks(Xt, int(self.n_landmarks), self.kernel, sigma,
                                               seed=int(self.random_state))
            strata = nearest_landmark(Xt, Xt[self.landmarks_], self.kernel, sigma)
            del Xt
            self.partition_ = stratified_split(strata, Y, 2 ** L, seed=int(self.random_state))
        self.history_ = []
        self._deadline = None if self.max_time is None else t0 + float(self.max_time)
        self.warm_start_entry_s_ = self.final_reserve_s_ = None
        self.skipped_levels_ = []
        if self._deadline is not None and self.n_components is None and L > 0:
            self.warm_start_entry_s_ = self._warm_start_pace(X)
        beta = None  # lam_p * alpha of every point (level-invariant scale), after the last level
        client = dask_client(self.scheduler) if (self.scheduler is not None and L > 0) else None
        try:
            for level in range(L, 0, -1):
                if self._no_time_for(level, beta, n):  # its warm starts would eat the final level's time
                    self.skipped_levels_ = list(range(level, 0, -1))
                    break
                beta = self._run_level(X, Y, level, beta, n, client)
        finally:
            if client is not None:
                client.close()
        lam = float(self.lam)
        self._final_reserve(beta, n)  # recorded: what the final level's warm start is predicted to take
        final_time = None if self._deadline is None else max(MIN_FINAL_SECONDS, self._deadline - time.perf_counter())
        self.model_ = JokerClassifier(**self._joker_params(lam, self.tol, self.kkt_tol, final_time))
        t_level = time.perf_counter()
        hook = getattr(self, "epoch_callback", None)  # not a parameter (anytime curves): the final level's certificates
        if hook is not None:
            self.model_.epoch_callback = hook
        try:
            self.model_.fit(X, Y, alpha0=None if beta is None else beta / lam)
        finally:
            self.model_.__dict__.pop("epoch_callback", None)  # the fitted model holds no reference to the hook
        m = self.model_
        self.history_.append({"level": 0, "n_partitions": 1, "rows": n, "lam": lam,
                              "seconds": time.perf_counter() - t_level, "reserved_s": self.final_reserve_s_,
                              "gap": float(m.dual_gap_),
                              "kkt": float(m.kkt_residual_), "epochs": int(m.n_epochs_),
                              "converged": bool(m.converged_)})
        self.dual_gap_, self.kkt_residual_ = float(m.dual_gap_), float(m.kkt_residual_)
        self.converged_, self.n_epochs_ = bool(m.converged_), int(m.n_epochs_)
        self.fit_time_ = time.perf_counter() - t0
        return self

    def _level_seconds(self, level, share, beta, n):
        """``max_time`` of each partition solve of ``level`` (None without a deadline).

        What is left until the deadline, less the final level's warm start
        (:meth:`_final_reserve`), split equally over this level and the
        ``level`` still to run after it (the final one included), then over
        the ``ceil(2^level / share)`` rounds of ``share`` concurrent solves.
        """
        if self._deadline is None:
            return None
        rounds = -(-(2 ** level) // max(1, int(share)))
        left = max(0.0, self._deadline - time.perf_counter() - self._final_reserve(beta, n))
        return max(MIN_FINAL_SECONDS, left / (level + 1) / rounds)

    def _no_time_for(self, level, beta, n):
        """Whether ``level`` is skipped: the seconds left, less the final level's reserve, cannot hold its warm starts.

        The 2^level partitions of a level (``beta`` given: not the first)
        start by computing K alpha0 on their rows and support, about
        ``n * nnz(beta) / 2^level`` kernel entries in all, priced at
        ``warm_start_entry_s_`` (the level's workers together are taken to
        run as fast as the final level's threads). When that does not fit in
        what is left after :meth:`_final_reserve`, this level and the
        coarser merges after it (fewer, larger partitions, each level twice as costly) are skipped and
        the final level starts from the last merged duals. Full Skin
        (196,045 rows, 73 s): the warm starts of levels 2 and 1 took 24 s
        beside a 52 s final one.
        """
        if self._deadline is None or self.warm_start_entry_s_ is None or beta is None:
            return False
        cost = float(n) * float(np.count_nonzero(beta)) / 2 ** level * self.warm_start_entry_s_
        return self._deadline - time.perf_counter() - self._final_reserve(beta, n) < cost

    def _final_reserve(self, beta, n):
        """Predicted seconds of the final level's warm start, K alpha0 on n rows (0 when not measured).

        ``n * nnz(beta) * warm_start_entry_s_``: ``ExactKernelOperator.reset``
        computes one kernel column per non-zero dual on every row. Before
        the first level (``beta`` None) the support is unknown and nothing
        is reserved: the first level's share is taken as without it.
        """
        if self.warm_start_entry_s_ is None or beta is None:
            return 0.0
        self.final_reserve_s_ = float(n) * float(np.count_nonzero(beta)) * self.warm_start_entry_s_
        return self.final_reserve_s_

    def _warm_start_pace(self, X):
        """Seconds per kernel entry of ``ExactKernelOperator.reset`` on all of ``X``, measured.

        Frames ``X`` as the final level's :class:`joker.JokerClassifier`
        does (its dtype, device and bandwidth scale), then times ``reset``
        with a dual of ``k`` non-zero rows (``n * k`` entries, about
        ``PACE_ENTRIES``) in this process's threads, what the warm start of
        the final level runs, and keeps the fastest of two runs (up to
        ``PACE_RUNS`` while under ``PACE_SECONDS``; the first run also pays
        for first-touch allocation).

        Returns
        -------
        float
            Seconds per row x support entry.
        """
        from ..operators import ExactKernelOperator

        tdtype = torch.float64 if str(self.dtype) == "float64" else torch.float32
        frame, Xt = InputFrame.fit_transform(X, tdtype, self.device, scale=bandwidth_scale(self.sigma_))
        n = Xt.shape[0]
        op = ExactKernelOperator(Xt, self.kernel, self.sigma_ / frame.scale, 1)
        k = max(1, min(n, PACE_ENTRIES // n))
        gen = torch.Generator().manual_seed(int(self.random_state))
        alpha = torch.zeros((n, 1), dtype=tdtype)
        alpha[torch.randperm(n, generator=gen)[:k]] = 1.0
        alpha = alpha.to(Xt.device)
        best, runs, t_start = float("inf"), 0, time.perf_counter()
        while runs < 2 or (runs < PACE_RUNS and time.perf_counter() - t_start < PACE_SECONDS):
            t = time.perf_counter()
            op.reset(alpha)
            float(op.f.sum())  # a device solve: wait for the product
            best, runs = min(best, time.perf_counter() - t), runs + 1
        return best / (n * k)

    def _run_level(self, X, Y, level, beta, n, client):
        """Solve the 2^level partitions of one level from the merged duals ``beta``; return the new beta."""
        t0 = time.perf_counter()
        groups = self.partition_ >> (int(self.levels) - level)  # partitions 2j, 2j+1 of level l+1 -> j
        tasks, rows = [], []
        if client is not None:  # the cluster may run every partition at once
            share = 2 ** level
        else:  # joblib's count of n_jobs (-1: every core it sees, -2: all but one, ...)
            from joblib import effective_n_jobs

            share = min(int(effective_n_jobs(int(self.n_jobs))), 2 ** level)
        seconds = self._level_seconds(level, share, beta, n)
        for g in range(2 ** level):
            idx = np.flatnonzero(groups == g)
            lam_g = float(self.lam) * len(idx) / n
            alpha0 = None if beta is None else beta[idx] / lam_g
            params = self._joker_params(lam_g, self.local_tol, None, seconds, share)
            tasks.append((X[idx], Y[idx], alpha0, params, int(self.threads_per_job)))
            rows.append((idx, lam_g))
        results = map_level(solve_partition, tasks, n_jobs=int(self.n_jobs), client=client)
        new_beta = np.zeros(n)
        for (idx, lam_g), r in zip(rows, results):
            new_beta[idx] = lam_g * np.asarray(r["alpha"], dtype=np.float64).reshape(-1)
        self.history_.append({"level": level, "n_partitions": 2 ** level, "rows": max(len(i) for i, _ in rows),
                              "lam": max(lam for _, lam in rows), "seconds": time.perf_counter() - t0,
                              "gap": max(r["gap"] for r in results), "kkt": max(r["kkt"] for r in results),
                              "epochs": max(r["epochs"] for r in results),
                              "converged": all(r["converged"] for r in results)})
        return new_beta

    # ------------------------------------------------------------------ predict
    def decision_function(self, X):
        """Decision values of the final model (> 0 means ``classes_[1]``).

        Parameters
        ----------
        X : array-like or tensor of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)

        Raises
        ------
        sklearn.exceptions.NotFittedError
            Before ``fit``.
        """
        check_is_fitted(self, "model_")
        X = validate_X(self, X, reset=False)  # the shared intake: errors name this estimator, not the inner one
        return self.model_.decision_function(X)
