"""SLURM's word on a trial that died inside a SLURM job.

When SLURM ends a job (``scancel``, the job's time limit, preemption, a node
failure), it sends SIGTERM to every process of the job, waits ``KillWait``
seconds (30 by default) and then sends SIGKILL. The submitit job process
ignores SIGTERM, so the harness inside the job sees its trial die of the
signal and still has those seconds to record it. A bare "killed by signal
SIGTERM" would hide why; :func:`slurm_verdict` asks the accounting database
(``sacct``) what happened to the job and records that instead, e.g. status
``timeout`` with reason "SLURM job 41_3 reached its time limit (00:10:00;
ended TIMEOUT after 00:10:01) ...". A time limit reads the same whether the
trial's own record, submitit's warning signal or the lost-job check
records it; other endings read "SLURM ended job 41_3: CANCELLED by ...".

``sacct`` (slurmdbd) is used rather than ``scontrol``: right after a
``scancel`` the controller reports the job as ``COMPLETING``, while the
accounting record already says ``CANCELLED by <uid>``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Dict, Mapping, Optional

#: SLURM job states that end a job, and the trial status each one means
#: (docs/contracts.md statuses); states not listed here mean ``error``.
STATE_STATUS = {"TIMEOUT": "timeout", "DEADLINE": "timeout", "OUT_OF_MEMORY": "oom"}
#: States in which SLURM has not (yet) ended the job.
LIVE_STATES = ("PENDING", "RUNNING", "COMPLETING", "CONFIGURING", "REQUEUED", "RESIZING", "SUSPENDED")
#: Signals with which SLURM ends the processes of a job.
SLURM_SIGNALS = (signal.SIGTERM, signal.SIGKILL, signal.SIGINT)
#: The time-limit warning submitit asks SLURM for (``--signal=USR2@signal_delay_s``).
WARNING_SIGNAL = signal.SIGUSR2


def job_label(env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Return the running SLURM job as SLURM names it (``41`` or ``41_3``), or ``None``.

    Parameters
    ----------
    env : mapping, optional
        Environment to read (default ``os.environ``): ``SLURM_JOB_ID``,
        ``SLURM_ARRAY_JOB_ID``, ``SLURM_ARRAY_TASK_ID``.
    """
    env = os.environ if env is None else env
    if not env.get("SLURM_JOB_ID"):
        return None
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return f"{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    return env["SLURM_JOB_ID"]


def job_state(job_id: str, timeout_s: float = 10.0) -> Optional[Dict[str, str]]:
    """Return the accounting record of one job, or ``None`` when ``sacct`` cannot say.

    Parameters
    ----------
    job_id : str
        ``41``, ``41_3`` or the raw id of an array task.
    timeout_s : float
        Limit of the ``sacct`` call in seconds.

    Returns
    -------
    dict or None
        ``{"state": "CANCELLED", "detail": "CANCELLED by 0", "reason": ...,
        "timelimit": "00:10:00", "elapsed": "00:00:42", "exit_code": "0:15"}``
        (``exit_code``: SLURM's ``<exit status>:<signal>``).
    """
    try:
        r = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-j", str(job_id), "-o", "State,Reason,Timelimit,Elapsed,ExitCode"],
            capture_output=True, text=True, timeout=timeout_s,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    if r.returncode != 0 or not lines:
        return None
    fields = (lines[-1].split("|") + [""] * 5)[:5]
    return {
        "state": fields[0].split()[0] if fields[0] else "", "detail": fields[0],
        "reason": fields[1], "timelimit": fields[2], "elapsed": fields[3], "exit_code": fields[4],
    }


