"""SLURM's account of a killed job becomes the trial's status and reason (sacct faked
on PATH), and the end-of-sweep check counts records exactly."""

import signal
import stat
from types import SimpleNamespace

import pytest

from joker.bench.sweep import slurm
from joker.bench.sweep.audit import check_records


@pytest.fixture
def fake_sacct(tmp_path, monkeypatch):
    """Put an ``sacct`` on PATH that prints ``line`` (and logs its arguments)."""

    def install(line):
        exe = tmp_path / "sacct"
        exe.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/args\nprintf '%s\\n' '{line}'\n")
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
        monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
        return tmp_path / "args"

    return install


JOB = {"SLURM_JOB_ID": "45", "SLURM_ARRAY_JOB_ID": "41", "SLURM_ARRAY_TASK_ID": "3"}
SIGTERM_VERDICT = {"status": "error", "reason": "killed by signal SIGTERM (15) (during fit)"}


def test_job_label():
    assert slurm.job_label(JOB) == "41_3"
    assert slurm.job_label({"SLURM_JOB_ID": "7"}) == "7"
    assert slurm.job_label({}) is None


def test_cancelled_job(fake_sacct):
    args = fake_sacct("CANCELLED by 1000|None|00:10:00|00:00:42|0:15")
    v = slurm.slurm_verdict(SIGTERM_VERDICT, signal.SIGTERM, False, env=JOB, wait_s=0)
    assert v == {
        "status": "error",
        "reason": "SLURM ended job 41_3: CANCELLED by 1000 (cancelled (scancel or an administrator); "
                  "ran 00:00:42); trial: killed by signal SIGTERM (15) (during fit)",
    }
    assert "-j 41_3" in args.read_text()


def test_time_limit_is_a_timeout(fake_sacct):
    fake_sacct("TIMEOUT|TimeLimit|00:10:00|00:10:01|0:0")
    v = slurm.slurm_verdict(SIGTERM_VERDICT, signal.SIGTERM, False, env=JOB, wait_s=0)
    assert v["status"] == "timeout"
    assert v["reason"].startswith("SLURM job 41_3 reached its time limit (00:10:00; ended TIMEOUT after 00:10:01)"
                                  "; SLURM reason: TimeLimit; trial:")
    # the same words as the lost-job path, so one phrase finds every time limit
    v = slurm.lost_job_verdict("41_3", RuntimeError("lost"))
    assert v == {"status": "timeout", "reason": "SLURM job 41_3 reached its time limit (00:10:00; ended TIMEOUT "
                                                "after 00:10:01); SLURM reason: TimeLimit; submitit: lost"}


def test_verdict_stands_outside_slurm_for_other_signals_and_harness_kills(fake_sacct):
    fake_sacct("CANCELLED by 0|None|00:10:00|00:00:42|0:15")
    assert slurm.slurm_verdict(SIGTERM_VERDICT, signal.SIGTERM, False, env={}, wait_s=0) == SIGTERM_VERDICT
    assert slurm.slurm_verdict(SIGTERM_VERDICT, signal.SIGSEGV, False, env=JOB, wait_s=0) == SIGTERM_VERDICT
    assert slurm.slurm_verdict(SIGTERM_VERDICT, signal.SIGKILL, True, env=JOB, wait_s=0) == SIGTERM_VERDICT


def test_time_limit_warning_is_a_timeout(fake_sacct):
    fake_sacct("RUNNING|None|00:02:00|00:01:31|0:0")
    usr2 = {"status": "error", "reason": "killed by signal SIGUSR2 (12) (during fit)"}
    v = slurm.slurm_verdict(usr2, signal.SIGUSR2, False, env=JOB, wait_s=0)
    assert v == {"status": "timeout", "reason": "SLURM job 41_3 reached its time limit (00:02:00; its warning "
                 "signal SIGUSR2 ended the trial); trial: killed by signal SIGUSR2 (12) (during fit)"}
    assert slurm.slurm_verdict(usr2, signal.SIGUSR2, False, env={}, wait_s=0) == usr2  # not in a job


def test_running_job_keeps_the_verdict(fake_sacct):
    fake_sacct("RUNNING|None|00:10:00|00:00:42|0:0")
    assert slurm.slurm_verdict(SIGTERM_VERDICT, signal.SIGTERM, False, env=JOB, wait_s=0) == SIGTERM_VERDICT


def test_lost_jobs(fake_sacct):
    fake_sacct("FAILED|NonZeroExitCode|00:10:00|00:00:30|9:0")
    v = slurm.lost_job_verdict("41_3", RuntimeError("srun: error\nsrun: Force Terminated StepId=41.0"))
    assert v == {"status": "error", "reason": "SLURM job 41_3 ended without a record (FAILED, exit code 9:0)"
                                              "; submitit: srun: Force Terminated StepId=41.0"}
    fake_sacct("COMPLETED|None|00:02:00|00:01:31|0:0")
    v = slurm.lost_job_verdict("41_3", RuntimeError("Job not requeued because: timed-out too many times."))
    assert v["status"] == "timeout"
    assert v["reason"].startswith("SLURM job 41_3 reached its time limit (00:02:00;")
    fake_sacct("NODE_FAIL|None|00:10:00|00:03:00|0:0")
    v = slurm.lost_job_verdict("41_3", RuntimeError("lost"))
    assert v["status"] == "error" and v["reason"].startswith("SLURM ended job 41_3: NODE_FAIL (its node failed;")


class _Store:
    def __init__(self, counts):
        self.counts = counts

    def runs_with_hash(self, chash):
        return [SimpleNamespace()] * self.counts.get(chash, 0)


def test_store_check_counts_one_finished_record_per_trial():
    done = [{"config_hash": h, "method": "m", "dataset": "d"} for h in ("a", "b", "c")]
    assert check_records(_Store({"a": 1, "b": 1, "c": 1}), done, 3) == (
        True, "store check: 3 trials, one finished record each")
    ok, msg = check_records(_Store({"a": 1, "b": 2}), done, 4)
    assert not ok
    assert msg == ("store check FAILED: 1 of 4 jobs left no summary; m on d (hash b): 2 finished records; "
                   "m on d (hash c): 0 finished records")
