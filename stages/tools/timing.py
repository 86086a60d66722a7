"""How time is measured, and nothing else (bench.py runs benchmarks with it).

GPU: CUDA events around the launch alone; before each timed launch a buffer several times the L2
size is overwritten, so every repeat reads A and B from HBM as a real GEMM in a model would. The
flush is queued ahead of the start event and takes longer than the host needs to enqueue the
launch, so the events bracket the kernel alone. The overwrite (as triton's `do_bench` flushes)
leaves the L2 full of dirty lines that the timed kernel writes back as it evicts them: a
memory-bound shape pays for it (16 x 14336 x 4096: cuBLAS 39.7 us against 32.4 after a flush that
reads instead, `L2Flusher(clean=True)`: scripts/lever_probe.py --only clean; v5 README, "Open
questions").

Without a flush (the overhead table's kernel column) the same holds only if something else keeps
the GPU busy while the host enqueues: `QueueHold`, a kernel that waits on the GPU's clock and
touches no memory. Without it, back-to-back timed launches whose call path takes longer than the
kernel time the host: cupy.matmul's "kernel" read 33 µs at 256³ and at 1000³ (results/
20261202T001005), about its 23-31 µs of Python per call; behind a hold, 5.5 and 9.8 µs (results/
20261202T025417).

Host: wall-clock time of back-to-back calls (the call path's overhead, `host_per_call`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from stages.core import gpu


def tflops(m: int, n: int, k: int, ms: float) -> float:
    """The one place throughput is computed: 2*M*N*K floating-point operations in `ms` ms."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


@dataclass
class Timing:
    ms: list[float] = field(default_factory=list)
    order: str = "interleaved"  # bench: "alone" where a call could not be timed in turn with the others

    @property
    def median(self) -> float:
        return float(np.median(self.ms))

    @property
    def best(self) -> float:
        return float(np.min(self.ms))

    @property
    def p20(self) -> float:
        return float(np.percentile(self.ms, 20))

    @property
    def p80(self) -> float:
        return float(np.percentile(self.ms, 80))


class L2Flusher:
    """Overwrites a buffer of max(256 MiB, 4 x L2) bytes: evicts A, B and C from L2.

    `clean=True` reads the buffer instead: the same eviction, but the L2 is left holding clean
    lines, so the timed kernel writes nothing back (as under Nsight Compute, which invalidates the
    caches). The default fill, as triton's do_bench flushes, leaves up to the L2's size of dirty
    lines that a memory-bound kernel writes back while it streams (v5 README, "Open questions")."""

    def __init__(self, l2_bytes: int, clean: bool = False):
        cp = gpu.cupy()
        self.nbytes = max(256 << 20, 4 * l2_bytes)
        self.clean = clean
        self._buf = cp.zeros(self.nbytes // 4, dtype=cp.int32) if clean else cp.empty(self.nbytes // 4, dtype=cp.int32)
        self._i = 0
        self._sink = None

    def __call__(self):
        self._i += 1
        if self.clean:
            self._sink = self._buf.max()  # a reduction: every line read, none written
        else:
            self._buf.fill(self._i)


class QueueHold:
    """Holds the GPU's queue for `us` microseconds with one thread waiting on %globaltimer, which
    touches no memory: the caches stay as they were. Passed to `time_gpu` as its `flush`, it is
    queued ahead of each start event, so the host enqueues the timed launch while the GPU is still
    busy and the events bracket the kernel alone, however long the call path takes (up to `us`).
    `SOURCE` (kernel `queue_hold(long long ns)`, one spin per thread) also serves
    scripts/cluster_slots_probe.py, which launches it as clusters."""

    SOURCE = r"""
extern "C" __global__ void queue_hold(long long ns) {
  long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""

    def __init__(self, us: float = 200.0):
        cp = gpu.cupy()
        self.us = us
        self._kernel = cp.RawKernel(self.SOURCE, "queue_hold")
        self._ns = np.int64(round(us * 1000))

    def __call__(self):
        self._kernel((1,), (1,), (self._ns,))


def time_gpu(run, reps: int = 30, warmup: int = 5, flush: "L2Flusher | QueueHold | None" = None,
             warmup_ms: float = 0.0) -> Timing:
    """Samples (ms) of `run()` (a prepared launch) with CUDA events around it alone. `flush`, if
    given, is queued before each start event (an L2Flusher, or a QueueHold that flushes nothing);
    without one, a call path slower than its kernel is what the events measure.

    `warmup` launches first; with `warmup_ms` > 0, then the timed loop's own pattern (flush and
    launch) until at least that much GPU time has passed, so that the clock has risen from
    whatever idle gap came before. Measured (scripts/order_probe.py, results/probes/
    20261201T121212-nvidia-h200-order-probe.json): 25 ms of it changed neither the order effects
    nor the medians beyond the run-to-run spread, so the bench keeps 0."""
    cp = gpu.cupy()
    for _ in range(warmup):
        run()
    if warmup_ms > 0:
        t0, t1 = cp.cuda.Event(), cp.cuda.Event()
        t0.record()
        while True:
            for _ in range(4):
                if flush is not None:
                    flush()
                run()
            t1.record()
            t1.synchronize()
            if cp.cuda.get_elapsed_time(t0, t1) >= warmup_ms:
                break
    return time_interleaved([run], reps=reps, warmup=0, flush=flush)[0]


def time_interleaved(runs, reps: int = 30, warmup: int = 5,
                     flush: "L2Flusher | QueueHold | None" = None) -> list[Timing]:
    """Samples (ms) of several prepared launches timed in turn, one Timing per run: `warmup`
    launches of each, then `reps` rounds; round i launches every run once, starting with run
    i % len(runs), each after its own `flush` and between its own pair of events.

    Why not one run after another (`time_gpu` each): whichever is timed first after an idle gap
    reads slower at ~10 µs kernels. scripts/order_probe.py at 1000^3, 12 repeats with fresh
    operands (results/probes/20261203T093319-nvidia-h200-spread32.json): cuBLAS then v5 read v5
    at 0.934x cuBLAS (median; cuBLAS 10.80 µs), v5 then cuBLAS 0.848x (cuBLAS 10.30), one launch
    of each in turn 0.861x (10.18); at 4096^3 the three read 1.011x, 1.006x and 1.007x. In turn,
    both see the same clock and the same history."""
    cp = gpu.cupy()
    for run in runs:
        for _ in range(warmup):
            run()
    events = [[(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)] for _ in runs]
    last = None
    for i in range(reps):
        for j in range(len(runs)):
            r = (i + j) % len(runs)
            if flush is not None:
                flush()
            start, last = events[r][i]
            start.record()
            runs[r]()
            last.record()
    if last is not None:
        last.synchronize()
    return [Timing([cp.cuda.get_elapsed_time(s, e) for s, e in ev]) for ev in events]


def time_cpu(fn, reps: int = 7, warmup: int = 1) -> Timing:
    """Wall-clock samples (ms) of a host function."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return Timing(samples)


def host_per_call(fn, calls: int = 1000, warmup: int = 50, rounds: int = 5) -> Timing:
    """Host wall time per call (microseconds) of `calls` back-to-back calls of `fn`, best-of
    `rounds` rounds (samples are per-call averages of each round). The device is synchronised
    before each round and after it, outside the timed region... except that a queue that fills
    up blocks the host: a kernel slower than its call path makes this the kernel's time."""
    cp = gpu.cupy()
    for _ in range(warmup):
        fn()
    cp.cuda.get_current_stream().synchronize()
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
        cp.cuda.get_current_stream().synchronize()
    return Timing(samples)
