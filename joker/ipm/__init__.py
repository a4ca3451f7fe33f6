"""Low-rank primal-dual interior-point SVM (the ``ipm-lowrank`` method).

The L1-SVC dual on a rank-k kernel factor, solved by Mehrotra's
predictor-corrector with Woodbury Newton solves (Gu, Song and Zhang,
arXiv 2307.07735; Fine and Scheinberg, JMLR 2001; Ferris and Munson,
SIAM J. Optim. 2003). Modules: :mod:`.newton` (the D + V V^T solves),
:mod:`.solver` (the IPM), :mod:`.factors` (RFF / Nystroem factors),
:mod:`.estimator` (the scikit-learn classifier).
"""

from .estimator import LowRankIPMClassifier
from .solver import IPMResult, lowrank_svm_ipm, svm_certificate

__all__ = ["LowRankIPMClassifier", "IPMResult", "lowrank_svm_ipm", "svm_certificate"]
