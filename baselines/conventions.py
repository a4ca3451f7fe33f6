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

__all__ = ["rbf_gamma", "svm_C", "falkon_penalty", "logfalkon_penalty"]


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
