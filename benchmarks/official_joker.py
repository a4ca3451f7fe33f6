"""Drive the official Joker implementation, unmodified, from a checkout named by ``OFFICIAL_JOKER_ROOT``.

Part of ``make bench-solver`` (issue 13): the official code of the Joker
paper (the public repository ``Apple-Zhang/Joker-paper``; its paper-era
commit is of 2025-07-14) is timed in the same run as our solver on the same
problems. Nothing of it is copied into this repository: the child process
that runs an ``official-*`` problem puts ``<root>/src`` first on its own
``sys.path`` and imports the checkout's modules as they are. The official
``src/joker.py`` is loaded under another module name (``official_joker_src``)
because our package is also called ``joker``; its own imports (``optim.*``,
``kernels.*``) resolve from ``<root>/src``. It needs torch, tqdm and scipy
(``kernels/fastfood.py`` imports ``scipy.special``); a missing one is
reported, never installed.

Settings (``docs/anchors.md``, "The official Joker implementation on 5,000
points"): float32, 2 threads, device ``cpu``, optimisation blocks of 512
rows (2,048 for HEPC) drawn uniformly at random, data blocks of 2,048 rows,
at most 50 trust-region iterations per block, trust-region radius cap 64,
shrunk by 0.9 every 1,000 blocks, ``c = 1 / lam = 1``; ``torch`` seeded
with 42 (as the official ``experiments.py``) and Python's ``random`` (the
official block order) with 0.

Timing: ``fit`` is called on chunks of 100 blocks (the radius cap passed
to each chunk follows the official shrink schedule exactly, since chunks
align with its 1,000-block period); only the ``fit`` calls are timed. After
each chunk the relative duality gap is computed by *our* certificate code
(:func:`joker.certificates.certify`, float64) on the official dual
variables ``alpha`` -- with the exact kernel ``f = K alpha``; with random
features ``f = Phi theta`` for the official ``theta`` (its ``beta``) and its
own feature map (``W``, ``b``) -- so the gap is comparable with our
solver's. The first chunk gives the 100-block time and gap; further chunks
run until the gap is at most 1e-3 or ``max_blocks`` is reached. One official
epoch is as many blocks as the data has optimisation blocks.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import os
import random
import sys
import time

__all__ = ["ENV", "LAM", "GAP_TOL", "SETTINGS", "OfficialUnavailable", "check_root", "load", "run", "certificate"]

#: Environment variable naming the checkout of the official repository.
ENV = "OFFICIAL_JOKER_ROOT"
#: Regularisation of every comparison problem (the official ``c = 1 / lam``).
LAM = 1.0
#: The relative duality gap both solvers are timed to.
GAP_TOL = 1e-3
#: The official code's options, as the anchors were measured (module docstring).
SETTINGS = dict(dtype="float32", device="cpu", opt_block=512, data_block=2048, max_iter_subprob=50,
                max_region_size=64.0, region_shrink_freq=1000, region_shrink_rate=0.9, torch_seed=42, block_seed=0,
                chunk=100)
#: Our loss name -> the official criterion name (``optim/criterion.py``).
CRITERIA = {"squared": "mse", "squared_hinge": "svm", "logistic": "log"}


class OfficialUnavailable(RuntimeError):
    """The checkout cannot be used (bad path, missing dependency, import error); the message is one line."""


def check_root(root):
    """One-line reason why ``root`` is not a usable checkout, or None.

    Parameters
    ----------
    root : str
        Path given in ``OFFICIAL_JOKER_ROOT``.

    Returns
    -------
    str or None
    """
    if not root:
        return f"{ENV} is empty"
    if not os.path.isdir(root):
        return f"{ENV}={root} is not a directory"
    missing = [p for p in ("src/joker.py", "src/optim/trust_region.py", "src/kernels/kernel.py")
               if not os.path.isfile(os.path.join(root, p))]
    if missing:
        return (f"{ENV}={root} is not a checkout of the official Joker repository "
                f"(github.com/Apple-Zhang/Joker-paper): no {', '.join(missing)}")
    return None


def load(root):
    """Import the official code from ``<root>/src`` (call in a child process only).

    Parameters
    ----------
    root : str

    Returns
    -------
    dict
        ``Joker``, ``InexactJoker`` (classes of ``src/joker.py``),
        ``make_kernel``, ``make_criterion``.

    Raises
    ------
    OfficialUnavailable
        Bad path, a dependency missing from this environment, or any import error.
    """
    why = check_root(root)
    if why:
        raise OfficialUnavailable(why)
    src = os.path.join(os.path.abspath(root), "src")
    sys.path.insert(0, src)
    try:
        kernel_mod = importlib.import_module("kernels.kernel")
        criterion_mod = importlib.import_module("optim.criterion")
        spec = importlib.util.spec_from_file_location("official_joker_src", os.path.join(src, "joker.py"))
        model_mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(model_mod)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if os.path.exists(os.path.join(src, top)) or os.path.exists(os.path.join(src, top + ".py")):
            raise OfficialUnavailable(f"the checkout at {root} has no module {exc.name!r} (incomplete, or not "
                                      f"the paper-era layout of its src/)") from exc
        raise OfficialUnavailable(f"the official code at {root} needs the module {exc.name!r}, which this "
                                  f"environment lacks (the bench installs nothing; add it to the venv)") from exc
    except Exception as exc:
        raise OfficialUnavailable(f"importing the official code from {src} failed: "
                                  f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
    return dict(Joker=model_mod.Joker, InexactJoker=model_mod.InexactJoker, make_kernel=kernel_mod.make_kernel,
                make_criterion=criterion_mod.make_criterion)


def _features_f64(model, X, chunk=16384):
    """Yield (rows, Phi(X[rows])) in float64 from the official RFF map ``sqrt(2/M) cos(X W + b)``."""
    import torch

    W, b = model.kernel.W.to(torch.float64), model.kernel.b.to(torch.float64)
    scale = math.sqrt(2.0 / W.shape[1])
    for s in range(0, X.shape[0], chunk):
        yield slice(s, s + chunk), torch.cos(X[s:s + chunk] @ W + b) * scale


def certificate(model, loss_name, Xtr, ytr, sigma, n_components):
    """Our certificate (:func:`joker.certificates.certify`, float64) at the official model's variables.

    Parameters
    ----------
    model : official ``Joker`` or ``InexactJoker``
        After ``fit``; ``alpha`` of shape (n, 1), ``beta`` (K alpha, or theta with random features).
    loss_name : {"squared", "squared_hinge", "logistic"}
    Xtr : array of shape (n, d)
    ytr : array of shape (n,)
    sigma : float
        Gaussian bandwidth (the official gamma is 1 / (2 sigma^2)).
    n_components : int or None
        Random features M, or None for the exact kernel.

    Returns
    -------
    joker.certificates.Certificate
    """
    import torch

    from joker.certificates import certify
    from joker.kernels import kernel_matmul
    from joker.losses import make_loss

    X = torch.as_tensor(Xtr, dtype=torch.float64)
    y = torch.as_tensor(ytr, dtype=torch.float64).reshape(-1, 1)
    alpha = model.alpha.detach().to(torch.float64).cpu()
    loss = make_loss(loss_name)
    if n_components is None:
        return certify(loss, alpha, kernel_matmul(X, X, alpha, "gaussian", sigma), y, LAM)
    theta = model.beta.detach().to(torch.float64).cpu()
    f = torch.empty_like(alpha)
    theta_dual = torch.zeros_like(theta)
    for rows, Phi in _features_f64(model, X):
        f[rows] = Phi @ theta
        theta_dual += Phi.T @ alpha[rows]
    return certify(loss, alpha, f, y, LAM, sq_norms=(theta ** 2).sum(0), sq_norms_dual=(theta_dual ** 2).sum(0))


def _build(code, loss_name, data, n_components, block_size):
    """The official model on the training data (float32 tensors, y of shape (n, 1))."""
    import torch

    s = SETTINGS
    X = torch.as_tensor(data["Xtr"], dtype=torch.float32)
    y = torch.as_tensor(data["ytr"], dtype=torch.float32).reshape(-1, 1)
    gamma = 1.0 / (2.0 * data["sigma"] ** 2)
    kernel = code["make_kernel"]("rbf", gamma=gamma)
    criterion = code["make_criterion"](CRITERIA[loss_name], c=1.0 / LAM, dtype=torch.float32, delta=-1, eps=-1)
    kw = dict(dtype=torch.float32, kernel=kernel, criterion=criterion, data_blksz=s["data_block"],
              opt_blksz=block_size, device=s["device"])
    if n_components is None:
        return code["Joker"](X, y, **kw)
    return code["InexactJoker"](X, y, n_features=n_components, feature_type="rff", **kw)


def _metric(model, data, metric_name):
    """Test metric of the official model (its own ``predict``)."""
    import numpy as np
    import torch

    pred = model.predict(torch.as_tensor(data["Xte"], dtype=torch.float32)).reshape(-1).double().numpy()
    if metric_name == "accuracy":
        return "accuracy", float(np.mean(np.where(pred >= 0, 1.0, -1.0) == data["yte"]))
    mse = float(np.mean((pred - data["yte"]) ** 2))
    return (metric_name, math.sqrt(mse)) if metric_name == "RMSE" else (metric_name, mse)


def run(code, data, *, loss, n_components=None, block_size=None, metric="MSE", max_blocks=2000,
        to_gap=True, epochs=None):
    """Time the official code on one problem (child process); see the module docstring.

    Parameters
    ----------
    code : dict
        The official code, from :func:`load`.
    data : dict
        ``Xtr, ytr, Xte, yte, sigma`` (as :func:`benchmarks.solver_bench.load_5k`).
    loss : {"squared", "squared_hinge", "logistic"}
    n_components : int, optional
        Random features M (None: exact kernel).
    block_size : int, optional
        Optimisation block (default ``SETTINGS["opt_block"]``, 512).
    metric : {"MSE", "RMSE", "accuracy"}
    max_blocks : int
        Most blocks run while waiting for a gap of 1e-3 (at least one chunk).
    to_gap : bool
        Continue past the first chunk until the gap reaches 1e-3.
    epochs : float, optional
        Run this many epochs as the first (timed) chunk instead of 100 blocks.

    Returns
    -------
    dict
        ``blocks_first``, ``first_s`` (time of the first chunk), ``first_gap``,
        ``epochs_first``, ``s_per_epoch``, ``to_gap_s`` (None when not reached),
        ``blocks``, ``gap``, ``primal``, ``dual``, ``kkt``, ``metric``, ``init_s``,
        ``trace`` (blocks, seconds, gap after each chunk), ``gap_source``.
    """
    import torch

    s = SETTINGS
    block_size = block_size or s["opt_block"]
    torch.manual_seed(s["torch_seed"])
    random.seed(s["block_seed"])
    t = time.perf_counter()
    model = _build(code, loss, data, n_components, block_size)
    init_s = time.perf_counter() - t
    n_blocks = math.ceil(len(data["ytr"]) / block_size)
    first = int(round(epochs * n_blocks)) if epochs else s["chunk"]
    done, timed, trace, to_gap_s = 0, 0.0, [], None
    cert = None
    while done < max(first, max_blocks if to_gap else first):
        k = first if done == 0 else min(s["chunk"], max_blocks - done)
        radius = s["max_region_size"] * s["region_shrink_rate"] ** (done // s["region_shrink_freq"])
        t = time.perf_counter()
        model.fit(max_iter=k, max_iter_subprob=s["max_iter_subprob"], max_region_size=radius,
                  region_shrink_freq=s["region_shrink_freq"], region_shrink_rate=s["region_shrink_rate"],
                  blk_strategy="random", verbose_freq=10 ** 9)
        timed += time.perf_counter() - t
        done += k
        cert = certificate(model, loss, data["Xtr"], data["ytr"], data["sigma"], n_components)
        trace.append((done, timed, cert.gap))
        if cert.gap <= GAP_TOL:
            to_gap_s = timed
            break
        if not to_gap:
            break
    first_blocks, first_s, first_gap = trace[0]
    return dict(
        method=(f"official Joker {'RFF M=' + str(n_components) if n_components else 'exact'} "
                f"{CRITERIA[loss]}, block {block_size}, float32"),
        blocks_first=first_blocks, first_s=first_s, first_gap=first_gap, epochs_first=first_blocks / n_blocks,
        s_per_epoch=first_s / (first_blocks / n_blocks), to_gap_s=to_gap_s, blocks=done,
        epochs=done / n_blocks, fit_s=timed, gap=cert.gap, primal=cert.primal, dual=cert.dual, kkt=cert.kkt,
        converged=to_gap_s is not None, init_s=init_s, metric=_metric(model, data, metric), trace=trace,
        gap_source="our certificate (joker.certificates.certify, float64) on the official alpha"
                   + (" and theta" if n_components else ""),
    )
