"""Entry point: ``python -m joker.bench --config-name <sweep> [overrides]``.

The primary configs are the named sweeps of ``sweeps/`` (``smoke``,
``table4``, ``default`` = one trial); their ``hydra.searchpath`` adds the
config groups of ``conf/`` (dataset, method, budget, launcher). Examples::

    python -m joker.bench --config-name smoke
    python -m joker.bench --config-name table4 scale=local
    python -m joker.bench dataset=ijcnn1 method=libsvm budget=cpu-1g
    python -m joker.bench --config-name smoke launcher=joblib
    python -m joker.bench --config-name smoke --cfg job   # print the config

See README.md for custom sweeps and SLURM.
"""

from __future__ import annotations

from typing import Any

import hydra

from joker.bench.paths import export_conf_env, sweeps_dir
from joker.bench.schema import register_configs

export_conf_env()
register_configs()


@hydra.main(version_base="1.3", config_path=str(sweeps_dir()), config_name="default")
def main(cfg: Any) -> Any:
    """Hydra task: run one trial (see :func:`joker.bench.app.run_job`)."""
    from joker.bench.app import run_job

    return run_job(cfg)


if __name__ == "__main__":
    main()
