"""Samplers of a running trial's memory: host RSS (psutil) and GPU (NVML).

The exact host peak of a trial comes from ``os.wait4`` (see
:mod:`joker.bench.trials.reaper`); the sampler here watches the live process tree
so that the parent can

- stop a trial that runs away (RSS past ``kill_factor x budget``, or the
  machine nearly out of memory) before the kernel's OOM killer picks a
  victim, and
- record a peak for trials that never report one (killed on timeout), and
- sample the GPU memory NVML attributes to the trial's processes, every
  ``gpu_interval_s`` (NVML is used only when a GPU is present).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

import psutil

from ..records.record import MIB


@dataclass
class Limits:
    """When the sampler asks the parent to stop a trial.

    Attributes
    ----------
    host_kill_bytes : int or None
        Kill when the tree's RSS passes this many bytes (``over_budget``).
    min_available_bytes : int
        Kill when the machine's available memory drops below this (``oom``).
    """

    host_kill_bytes: int | None = None
    min_available_bytes: int = 256 * MIB


@dataclass
class Samples:
    """What the sampler saw (bytes; ``None`` when not measured)."""

    peak_tree_rss: int = 0
    peak_gpu: int | None = None
    min_available: int | None = None
    kill_status: str | None = None
    kill_reason: str = ""
    n_samples: int = 0
    pids: set[int] = field(default_factory=set)


class _Nvml:
    """Per-process GPU memory through NVML (only constructed with a GPU)."""

    def __init__(self) -> None:
        import pynvml

        pynvml.nvmlInit()
        self._nv = pynvml
        self._handles = [
            pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())
        ]

    def used_by(self, pids: set[int]) -> int:
        """Return the bytes of GPU memory used by ``pids`` on all devices."""
        total = 0
        for h in self._handles:
            procs = []
            for getter in (
                self._nv.nvmlDeviceGetComputeRunningProcesses,
                self._nv.nvmlDeviceGetGraphicsRunningProcesses,
            ):
                try:
                    procs.extend(getter(h))
                except Exception:
                    continue
            for p in procs:
                if p.pid in pids and p.usedGpuMemory:
                    total += int(p.usedGpuMemory)
        return total

    def close(self) -> None:
        try:
            self._nv.nvmlShutdown()
        except Exception:
            pass


def open_nvml() -> _Nvml | None:
    """Return an NVML reader when a GPU is present, else ``None``."""
    try:
        nv = _Nvml()
    except Exception:
        return None
    if not nv._handles:
        nv.close()
        return None
    return nv


class TreeSampler(threading.Thread):
    """Background sampler of a process tree's RSS and GPU memory.

    Parameters
    ----------
    root_pid : int
        The reaper's pid (its descendants are the trial), or the trial's own
        with ``include_root``.
    limits : Limits
        When to ask for a kill (:attr:`Samples.kill_status` is then set and
        ``on_kill`` is called once).
    interval_s : float
        Host sampling period in seconds.
    gpu : bool
        Sample NVML (only when a GPU is present; then every ``gpu_interval_s``).
    on_kill : callable, optional
        Called with no argument when a limit is passed.
    include_root : bool
        The root process is part of the trial (a trial forked by the
        preloaded starter, :mod:`joker.bench.trials.starter`).
    """

    def __init__(
        self,
        root_pid: int,
        limits: Limits,
        interval_s: float = 0.05,
        gpu: bool = False,
        gpu_interval_s: float = 0.01,
        on_kill: Callable[[], None] | None = None,
        include_root: bool = False,
    ) -> None:
        super().__init__(daemon=True, name="joker-bench-sampler")
        self.root_pid = root_pid
        self.include_root = include_root
        self.limits = limits
        self.samples = Samples()
        self._stop_event = threading.Event()
        self._on_kill = on_kill
        self._nvml = open_nvml() if gpu else None
        self._interval = gpu_interval_s if self._nvml else interval_s
        self._host_every = max(1, int(round(interval_s / self._interval)))
        self._procs: dict = {}

    def _tree(self) -> list:
        try:
            root = psutil.Process(self.root_pid)
            kids = root.children(recursive=True)
            if self.include_root:
                kids.insert(0, root)
        except psutil.Error:
            return []
        procs = []
        for p in kids:  # keep Process objects: psutil caches their create time
            procs.append(self._procs.setdefault(p.pid, p))
        return procs

    def _sample(self, host: bool) -> None:
        s = self.samples
        procs = self._tree()
        s.pids.update(p.pid for p in procs)
        if host:
            rss = 0
            for p in procs:
                try:
                    rss += p.memory_info().rss
                except psutil.Error:
                    continue
            s.peak_tree_rss = max(s.peak_tree_rss, rss)
            avail = psutil.virtual_memory().available
            s.min_available = avail if s.min_available is None else min(s.min_available, avail)
            lim = self.limits
            if s.kill_status is None and procs:
                if lim.host_kill_bytes is not None and rss > lim.host_kill_bytes:
                    s.kill_status = "over_budget"
                    s.kill_reason = (
                        f"stopped at {rss / MIB:.0f} MiB RSS, past the kill limit of "
                        f"{lim.host_kill_bytes / MIB:.0f} MiB"
                    )
                elif avail < lim.min_available_bytes:
                    s.kill_status = "oom"
                    s.kill_reason = (
                        f"stopped at {rss / MIB:.0f} MiB RSS: the machine had only "
                        f"{avail / MIB:.0f} MiB available"
                    )
                if s.kill_status and self._on_kill:
                    self._on_kill()
        if self._nvml is not None:
            used = self._nvml.used_by({p.pid for p in procs})
            s.peak_gpu = used if s.peak_gpu is None else max(s.peak_gpu, used)
        s.n_samples += 1

    def run(self) -> None:  # noqa: D102 - threading API
        i = 0
        while not self._stop_event.is_set():
            try:
                self._sample(host=(i % self._host_every == 0))
            except Exception:  # a sampler must never kill the parent
                pass
            i += 1
            self._stop_event.wait(self._interval)

    def stop(self) -> Samples:
        """Stop sampling and return the samples."""
        self._stop_event.set()
        self.join(timeout=5)
        if self._nvml is not None:
            self._nvml.close()
        return self.samples
