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

Exit status: 0 when every trial ran (a multirun records failed trials and
goes on); 1 when the single trial of a plain run failed (status other
than ``ok`` or ``skipped``); 2 on a config error (one line on stderr, no
folder left); 130 after Ctrl-C, 143 after SIGTERM (``kill``, ``timeout``,
SLURM), 129 after SIGHUP: the sweep's parent run is marked KILLED, the
finished trials stay recorded (:mod:`joker.bench.sweep.signals`).
"""

from __future__ import annotations

from typing import Any

import hydra

from joker.bench.config.paths import export_conf_env, sweeps_dir
from joker.bench.config.schema import register_configs

export_conf_env()
register_configs()


@hydra.main(version_base="1.3", config_path=str(sweeps_dir()), config_name="default")
def main(cfg: Any) -> Any:
    """Hydra task: run one trial (see :func:`joker.bench.sweep.app.run_job`); exit status in the module docstring."""
    from joker.bench.sweep.app import interrupted, run_job, single_trial_failed
    from joker.bench.sweep.callbacks import config_error
    from joker.bench.sweep.signals import exit_status
    from joker.bench.config.spec import ConfigError

    try:
        summary = run_job(cfg)
    except ConfigError as exc:  # a swept value the callback's check could not see
        raise SystemExit(config_error(exc)) from None
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM / SIGHUP (joker.bench.sweep.signals.Terminated)
        interrupted(exc)
        raise SystemExit(exit_status(exc)) from None
    if single_trial_failed(summary):
        raise SystemExit(1)
    return summary


def cli() -> None:
    """Console entry point: :func:`main`, with a stop outside a job (a parallel launcher waiting) handled too."""
    try:
        main()
    except KeyboardInterrupt as exc:
        from joker.bench.sweep.app import interrupted
        from joker.bench.sweep.signals import exit_status

        interrupted(exc)
        raise SystemExit(exit_status(exc)) from None


if __name__ == "__main__":
    cli()
