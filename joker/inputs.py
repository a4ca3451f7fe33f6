"""Input intake of the Joker core, shared by every estimator (Joker, the low-rank IPM, SODM).

One path from what a user passes to what the solvers compute on:

1. :func:`validate_X` / :func:`validate_Xy`: a torch tensor is checked and
   kept (on its device); anything else goes through scikit-learn's
   ``validate_data`` (float64 and float32 kept, other dtypes and non-native
   byte orders converted to native float64), which also records
   ``n_features_in_`` and refuses NaN, infinity, empty and ragged input.
2. :class:`InputFrame`: x -> (x - center) / scale computed in float64, then
   cast to the solve's ``dtype`` on its ``device``. The centre is the
   coordinate-wise median of the training inputs (:mod:`joker.center`), so
   a large common offset is removed before any rounding to float32 and a
   few outlying rows do not move the bulk of the rows away from 0, where
   the expanded squared distances are exact; ``scale`` is a power of two (exact in floating point) near
   the kernel bandwidth, so that the kernel arithmetic (squared norms,
   1 / sigma^2) of inputs on a tiny or huge scale stays inside the range of
   ``dtype`` (:func:`bandwidth_scale`). The Gaussian and Laplacian kernels
   are shift-invariant and depend on x / sigma only, so the kernel of the
   framed inputs at bandwidth sigma / scale is the kernel of the inputs.

scipy.sparse inputs (accepted where the estimator says so, the Joker
estimators) stay sparse: CSR from :func:`validate_X`, and
:class:`joker.sparse.SparseRows`, not centred, from :class:`InputFrame`.
:func:`as_float64` (any numpy or torch layout to a float64 tensor) is the
conversion underneath.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_array, column_or_1d, validate_data

from .sparse import SparseRows
from .center import median_center

__all__ = ["DTYPES", "as_float64", "check_dtype", "validate_X", "validate_Xy", "binary_labels",
           "bandwidth_scale", "InputFrame"]

DTYPES = {"float64": torch.float64, "float32": torch.float32}
"""Names of the solve precisions the estimators take (``dtype=``), and their torch dtypes."""

_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)


def as_float64(A, device=None):
    """A contiguous float64 copy (or view) of ``A`` as a torch tensor.

    Parameters
    ----------
    A : array-like or tensor
        Any shape, any layout (strides, order, read-only, non-contiguous,
        non-native byte order).
    device : str or torch.device, optional
        Target device; None keeps a tensor's device (numpy input: CPU).

    Returns
    -------
    float64 tensor of A's shape, contiguous.
    """
    if torch.is_tensor(A):
        T = A.detach().to(dtype=torch.float64)
    else:
        # np.float64 is native-endian: a big-endian array is converted here
        a = np.ascontiguousarray(np.asarray(A, dtype=np.float64))
        if not a.flags.writeable:  # torch tensors must not alias read-only memory
            a = a.copy()
        T = torch.from_numpy(a)
    if device is not None:
        T = T.to(device=device)
    return T.contiguous()


def check_dtype(dtype):
    """The torch dtype named by ``dtype`` ("float64" or "float32").

    Raises
    ------
    ValueError
        Any other value.
    """
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"dtype={dtype!r}; expected one of {list(DTYPES)}")
    return DTYPES[dtype]


def _check_tensor_X(X, name="X"):
    if X.layout != torch.strided:
        raise TypeError(f"{name} is a sparse torch tensor ({X.layout}); pass a scipy.sparse matrix or a dense tensor")
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array for {name}, got a tensor of shape {tuple(X.shape)}")
    if X.shape[0] == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={tuple(X.shape)}) while a minimum of 1 is required.")
    if X.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={tuple(X.shape)}) while a minimum of 1 is required.")
    if not torch.is_floating_point(X) and X.dtype not in _INT_DTYPES:
        raise TypeError(f"{name} must hold numbers, got a tensor of dtype {X.dtype}")
    if torch.is_floating_point(X) and not bool(torch.isfinite(X).all()):
        raise ValueError(f"Input {name} contains NaN or infinity.")


def validate_X(estimator, X, reset, accept_sparse=False):
    """Checked inputs of ``estimator``: a tensor stays a tensor, anything else a native float array.

    Parameters
    ----------
    estimator : scikit-learn estimator
        Receives (``reset=True``) or is checked against (``reset=False``)
        ``n_features_in_`` (and ``feature_names_in_`` for data frames).
    X : array-like or tensor of shape (n_samples, n_features)
    reset : bool
        True in ``fit``.
    accept_sparse : bool
        Take scipy.sparse matrices and arrays (returned as CSR); otherwise
        they get scikit-learn's TypeError ("dense data is required").

    Returns
    -------
    tensor (on X's device), ndarray or scipy.sparse CSR matrix of float64 or float32, native byte order.

    Raises
    ------
    ValueError
        Not 2-D, empty, NaN or infinite values, a feature count other than
        the fitted one (``reset=False``).
    TypeError
        Non-numeric values.
    """
    if not torch.is_tensor(X):
        X = validate_data(estimator, X, reset=reset, dtype=[np.float64, np.float32],
                          accept_sparse=["csr", "csc"] if accept_sparse else False)
        return X.tocsr() if sp.issparse(X) else X
    _check_tensor_X(X)
    if reset:
        estimator.n_features_in_ = int(X.shape[1])
    elif X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(estimator).__name__} is expecting "
                         f"{estimator.n_features_in_} features as input.")
    return X


def _numpy(y):
    return y.detach().cpu().numpy() if torch.is_tensor(y) else y


def validate_Xy(estimator, X, y, multi_output=False, y_numeric=False, accept_sparse=False):
    """Checked training inputs and targets of ``estimator`` (``fit``).

    Parameters
    ----------
    estimator : scikit-learn estimator
    X : array-like or tensor of shape (n_samples, n_features)
        As :func:`validate_X` (``reset=True``).
    y : array-like or tensor of shape (n_samples,) or, with ``multi_output``, (n_samples, n_outputs)
    multi_output : bool
        Accept 2-D targets (regression).
    y_numeric : bool
        Targets must be numbers (regression); else any labels.
    accept_sparse : bool
        As :func:`validate_X`.

    Returns
    -------
    X : tensor or ndarray
    y : ndarray, native byte order (a tensor y is copied to the CPU)

    Raises
    ------
    ValueError
        y missing, X and y of different lengths, NaN or infinite targets,
        the errors of :func:`validate_X`.
    """
    if y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y is None.")
    y = _numpy(y)
    if not torch.is_tensor(X):
        X, y = validate_data(estimator, X, y, multi_output=multi_output, y_numeric=y_numeric,
                             dtype=[np.float64, np.float32], accept_sparse=["csr", "csc"] if accept_sparse else False)
        return (X.tocsr() if sp.issparse(X) else X), y
    X = validate_X(estimator, X, reset=True)
    if multi_output:
        y = check_array(y, ensure_2d=False, dtype="numeric" if y_numeric else None, input_name="y")
        if y.ndim not in (1, 2):
            raise ValueError(f"y must be of shape (n_samples,) or (n_samples, n_outputs), got shape {y.shape}")
    else:
        y = column_or_1d(y, warn=True)
    if y.dtype.kind in "fc" and not np.isfinite(y).all():
        raise ValueError("Input y contains NaN or infinity.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X and y have inconsistent numbers of samples: {X.shape[0]} != {y.shape[0]}")
    return X, y.astype(y.dtype.newbyteorder("="), copy=False)


def binary_labels(estimator, y):
    """Classes and +-1 labels of a binary classifier's targets (``classes_[1]`` is +1).

    Parameters
    ----------
    estimator : scikit-learn estimator
        Named in the error.
    y : ndarray of shape (n_samples,)
        Validated labels (:func:`validate_Xy`), any values.

    Returns
    -------
    classes : ndarray of shape (2,), sorted
    labels : float64 ndarray of shape (n_samples,), -1 for ``classes[0]`` and +1 for ``classes[1]``

    Raises
    ------
    ValueError
        Continuous targets, or a number of classes other than 2.
    """
    check_classification_targets(y)
    classes, idx = np.unique(y, return_inverse=True)
    if len(classes) != 2:
        k = len(classes)
        kind = type_of_target(y, input_name="y")  # scikit-learn's wording, which its estimator checks expect
        also = f"Only binary classification is supported. The type of the target is {kind}; " if k > 2 else ""
        raise ValueError(f"{type(estimator).__name__}: {also}it needs exactly 2 classes in y, got {k} "
                         f"class{'' if k == 1 else 'es'}: {classes[:5].tolist()}")
    return classes, np.where(idx == 1, 1.0, -1.0)


def bandwidth_scale(sigma):
    """The power of two nearest to ``sigma``: the ``scale`` of :class:`InputFrame` for a kernel solve.

    Inputs divided by it lie on the scale of the bandwidth (the kernel sees
    x / sigma only), so squared distances and 1 / sigma^2 are of order one
    whatever the units of X (1e-20 or 1e30); dividing by a power of two is
    exact, so on data of ordinary scale the kernel values are bitwise those
    of the unscaled inputs.

    Parameters
    ----------
    sigma : float > 0

    Returns
    -------
    float
    """
    return 2.0 ** round(math.log2(float(sigma)))


class InputFrame:
    """x -> ((x - center) / scale) in float64, then cast to ``dtype`` on ``device``.

    The centre is the coordinate-wise (weighted) median of the training
    inputs (:func:`joker.center.median_center`). scipy.sparse inputs are
    not centred: they become :class:`joker.sparse.SparseRows`, never dense.
    A frame fitted on them has centre 0 (the exact kernel is
    shift-invariant: every input of a model just has to be shifted alike),
    unless ``sparse_center``: then it keeps their median for dense inputs
    and the consumer of the uncentred sparse rows owes the shift (the
    random features fold it into their phases,
    :class:`joker.features.RandomFourierFeatures`). Sparse inputs given to
    a frame fitted on dense ones (a nonzero centre, no ``sparse_center``)
    are densified to be centred.

    Parameters
    ----------
    center : float64 tensor of shape (n_features,)
        On ``device``.
    scale : float
        A power of two (:func:`bandwidth_scale`), 1.0 for none.
    dtype : torch.dtype
    device : str or torch.device
    sparse_center : bool
        Sparse inputs come back uncentred although ``center`` is not 0 (above).

    Attributes
    ----------
    center, scale, dtype, device, sparse_center : as given.
    """

    def __init__(self, center, scale, dtype, device, sparse_center=False):
        self.center = center
        self.scale = float(scale)
        self.dtype = dtype
        self.device = device
        self.sparse_center = bool(sparse_center)

    @classmethod
    def fit(cls, X, dtype, device, scale=1.0, sparse_center=False, sample_weight=None):
        """The frame of training inputs ``X``: their float64 coordinate-wise median (weighted when given).

        Parameters
        ----------
        X : array-like, tensor or scipy.sparse matrix of shape (n_samples, n_features)
        dtype : torch.dtype
        device : str or torch.device
        scale : float
            Power of two to divide by (:func:`bandwidth_scale`).
        sparse_center : bool
            For sparse X: keep its median (class docstring); else the centre is 0.
        sample_weight : ndarray of shape (n_samples,) or None
            Checked row weights (:func:`joker.sample_weight.check_sample_weight`):
            the centre is then the weighted median, that of the repeated rows
            for integer weights (:func:`joker.center.median_center`).

        Returns
        -------
        InputFrame
        """
        if sp.issparse(X):
            center = median_center(X, sample_weight) if sparse_center else torch.zeros(X.shape[1], dtype=torch.float64)
            return cls(center.to(device), scale, dtype, device, sparse_center)
        return cls(median_center(as_float64(X, device=device), sample_weight), scale, dtype, device)

    @classmethod
    def fit_transform(cls, X, dtype, device, scale=1.0, sparse_center=False, sample_weight=None):
        """The frame of ``X`` (:meth:`fit`) and the framed ``X``, from one float64 copy.

        Parameters
        ----------
        X, dtype, device, scale, sparse_center
            As :meth:`fit`.

        Returns
        -------
        frame : InputFrame
        Xt : tensor of shape (n_samples, n_features), ``dtype`` on ``device``

        Raises
        ------
        ValueError
            As :meth:`__call__`.
        """
        if sp.issparse(X):
            frame = cls.fit(X, dtype, device, scale, sparse_center, sample_weight)
            return frame, frame(X)
        X64 = as_float64(X, device=device)
        frame = cls(median_center(X64, sample_weight), scale, dtype, device)
        return frame, frame._apply(X64)

    def __call__(self, X):
        """Framed inputs.

        Parameters
        ----------
        X : array-like, tensor or scipy.sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        tensor of shape (n_samples, n_features), ``dtype`` on ``device``
            (:class:`joker.sparse.SparseRows`, uncentred, for sparse X and a
            frame of centre 0 or ``sparse_center``)

        Raises
        ------
        ValueError
            The inputs are too large to centre in float64, or the framed
            values overflow ``dtype`` (float32 holds up to 3.4e38).
        """
        if sp.issparse(X):
            if not self.sparse_center and bool(self.center.any()):
                X = X.toarray()
            else:
                rows = SparseRows.from_scipy(X, self.dtype, self.device, self.scale)
                if not bool(torch.isfinite(rows.data).all()):
                    raise ValueError(f"the inputs are too large for {self.dtype} (an entry of x / {self.scale:.3g} "
                                     "overflows): rescale X")
                return rows
        return self._apply(as_float64(X, device=self.device))

    def _apply(self, X64):
        Xc = X64 - self.center  # not in place: X64 may share the caller's memory
        if self.scale != 1.0:
            Xc /= self.scale
        Xt = Xc.to(self.dtype)
        if not bool(torch.isfinite(Xt).all()):
            raise ValueError(f"the inputs are too large for {self.dtype} after centring (an entry of "
                             f"(x - center) / {self.scale:.3g} overflows): rescale X")
        return Xt
