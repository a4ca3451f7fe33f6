"""Sparse training inputs (scipy.sparse CSR/CSC) for the Joker kernels, never densified whole.

:class:`SparseRows` keeps the CSR arrays of the (scaled, cast) inputs as
torch tensors on the solve's device and gives the kernel code what it
needs from them:

- ``X[i:j]``: a torch sparse CSR tensor of those rows (views of the
  arrays), for the products ``X[i:j] @ Z^T`` of kernel rows and random
  features (``torch.mm``: MKL on the CPU, cuSPARSE on CUDA);
- ``X[idx]`` (a long tensor): those rows as a dense (len(idx), d) tensor,
  for the blocks K_BB and the columns of K a block step needs (|B| x d, not
  n x d);
- :func:`sq_norms`: ||x_i||^2 from the stored values only.

The Gaussian and Laplacian kernels need nothing else: squared distances are
||x||^2 + ||z||^2 - 2 x.z (:func:`joker.kernels.sq_dists`), so a kernel row
costs O(nnz) per column instead of O(n d). Sparse inputs are not centred
(that would make them dense; the kernels are shift-invariant, and centring
is only there to spare float32 a large common offset, which sparse data,
zero for most entries, does not have).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["SparseRows", "is_sparse", "sq_norms", "matmul", "abs_max"]


def _csr_tensor(crow, col, val, shape):
    with warnings.catch_warnings():  # torch: "Sparse CSR tensor support is in beta state" (mm is stable)
        warnings.simplefilter("ignore", UserWarning)
        return torch.sparse_csr_tensor(crow, col, val, size=shape, check_invariants=False)


class SparseRows:
    """Rows of a CSR matrix as torch tensors (module docstring).

    Parameters
    ----------
    indptr, indices : int64 tensors of shape (n + 1,) and (nnz,)
    data : float tensor of shape (nnz,)
    shape : (int, int)

    Attributes
    ----------
    shape, dtype, device
    """

    def __init__(self, indptr, indices, data, shape):
        self.indptr, self.indices, self.data = indptr, indices, data
        self.shape = (int(shape[0]), int(shape[1]))
        self._full = None

    @classmethod
    def from_scipy(cls, A, dtype, device, scale=1.0):
        """The rows of ``A / scale`` (any scipy.sparse matrix or array), values of ``dtype`` on ``device``.

        The division is done in float64 before the cast (``scale`` is a
        power of two: exact). Duplicate entries are summed.
        """
        A = sp.csr_matrix(A, copy=False)
        if not A.has_canonical_format:
            A = A.copy()
            A.sum_duplicates()
        data = torch.from_numpy(np.asarray(A.data, dtype=np.float64))
        if scale != 1.0:
            data = data / scale
        return cls(torch.from_numpy(A.indptr.astype(np.int64)).to(device),
                   torch.from_numpy(A.indices.astype(np.int64)).to(device),
                   data.to(device=device, dtype=dtype), A.shape)

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def device(self):
        return self.data.device

    @property
    def ndim(self):
        return 2

    @property
    def nnz(self):
        return int(self.data.shape[0])

    def element_size(self):
        """Bytes of one value (as a dense tensor's ``element_size``)."""
        return self.data.element_size()

    def to(self, dtype):
        """The same rows with values of ``dtype``."""
        return SparseRows(self.indptr, self.indices, self.data.to(dtype), self.shape)

    def double(self):
        return self.to(torch.float64)

    def csr(self):
        """All rows as one torch sparse CSR tensor (views of the arrays)."""
        if self._full is None:
            self._full = _csr_tensor(self.indptr, self.indices, self.data, self.shape)
        return self._full

    def __getitem__(self, key):
        if isinstance(key, slice):
            i, j, step = key.indices(self.shape[0])
            if step != 1:
                raise IndexError("SparseRows: row slices must have step 1")
            j = max(i, j)
            a, b = int(self.indptr[i]), int(self.indptr[j])
            return _csr_tensor(self.indptr[i:j + 1] - a, self.indices[a:b], self.data[a:b], (j - i, self.shape[1]))
        return self.rows(torch.as_tensor(key, device=self.device))

    def rows(self, idx):
        """Rows ``idx`` as a dense tensor of shape (len(idx), n_features).

        Parameters
        ----------
        idx : long tensor of shape (k,)

        Returns
        -------
        tensor of shape (k, n_features), ``dtype`` on ``device``
        """
        idx = idx.reshape(-1).to(torch.long)
        start = self.indptr[idx]
        count = self.indptr[idx + 1] - start
        out = torch.zeros((idx.shape[0], self.shape[1]), dtype=self.dtype, device=self.device)
        total = int(count.sum())
        if total:
            row = torch.repeat_interleave(torch.arange(idx.shape[0], device=self.device), count)
            first = torch.cumsum(count, 0) - count  # position of each row's first value in the gather
            pos = torch.arange(total, device=self.device) - first[row] + start[row]
            out[row, self.indices[pos]] = self.data[pos]
        return out


def is_sparse(X):
    """Whether ``X`` is a :class:`SparseRows` or a torch sparse CSR tensor."""
    return isinstance(X, SparseRows) or (torch.is_tensor(X) and X.layout == torch.sparse_csr)


def sq_norms(X):
    """Squared row norms ||x_i||^2 of a dense tensor, a torch CSR tensor or :class:`SparseRows`.

    Returns
    -------
    tensor of shape (n,), X's dtype and device
    """
    if isinstance(X, SparseRows):
        crow, val = X.indptr, X.data
    elif torch.is_tensor(X) and X.layout == torch.sparse_csr:
        crow, val = X.crow_indices(), X.values()
    else:
        return (X * X).sum(1)
    n = crow.shape[0] - 1
    row = torch.repeat_interleave(torch.arange(n, device=val.device), crow[1:] - crow[:-1])
    return torch.zeros(n, dtype=val.dtype, device=val.device).index_add_(0, row, val * val)


def matmul(X, B):
    """X @ B for a dense or sparse X (:class:`SparseRows` or torch CSR) and a dense B."""
    if isinstance(X, SparseRows):
        X = X.csr()
    return torch.mm(X, B)


def abs_max(X):
    """max |x_ij| of a dense tensor or :class:`SparseRows` (0.0 when empty)."""
    vals = X.data if isinstance(X, SparseRows) else X
    return float(vals.abs().max()) if vals.numel() else 0.0


def row_abs_max(X):
    """max_j |x_ij| of every row of a dense tensor, a torch CSR tensor or :class:`SparseRows`, never densified.

    Returns
    -------
    tensor of shape (n,), X's dtype and device (0 for an empty row)
    """
    if isinstance(X, SparseRows):
        crow, val = X.indptr, X.data
    elif torch.is_tensor(X) and X.layout == torch.sparse_csr:
        crow, val = X.crow_indices(), X.values()
    else:
        return X.abs().amax(1) if X.shape[1] else torch.zeros(X.shape[0], dtype=X.dtype, device=X.device)
    n = crow.shape[0] - 1
    row = torch.repeat_interleave(torch.arange(n, device=val.device), crow[1:] - crow[:-1])
    out = torch.zeros(n, dtype=val.dtype, device=val.device)
    return out.scatter_reduce_(0, row, val.abs(), reduce="amax", include_self=True)
