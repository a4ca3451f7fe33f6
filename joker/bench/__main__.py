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


def _composition_error(exc: BaseException) -> str | None:
    """The one-line message of a Hydra composition error (unknown group option, key or value type), else None.

    Such errors are raised before any job runs: an unknown config group option
    (``method=eigenpro5``), a key the schema lacks (``dataset.lamm=1``), a value of
    the wrong type (``timeout_s=abc``), an override Hydra cannot parse. Hydra
    would print them over several lines and exit 1, the status of a failed trial.
    """
    from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException

    if isinstance(exc, MissingConfigException):
        options = ", ".join(exc.options) if getattr(exc, "options", None) else ""
        first = str(exc).splitlines()[0] if str(exc) else "config not found"
        return f"{first} (available: {options})" if options else first
    if isinstance(exc, (ConfigCompositionException, OverrideParseException)):
        # Hydra's further lines are its hints (e.g. "add --multirun" after an ambiguous
        # 'method=a,b'): kept, joined into the one line
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
        cause = exc.__cause__
        detail = str(cause).splitlines()[0] if cause is not None and str(cause) else ""
        head = f"{lines[0]}: {detail}" if detail else lines[0]
        hints = [line.replace("add --multirun", "add -m (--multirun)") for line in lines[1:]]
        return "; ".join([head, *hints])
    return None


def cli() -> None:
    """Console entry point: :func:`main`, with a stop outside a job (a parallel launcher waiting) handled too.

    Hydra's own composition errors (an unknown option, key or value type) end
    like the project's config checks: one line ``config error: ...`` on stderr,
    exit status 2 (module docstring); with ``HYDRA_FULL_ERROR=1`` set by the
    user they propagate with Hydra's full traceback instead.
    """
    import os

    user_full_error = os.environ.get("HYDRA_FULL_ERROR", "") not in ("", "0")
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises instead of printing a traceback and exiting 1
    try:
        main()
    except KeyboardInterrupt as exc:
        from joker.bench.sweep.app import interrupted
        from joker.bench.sweep.signals import exit_status

        interrupted(exc)
        raise SystemExit(exit_status(exc)) from None
    except Exception as exc:
        message = None if user_full_error else _composition_error(exc)
        if message is None:
            raise
        from joker.bench.sweep.callbacks import config_error

        raise SystemExit(config_error(message)) from None


if __name__ == "__main__":
    cli()
