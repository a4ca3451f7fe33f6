"""Was the machine busy while a trial's fit ran? CPU accounting over the fit window.

A fit time means something only if the trial got the CPU its threads could
use. Over the fit window this module reads, from the Linux kernel:

- the trial's own CPU time (user + system, every thread, and every child
  process it started: ``getrusage`` of itself and of its reaped children,
  plus ``psutil``'s times of the children still alive; SODM's loky
  workers are the trial's own work, not other load),
- the whole machine's busy CPU time (``/proc/stat``: every state but idle
  and iowait, summed over cores),
- the 1-minute load average at the end of the fit (``os.getloadavg``).

From these, ``others = (machine busy - own CPU) / wall`` is the number of
cores other processes kept busy during the fit. The trial is *contended*
when the others took cores its threads needed:

    others > max(0, n_cores - threads) + slack     (slack = 0.5 core + tick rounding)

or when the trial got clearly less CPU than it could use while the machine
was saturated (``own / (wall x threads) < 0.6`` and the others above the
spare cores by more than half the slack, 0.25 core; the 1-min load average above the core count stands in for the
others only where /proc/stat is missing, since it lags by a minute: a hog
that started just before the fit shows only in ``others``, and one that
stopped just before still shows in the average). A single-threaded method on two cores therefore tolerates
one busy core; a two-thread fit tolerates none. This follows the advice of
benchmarking guides (e.g. pyperf's "system tune" notes and benchopt's
repetition design): noise from other processes is measured and reported,
not silently averaged.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass

import psutil

__all__ = ["CpuWindow", "CpuUsage", "machine_busy_seconds", "SLACK_CORES"]

SLACK_CORES = 0.5
_LOW_SHARE = 0.6


def machine_busy_seconds() -> float | None:
    """Busy CPU seconds of the whole machine since boot (all cores), or None off Linux.

    Sums the ``cpu`` line of ``/proc/stat`` (user, nice, system, irq,
    softirq, steal; not idle nor iowait; guest time is already inside user)
    in clock ticks divided by ``SC_CLK_TCK``.
    """
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(v) for v in fields[1:]]
    busy = sum(ticks[:8]) - ticks[3] - ticks[4]  # user nice system idle iowait irq softirq steal
    return busy / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process, its reaped children and its live descendants.

    A live descendant's times include those of the children it reaped; a
    child that ends between two readings moves from the psutil sum into
    ``RUSAGE_CHILDREN`` once reaped, so nothing is counted twice. Without
    the children, a fit that runs its work in worker processes (SODM's
    loky workers) read as a machine kept busy by others.
    """
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    try:
        kids = psutil.Process().children(recursive=True)
    except psutil.Error:
        return total
    for kid in kids:
        try:
            t = kid.cpu_times()
        except psutil.Error:  # ended in between: its time is in its parent's children times once reaped
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


@dataclass(frozen=True)
class CpuUsage:
    """CPU accounting of one window (seconds; cores are averages over the window).

    Attributes
    ----------
    wall_s : float
        Wall-clock length of the window in seconds.
    cpu_s : float
        This process's CPU seconds (user + system, all threads).
    others_cores : float or None
        Cores kept busy by other processes, on average (None off Linux).
    load_avg : float
        The 1-minute load average at the end of the window.
    threads : int
        The threads the trial was given.
    n_cores : int
        Logical CPUs of the machine.
    """

    wall_s: float
    cpu_s: float
    others_cores: float | None
    load_avg: float
    threads: int
    n_cores: int

    @property
    def utilisation(self) -> float:
        """``cpu_s / (wall_s x threads)``: 1.0 when every thread ran all the time."""
        return self.cpu_s / (self.wall_s * self.threads) if self.wall_s > 0 else 0.0

    def contended(self) -> tuple[bool, str]:
        """Whether other load took CPU this trial needed, and why (rule in the module docstring).

        Returns
        -------
        (bool, str)
            The flag and a one-line reason ("" when not contended).
        """
        spare = max(0, self.n_cores - self.threads)
        # /proc/stat counts in clock ticks: allow two ticks per core of rounding on short windows
        tick = 2.0 * self.n_cores / (os.sysconf("SC_CLK_TCK") * max(self.wall_s, 1e-3))
        if self.others_cores is not None and self.others_cores > spare + SLACK_CORES + tick:
            return True, (f"other processes kept {self.others_cores:.1f} of {self.n_cores} cores busy "
                          f"during the fit ({self.threads} thread(s) needed {self.threads})")
        # The measured others decide when there are any; the 1-min load average lags a
        # minute (after a hog stops it still reads 2 on 2 cores) and stands in only without /proc/stat.
        saturated = (self.others_cores > spare + SLACK_CORES / 2 if self.others_cores is not None
                     else self.load_avg > self.n_cores)
        if self.utilisation < _LOW_SHARE and saturated:
            return True, (f"the fit got {self.utilisation:.0%} of {self.threads} thread(s) while the "
                          f"1-min load was {self.load_avg:.1f} on {self.n_cores} cores"
                          + ("" if self.others_cores is None
                             else f" (others kept {self.others_cores:.1f} cores busy)"))
        return False, ""


class CpuWindow:
    """Measure the CPU usage of a code region of this process (the fit).

    Examples
    --------
    >>> w = CpuWindow(threads=2).start()
    >>> _ = sum(range(10**5))
    >>> usage = w.stop()
    >>> usage.wall_s >= 0
    True
    """

    def __init__(self, threads: int, n_cores: int | None = None) -> None:
        self.threads = max(1, int(threads))
        self.n_cores = int(n_cores or os.cpu_count() or 1)
        self._t0 = self._cpu0 = 0.0
        self._busy0: float | None = None
        self._paused_at: tuple[float, float, float | None] | None = None
        self._off_wall = self._off_cpu = self._off_busy = 0.0

    def pause(self) -> None:
        """Leave the window until :meth:`resume` (the checkpoints' test evaluations, issue 42).

        The wall time, this process's CPU time and the machine's busy time
        spent while paused are subtracted in :meth:`stop`, so the window
        measures the fit alone.
        """
        self._paused_at = (time.monotonic(), _own_cpu_seconds(), machine_busy_seconds())

    def resume(self) -> None:
        """Return to the window after :meth:`pause`."""
        if self._paused_at is None:
            return
        t, cpu, busy = self._paused_at
        self._off_wall += time.monotonic() - t
        self._off_cpu += _own_cpu_seconds() - cpu
        busy1 = machine_busy_seconds()
        if busy is not None and busy1 is not None:
            self._off_busy += busy1 - busy
        self._paused_at = None

    def start(self) -> "CpuWindow":
        """Open the window (returns self)."""
        self._busy0 = machine_busy_seconds()
        self._cpu0 = _own_cpu_seconds()
        self._t0 = time.monotonic()
        return self

    def stop(self) -> CpuUsage:
        """Close the window and return its :class:`CpuUsage`."""
        wall = time.monotonic() - self._t0 - self._off_wall
        cpu = max(0.0, _own_cpu_seconds() - self._cpu0 - self._off_cpu)
        busy1 = machine_busy_seconds()
        others = None
        if self._busy0 is not None and busy1 is not None and wall > 0:
            others = max(0.0, (busy1 - self._busy0 - self._off_busy - cpu) / wall)
        return CpuUsage(wall_s=wall, cpu_s=cpu, others_cores=others, load_avg=os.getloadavg()[0],
                        threads=self.threads, n_cores=self.n_cores)
