"""Hydra's submitit SLURM launcher, made to lose no trial.

The upstream launcher (``hydra-submitit-launcher``) submits one SLURM job per
trial and then asks every job for its result; the first job that ended
without one (cancelled, past its time limit, its node gone) raises, and the
whole sweep stops there, with the trials after it unread. This launcher
submits the same jobs with the same settings (``conf/launcher/submitit_slurm.yaml``
selects it with ``_target_``), but collects each job on its own:

* a job that ended without a result gets its trial recorded by this process
  (:func:`joker.bench.sweep.app.record_lost_trial`), with SLURM's account of what
  happened (:func:`joker.bench.sweep.slurm.lost_job_verdict`), unless the job
  recorded it itself before dying;
* the sweep goes on to the next job, and Hydra sees every job completed;
* each job's trial line is printed as the job is collected (the job itself
  prints it into its SLURM log only).

It also masks tracking-URI passwords in the per-job lines it logs.
"""

from __future__ import annotations

import copy
import logging
from pathlib import Path
from typing import Any, List, Sequence

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import BaseSubmititLauncher
from omegaconf import OmegaConf, open_dict, read_write

from joker.bench.records.redact import redact_uri

log = logging.getLogger(__name__)


class SlurmLauncher(BaseSubmititLauncher):
    """One SLURM job per trial; a job that dies without a record still yields one.

    Parameters are those of Hydra's ``submitit_slurm`` launcher
    (``hydra.launcher.*``: ``partition``, ``timeout_min``, ``cpus_per_task``,
    ``gpus_per_node``, ``mem_gb``, ``array_parallelism``, ...).
    """

    _EXECUTOR = "slurm"

    def _executor(self) -> Any:
        """A submitit SLURM executor with this launcher's parameters."""
        import submitit

        params = dict(self.params)
        folder = params.pop("submitit_folder")
        max_timeouts = params.pop("max_num_timeout", 0)
        executor = submitit.AutoExecutor(cluster="slurm", folder=folder, slurm_max_num_timeout=max_timeouts)
        # Generic keys (timeout_min, mem_gb, ...) as they are; SLURM-only keys with submitit's prefix.
        generic = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(**{k if k in generic else f"slurm_{k}": v for k, v in params.items()})
        return executor

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        """Submit one job array, then collect every job (see the module docstring)."""
        assert self.config is not None and len(job_overrides) > 0
        sweep_dir = Path(str(self.config.hydra.sweep.dir))
        sweep_dir.mkdir(parents=True, exist_ok=True)
        executor = self._executor()
        log.info("Submitit 'slurm' sweep output dir : %s", sweep_dir)
        calls: List[tuple] = []
        for i, overrides in enumerate(job_overrides):
            num = initial_job_idx + i
            log.info("\t#%d : %s", num, redact_uri(" ".join(filter_overrides(overrides))))
            calls.append((list(overrides), "hydra.sweep.dir", num, f"job_id_for_{num}", Singleton.get_state()))
        jobs = executor.map_array(self, *zip(*calls))
        return [self._collect(job, call[0], call[2], sweep_dir) for job, call in zip(jobs, calls)]

    @staticmethod
    def _echo(summary: Any, sweep_dir: Path) -> None:
        """Print the job's trial line here too (the job printed it into its SLURM log)."""
        from joker.bench.sweep.summary import format_line
        from joker.bench.sweep.sweep_state import read_done, read_sweep_state

        if isinstance(summary, dict):
            state = read_sweep_state(sweep_dir) or {}
            done = read_done(sweep_dir, state.get("parent_run_id"))  # this sweep's jobs only
            print(format_line(summary, len(done), state.get("n_jobs")), flush=True)

    def _collect(self, job: Any, overrides: List[str], num: int, sweep_dir: Path) -> JobReturn:
        """The job's own JobReturn, or one for the trial recorded on its behalf."""
        from joker.bench.sweep.app import record_lost_trial
        from joker.bench.sweep.slurm import lost_job_verdict

        try:
            ret = job.results()[0]
            if ret.status == JobStatus.COMPLETED:
                self._echo(ret.return_value, sweep_dir)
                return ret
            error: BaseException = ret._return_value
        except Exception as exc:  # UncompletedJobError, FailedJobError
            ret, error = None, exc
        verdict = lost_job_verdict(job.job_id, error)
        log.warning("job #%d (SLURM %s) ended without a record: %s", num, job.job_id, verdict["reason"])
        assert self.hydra_context is not None and self.config is not None
        sweep_cfg = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
        with open_dict(sweep_cfg.hydra.job):
            sweep_cfg.hydra.job.num = num
        job_dir = sweep_dir / str(sweep_cfg.hydra.sweep.subdir)
        task_cfg = copy.deepcopy(sweep_cfg)
        with read_write(task_cfg), open_dict(task_cfg):
            del task_cfg["hydra"]
        try:
            summary = record_lost_trial(task_cfg, sweep_dir, job_dir, num, verdict)
        except Exception:
            if ret is not None:  # the job's own failure says more than ours
                return ret
            raise
        return JobReturn(
            overrides=overrides, cfg=task_cfg, hydra_cfg=sweep_cfg, working_dir=str(job_dir),
            task_name=str(sweep_cfg.hydra.job.name), status=JobStatus.COMPLETED, _return_value=summary,
        )
