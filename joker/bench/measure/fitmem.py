"""The method's host memory: peak RSS during fit + predict above the pre-fit baseline.

A trial's process first does work that is not the method's (import the
libraries, parse and cache the data, the median-heuristic bandwidth, a
warm-up fit). Its lifetime peak RSS (``VmHWM``) would charge all of that to
the method. So, right before the fit, the trial

1. returns freed heap memory to the kernel (``gc.collect()`` and glibc's
   ``malloc_trim(0)``), so that later allocations are not served from
   memory freed by the pre-fit work without showing in RSS;
2. resets the kernel's peak counter to the current RSS (writing ``5`` to
   ``/proc/self/clear_refs``, Linux >= 4.0; see proc(5));
3. reads the baseline ``VmRSS``.

After predict, ``VmHWM - baseline`` is the method's peak working memory,
exact to the page and independent of what happened before the reset.
Where the reset is not allowed, a 2 ms sampling thread of ``VmRSS``
stands in (it can miss a peak shorter than its period, which the record
then says via ``method``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
from dataclasses import dataclass

__all__ = ["FitMemory", "FitMemoryResult", "rss_bytes", "release_free_memory", "freeze_survivors"]


def rss_bytes() -> tuple[int, int]:
    """``(VmRSS, VmHWM)`` of this process in bytes, from ``/proc/self/status`` ((0, 0) off Linux)."""
    cur = peak = 0
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    cur = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return cur, peak


def release_free_memory() -> None:
    """Collect garbage and give free heap pages back to the kernel (glibc ``malloc_trim``)."""
    gc.collect()
    name = ctypes.util.find_library("c")
    if name:
        try:
            ctypes.CDLL(name).malloc_trim(0)
        except (OSError, AttributeError):  # pragma: no cover - not glibc
            pass


def freeze_survivors() -> None:
    """Collect garbage, then exempt every surviving object from later collections (``gc.freeze``).

    A trial's process holds some 280,000 objects after its imports (torch,
    SciPy, scikit-learn), and every full ``gc.collect()`` walks them all:
    0.15-0.17 s each here, twice per measured fit, 5.5 s of a tuned cell's
    16 searched configurations. Called once the pre-fit work is done, after
    which :func:`release_free_memory` walks only what was made since (the
    models, their results). Nothing that is garbage at the call is frozen
    (it is collected first), and reference counting still frees frozen
    objects; only a reference cycle among them would stay until the
    process ends.
    """
    gc.collect()
    gc.freeze()


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


@dataclass(frozen=True)
class FitMemoryResult:
    """Host memory of the measured region (bytes).

    Attributes
    ----------
    baseline : int
        RSS when the region began (after :func:`release_free_memory`).
    peak : int
        Peak RSS inside the region.
    method : str
        ``"vmhwm-reset"`` (exact, kernel counter) or ``"sampled"`` (2 ms thread).
    """

    baseline: int
    peak: int
    method: str

    @property
    def fit_bytes(self) -> int:
        """``peak - baseline``, never negative: the method's own peak working memory."""
        return max(0, self.peak - self.baseline)


class FitMemory:
    """Measure the peak RSS of a code region above its starting RSS.

    Examples
    --------
    >>> meter = FitMemory().start()
    >>> buf = bytearray(50 * 2**20)
    >>> meter.stop().fit_bytes >= 50 * 2**20
    True
    """

    def __init__(self, sample_s: float = 0.002) -> None:
        self._sample_s = sample_s
        self._baseline = 0
        self._method = ""
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._sampled_peak = 0
        self._held_peak = 0
        self._paused = False

    def start(self) -> "FitMemory":
        """Release free memory, reset the peak counter, take the baseline (returns self)."""
        release_free_memory()
        if _reset_peak():
            self._method = "vmhwm-reset"
        else:  # pragma: no cover - kernels without clear_refs
            self._method = "sampled"
            self._stop.clear()
            self._thread = threading.Thread(target=self._sample, daemon=True, name="fit-memory")
            self._thread.start()
        self._baseline = rss_bytes()[0]
        self._sampled_peak = self._baseline
        return self

    @property
    def baseline(self) -> int:
        """int: RSS in bytes when :meth:`start` took the baseline (0 before)."""
        return self._baseline

    def _sample(self) -> None:  # pragma: no cover - fallback path
        while not self._stop.wait(self._sample_s):
            if not self._paused:
                self._sampled_peak = max(self._sampled_peak, rss_bytes()[0])

    def pause(self) -> None:
        """Stop counting: keep the peak so far, so that work done until :meth:`resume` is not charged.

        Used around the anytime checkpoints' test evaluations (issue 42):
        their temporaries are the harness's, not the method's. The peak up
        to now is held aside; :meth:`resume` resets the kernel's counter to
        the RSS then, so the region's peak is the larger of the held peak
        and what the method reaches after resuming. What the evaluation
        leaves allocated at :meth:`resume` (its small result arrays) is
        counted from then on, as the method's.
        """
        cur, hwm = rss_bytes()
        peak = self._sampled_peak if self._thread is not None else hwm
        self._held_peak = max(self._held_peak, peak, cur)
        self._paused = True

    def resume(self) -> None:
        """Count again after :meth:`pause` (resets the peak counter to the RSS now)."""
        if self._thread is None:
            _reset_peak()
        else:  # pragma: no cover - fallback path
            self._sampled_peak = rss_bytes()[0]
        self._paused = False

    def stop(self) -> FitMemoryResult:
        """End the region and return its :class:`FitMemoryResult`."""
        cur, hwm = rss_bytes()
        if self._thread is not None:  # pragma: no cover - fallback path
            self._stop.set()
            self._thread.join()
            peak = max(self._sampled_peak, cur)
        else:
            peak = hwm
        peak = max(peak, self._held_peak)
        return FitMemoryResult(baseline=self._baseline, peak=max(peak, self._baseline), method=self._method)