def verdict_from_state(label: str, st: Dict[str, str]) -> Dict[str, str]:
    """Turn an ended job's accounting record into a trial verdict.

    Parameters
    ----------
    label : str
        The job (``41_3``).
    st : dict
        :func:`job_state`'s record.

    Returns
    -------
    dict
        ``{"status": "timeout" | "oom" | "error", "reason": str}``.
    """
    state = st["state"]
    if state == "TIMEOUT":  # the same words as the warning-signal and lost-job paths: one phrase per cause
        reason = (f"SLURM job {label} reached its time limit ({st.get('timelimit') or '?'}; "
                  f"ended {st['detail'] or state} after {st.get('elapsed') or '?'})")
        if st.get("reason") and st["reason"] != "None":
            reason += f"; SLURM reason: {st['reason']}"
        return {"status": "timeout", "reason": reason}
    what = {
        "CANCELLED": "cancelled (scancel or an administrator)",
        "PREEMPTED": "preempted by a higher-priority job",
        "NODE_FAIL": "its node failed",
        "OUT_OF_MEMORY": "over its memory request",
        "DEADLINE": "deadline reached",
    }.get(state, "ended by SLURM")
    reason = f"SLURM ended job {label}: {st['detail'] or state} ({what}; ran {st.get('elapsed') or '?'})"
    if st.get("reason") and st["reason"] != "None":
        reason += f"; SLURM reason: {st['reason']}"
    return {"status": STATE_STATUS.get(state, "error"), "reason": reason}


def slurm_verdict(
    verdict: Dict[str, str], signum: Optional[int], killed_by_harness: bool,
    env: Optional[Mapping[str, str]] = None, wait_s: float = 3.0,
) -> Dict[str, str]:
    """Replace a "killed by signal" verdict with SLURM's reason when SLURM ended the job.

    Parameters
    ----------
    verdict : dict
        ``{"status", "reason"}`` from :func:`joker.bench.trials.runner.classify`.
    signum : int or None
        The signal that ended the trial.
    killed_by_harness : bool
        The harness itself killed the trial (its own timeout or memory
        limit): that verdict stands.
    env : mapping, optional
        Environment (default ``os.environ``).
    wait_s : float
        How long to wait for the accounting record to show an ended job.

    Returns
    -------
    dict
        ``verdict`` unchanged outside SLURM, for other signals, or when the
        job is still running; ``timeout`` for SIGUSR2, submitit's time-limit
        warning; else SLURM's verdict, with the original reason appended.
    """
    label = job_label(env)
    if label is None or killed_by_harness:
        return verdict
    if signum == WARNING_SIGNAL:  # the reaper ignores it; a trial that died of it still met the limit
        st = job_state(label)
        limit = (st or {}).get("timelimit") or "?"
        return {"status": "timeout", "reason": f"SLURM job {label} reached its time limit ({limit}; "
                f"its warning signal SIGUSR2 ended the trial); trial: {verdict['reason']}"}
    if signum not in SLURM_SIGNALS:
        return verdict
    deadline = time.monotonic() + wait_s
    while True:
        st = job_state(label)
        if st is not None and st["state"] and st["state"] not in LIVE_STATES:
            new = verdict_from_state(label, st)
            return {"status": new["status"], "reason": f"{new['reason']}; trial: {verdict['reason']}"}
        if time.monotonic() >= deadline:
            return verdict
        time.sleep(0.2)



def lost_job_verdict(job_id: str, error: BaseException) -> Dict[str, str]:
    """Verdict of a trial whose SLURM job ended without recording it.

    Parameters
    ----------
    job_id : str
        The SLURM job (``41_3``).
    error : BaseException
        What submitit raised when asked for the job's result
        (``UncompletedJobError``, ``FailedJobError``).

    Returns
    -------
    dict
        ``{"status", "reason"}``: SLURM's state when SLURM ended the job
        (:func:`verdict_from_state`); else ``timeout`` when submitit stopped
        a job near its time limit ("timed-out" in its message), and
        ``error`` otherwise.
    """
    st = job_state(job_id)
    last = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    said = f"; submitit: {last[-1][:300]}" if last else ""
    if st is not None and st["state"] not in LIVE_STATES + ("COMPLETED", "FAILED", ""):
        v = verdict_from_state(job_id, st)
        return {"status": v["status"], "reason": v["reason"] + said}
    if "timed-out" in str(error):  # submitit's SIGUSR2 handler, signal_delay_s before the limit
        limit = st["timelimit"] if st else "?"
        return {"status": "timeout", "reason": f"SLURM job {job_id} reached its time limit ({limit}; "
                "submitit stopped it signal_delay_s before SLURM would have)" + said}
    where = f"{st['detail']}, exit code {st['exit_code']}" if st else "state unknown"
    return {"status": "error", "reason": f"SLURM job {job_id} ended without a record ({where}){said}"}
