"""Parameter conversions from the benchmark's conventions to each library's.

The benchmark's problem (``docs/design.md``, Conventions;
``docs/joker-math.md`` s.1) is

    min_f  (lam / 2) ||f||_H^2 + sum_i loss(y_i, f(x_i)),
    k(x, z) = exp(-||x - z||^2 / (2 sigma^2))            (Gaussian).

Each function below returns the upstream parameter for the same problem and
names where the upstream convention comes from. They are checked by
agreement tests (``tests/baselines/test_agreement.py``), not only by reading.
"""

from __future__ import annotations

__all__ = ["rbf_gamma", "svm_C", "falkon_penalty", "logfalkon_penalty", "askotch_lambd", "torchkm_ulam",
           "torchkm_rbf_sigma"]


def rbf_gamma(sigma: float) -> float:
    """``gamma = 1 / (2 sigma^2)`` for ``exp(-gamma ||x - z||^2)`` (LIBSVM, ThunderSVM, scikit-learn).

    Parameters
    ----------
    sigma : float
        Gaussian bandwidth (> 0), units of the features.

    Returns
    -------
    float
        gamma in 1 / (feature units)^2.
    """
    return 1.0 / (2.0 * sigma * sigma)


def svm_C(lam: float) -> float:
    """``C = 1 / lam``.

    LIBSVM solves ``(1/2)||w||^2 + C sum_i loss_i``; dividing the benchmark's
    objective by ``lam`` gives ``(1/2)||f||^2 + (1/lam) sum_i loss_i``
    (C-SVC and epsilon-SVR in the LIBSVM guide, Chang and Lin 2011, eq. 1).
    LIBSVM and ThunderSVM also fit an unpenalised intercept, which the
    benchmark's problem does not have.
    """
    return 1.0 / lam


def falkon_penalty(lam: float, n: int) -> float:
    """``penalty = lam / n`` for Falkon's squared loss.

    Falkon minimises ``(1/n) ||K_nM a - y||^2 + penalty a^T K_MM a``
    (Rudi et al. 2017, eq. 3; Falkon docs, ``falkon.models.Falkon``).
    Multiplying the benchmark's KRR objective ``(lam/2)||f||^2 +
    (1/2) sum (y_i - f_i)^2`` by ``2/n`` gives ``penalty = lam / n``; with
    M = n the solution is ``(K + lam I)^{-1} y``, scikit-learn's
    ``KernelRidge(alpha=lam)``.
    """
    return lam / n


def logfalkon_penalty(lam: float, n: int) -> float:
    """``penalty = lam / n`` for LogisticFalkon.

    LogisticFalkon minimises ``(1/n) sum_i log(1 + exp(-y_i f_i)) +
    (penalty / 2) ||f||^2`` (Marteau-Ferey, Bach and Rudi 2019, eq. 1; the
    gradient in ``falkon.gsc_losses.Loss.knmp_grad`` carries the ``1/n`` and
    ``LogisticFalkon.fit`` adds ``penalty * beta``). Dividing the benchmark's
    KLR objective by ``n`` gives ``penalty = lam / n``.
    """
    return lam / n


def askotch_lambd(lam: float) -> float:
    """``lambd = lam`` for ASkotch's ``FullKRR`` (package ``fast_krr``).

    ``FullKRR`` minimises ``(1/2) w^T (K + lambd I) w - y^T w``
    (``fast_krr.models.full_krr.FullKRR``: ``lin_op(v) = K v + lambd v``,
    its ``train_loss``), i.e. solves ``(K + lambd I) w = y`` (Rathore et al.
    2024, arXiv 2407.10070, eq. 1 with their ``lambda`` multiplying a sum).
    The benchmark's KRR ``(lam/2)||f||^2 + (1/2) sum (f_i - y_i)^2`` with
    ``f = K w`` has the same minimiser: ``lambd = lam``, no factor ``n``
    (ASkotch's README writes ``lambd = 1e-6 * n``: a per-sample
    regulariser, which ``lam`` is not).
    """
    return float(lam)


def torchkm_ulam(lam: float, n: int) -> float:
    """``ulam = lam / (2 n)`` for TorchKM's kernel SVM and kernel logistic regression.

    TorchKM (``torchkm.cvksvm.cvksvm.objfun``, ``cvklogit.objfun``) minimises
    ``ulam * a^T K a + (1/n) sum_i loss(y_i, b + (K a)_i)`` with an
    unpenalised intercept ``b`` (hinge for the SVM, a smoothed hinge whose
    smoothing goes to 0 inside the solver; logistic for KLR); its estimators
    take ``C`` and set ``ulam = 1 / (2 n C)``. With ``f = K a``,
    ``a^T K a = ||f||^2``; multiplying the benchmark's ``(lam/2)||f||^2 +
    sum loss_i`` by ``1/n`` gives ``ulam = lam / (2 n)``, i.e. ``C = 1/lam``
    (LIBSVM's C, :func:`svm_C`).
    """
    return lam / (2.0 * n)


def torchkm_rbf_sigma(sigma: float) -> float:
    """TorchKM's ``rbf_sigma = 1 / (4 sigma^2)``.

    TorchKM's RBF kernel (``torchkm.functions.rbf_kernel`` and
    ``kernelMult``) is ``exp(-2 rbf_sigma ||x - z||^2)``: its "sigma" is an
    inverse squared width (kernlab's ``sigest`` convention, times 2), not a
    bandwidth. ``2 rbf_sigma = 1 / (2 sigma^2)`` gives ``1 / (4 sigma^2)``.
    """
    return 1.0 / (4.0 * sigma * sigma)
