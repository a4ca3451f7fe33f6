"""EigenPro3 on Skin: its ``NameError: name 'learning_rate_prefactor' is not defined``, and how the adapter avoids it.

Issue 21: every Skin cell of EigenPro3 ended ``error`` with that upstream
NameError, raised while "Setting up data preconditioner". Cause (read in
``eigenpro3/models.py``, ``KernelModel.get_preconditioner``): the batch is
``b = int(beta / lambda_q)``; ``lr = b / (2 beta)`` when ``b < beta /
lambda_q + 1``, else a formula with the undefined ``learning_rate_prefactor``.
Skin has 3 features and many repeated rows, so its Nystroem spectrum falls
to float32's noise floor within ~100 eigenvalues: ``beta / lambda_q`` passes
``2**24`` (or ``lambda_q <= 0``), ``+ 1`` is lost to rounding and the second
branch runs. Reproduced here on the first 2,000 Skin rows with 500 Nystroem
samples at level 100 (measured: ``beta / lambda_100`` = -3.7e8, a negative
noise eigenvalue; level 30 gives 4.2e4, level 50 1.3e6).
"""

from __future__ import annotations

import numpy as np
import pytest

from adapterutil import require
from baselines import get_adapter
from baselines.base import AdapterError

SIGMA_SKIN = 1.9595  # conf/dataset/skin.yaml: median heuristic on the standardised training set
N_NYSTROM, LEVEL = 500, 100
OPTIONS = {"n_centers": 500, "epochs": 3, "n_nystrom": N_NYSTROM, "preconditioner_level": LEVEL}


@pytest.fixture(scope="module")
def skin():
    require("eigenpro3")
    from joker.data import load_dataset

    return load_dataset("skin", n_train=2_000, n_test=2_000, subset="head", seed=0, dtype="float32",
                        download=False, progress=False)


def _adapter():
    return get_adapter("eigenpro3", task="binary", loss="squared", sigma=SIGMA_SKIN, lam=1.0, dtype="float32",
                       **OPTIONS)


def test_upstream_raises_the_name_error_at_the_requested_level(skin):
    """The condition is real: EigenPro3 itself, on these rows at this level, raises the NameError."""
    import torch

    from baselines.eigenpro3 import import_eigenpro3

    models = import_eigenpro3()
    from eigenpro3.kernels import gaussian
    from eigenpro3.utils.svd import nystrom_kernel_svd

    X = torch.from_numpy(np.ascontiguousarray(skin.X_train))
    Y = torch.from_numpy(skin.y_train[:, None].astype(np.float32))
    kernel = lambda a, b: gaussian(a, b, bandwidth=SIGMA_SKIN)  # noqa: E731
    eigvals, _, beta = nystrom_kernel_svd(X[:N_NYSTROM], kernel, LEVEL + 1)
    ratio = beta / eigvals[LEVEL]
    assert not bool(int(ratio) < ratio + 1), float(ratio)  # the branch test upstream fails
    with pytest.raises(NameError, match="learning_rate_prefactor"):
        models.KernelModel(1, X[:500], kernel, X=X, y=Y, nystrom_samples=X[:N_NYSTROM],
                           data_preconditioner_level=LEVEL, make_dataloader=False)


def test_adapter_picks_a_level_that_avoids_it_and_learns(skin):
    adapter = _adapter()
    adapter.fit(skin.X_train, skin.y_train)
    used = adapter.plan_["preconditioner_level_used"]
    assert 1 <= used < LEVEL
    assert adapter.plan_["batch_size"] <= len(skin.X_train)
    info = adapter.describe()
    assert info["preconditioner"]["level_requested"] == LEVEL and info["preconditioner"]["level_used"] == used
    assert "learning_rate_prefactor" in info["preconditioner"]["rule"]
    assert np.mean(adapter.predict(skin.X_test) == skin.y_test) > 0.95
    assert adapter.convergence()["diverged"] is False


def test_the_broken_level_is_a_one_line_adapter_error(skin):
    """Were the bug hit anyway (even level 1), the trial's reason names the upstream cause in one line."""
    import torch

    from baselines.eigenpro3 import import_eigenpro3
    from eigenpro3.kernels import gaussian

    models = import_eigenpro3()
    adapter = _adapter()
    adapter._kernel = lambda a, b: gaussian(a, b, bandwidth=SIGMA_SKIN)
    X = torch.from_numpy(np.ascontiguousarray(skin.X_train))
    Y = torch.from_numpy(skin.y_train[:, None].astype(np.float32))
    with pytest.raises(AdapterError) as info:
        adapter._build(models, 1, X[:500], X, Y, torch.device("cpu"), X[:N_NYSTROM], LEVEL, False)
    message = str(info.value)
    assert "\n" not in message and "learning_rate_prefactor" in message and f"level {LEVEL}" in message
