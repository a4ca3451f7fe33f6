"""What the binary-only classifiers (LowRankIPMClassifier, SODMClassifier) share: predict and their tags.

scikit-learn learns that an estimator is binary-only from its tags
(``classifier_tags.multi_class = False``): ``check_estimator`` then tests it
on two-class data; a multi-class ``y`` gets the ValueError of
:func:`joker.inputs.binary_labels`.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

__all__ = ["BinaryClassifierMixin"]


class BinaryClassifierMixin(ClassifierMixin):
    """``predict`` from ``decision_function`` (> 0 means ``classes_[1]``) and binary-only tags.

    The class using it sets ``classes_`` (shape (2,)) in ``fit`` and defines
    ``decision_function``.
    """

    def predict(self, X):
        """Predicted labels (values of ``classes_``).

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
        check_is_fitted(self, "classes_")
        return self.classes_[(np.asarray(self.decision_function(X)) > 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
