"""Shared fixtures: a private kernel cache per test session, GPU/Hopper skips with the reason.

`--order reverse` or `--order shuffle:SEED` runs the suite in another order: a test that passes
alone and fails after another one is a bug in the code it tests (state leaking between calls).
`--part K/N` then keeps the K-th of N contiguous slices of that order, and `--part START:STOP` the
items START to STOP-1 of it (0-based, either end may be left out), so one order can run over several
processes, or resume where a cut run stopped (the H200's calls are capped at 600 s, and the whole
suite in reversed order takes longer there). With `--part-times FILE` (seconds per test, as
scripts/suite_times.py writes it from JUnit XML) the K/N slices hold equal shares of the suite's
time instead of equal counts: on the H200 the last 106 tests of the file order took about as
long as the other 1,586 together (646 s of test time against 675 in 16 slices at c122e27;
scripts/device.sh's header).
"""
from __future__ import annotations

import itertools
import json
import os
import random
import re
import statistics

import pytest

from stages.core import gpu


def pytest_configure(config):
    """Import torch (when installed, and only where a GPU is) before any test runs, as a user who
    passes torch tensors would have. On the H200 image (torch 2.11, cupy-cuda13x), importing
    torch for the first time late in a long session failed inside torch's own schema parser
    ("expected ident ... annotate(strtag)"), whichever of several unrelated test files ran first,
    and the process then crashed at exit; a fresh process imports it fine after numba, CuPy and
    the GEMMs (checked there). The cause was not isolated; importing first sidesteps it."""
    if gpu.available()[0]:
        try:
            import torch  # noqa: F401
        except Exception:  # not installed, or broken: the torch tests skip or fail on their own
            pass


def pytest_addoption(parser):
    parser.addoption("--order", default="file", help="file (default), reverse, or shuffle:SEED")
    parser.addoption("--part", default="1/1", help="K/N: the K-th of N contiguous slices of the order; START:STOP: those items of it")
    parser.addoption("--part-times", default="", metavar="FILE",
                     help="JSON of seconds per test id: K/N slices then hold equal shares of time, not of count")


def part_slice(n_items: int, part: str, weights: list[float] | None = None) -> slice:
    """The K-th of N contiguous slices of n_items ("K/N", 1 <= K <= N: the N slices cover every
    item once, in order, and differ in length by at most one; with `weights`, one per item, each
    slice ends where the running sum comes nearest to K/N of the total instead), or items START to
    STOP-1 ("START:STOP", 0-based, either end may be left out)."""
    m = re.fullmatch(r"(\d+)/(\d+)", part.strip())
    if m and 1 <= int(m.group(1)) <= int(m.group(2)):
        k, n = int(m.group(1)), int(m.group(2))
        if weights is None:
            return slice((k - 1) * n_items // n, k * n_items // n)
        if len(weights) != n_items:
            raise ValueError(f"{len(weights)} weights for {n_items} items")
        return slice(_weighted_end(weights, k - 1, n), _weighted_end(weights, k, n))
    m = re.fullmatch(r"(\d*):(\d*)", part.strip())
    if m and part.strip() != ":":
        start, stop = int(m.group(1) or 0), min(int(m.group(2) or n_items), n_items)
        if start <= stop:
            return slice(min(start, n_items), stop)
    raise pytest.UsageError(f"--part takes K/N with 1 <= K <= N, or START:STOP, got {part!r}")


def _weighted_end(weights: list[float], k: int, n: int) -> int:
    """Where slice k of n (0-based) ends, and slice k + 1 starts: the item count whose running
    sum of weights is nearest k / n of the total (the first such count on a tie). The weights are
    not negative, so the running sums never fall and these ends never go back as k grows: the
    slices stay contiguous and cover every item once (the last ends after the last item, even
    one that weighs nothing)."""
    if k >= n:
        return len(weights)
    prefix = [0.0, *itertools.accumulate(weights)]
    target = prefix[-1] * k / n
    return min(range(len(prefix)), key=lambda i: abs(prefix[i] - target))


def part_weights(items, path: str) -> list[float]:
    """Each item's seconds from the JSON at `path` ({"seconds": {test id: s}}); a test the file
    does not name (new since it was measured) weighs the mean of those it does (most tests take
    no time, so the median would call a new GPU test free)."""
    with open(path) as f:
        seconds = json.load(f)["seconds"]
    known = [seconds[it.nodeid] for it in items if it.nodeid in seconds]
    default = statistics.fmean(known) if known else 1.0
    return [float(seconds.get(it.nodeid, default)) for it in items]


_PART = pytest.StashKey[str]()


def part_note(start: int, stop: int, n_items: int, order: str) -> str:
    """The line a sliced run prints after collection: which items of the order it runs, and how
    to resume it where a time limit cut it (the slice's start plus the tests it finished)."""
    return (f"--part: items {start} to {stop - 1} of {n_items} in {order} order; a run cut short "
            f"resumes with --order {order} --part {start}+F: (F = the tests it finished; a module "
            f"skipped whole at collection is not one)")


def pytest_report_collectionfinish(config, start_path, items):
    return config.stash.get(_PART, None) or []


@pytest.fixture(scope="session", autouse=True)
def _private_kernel_cache(tmp_path_factory):
    """Compile into a fresh cache, so a test never passes on a stale cubin."""
    old = os.environ.get("GEMM_STAGES_CACHE")
    os.environ["GEMM_STAGES_CACHE"] = str(tmp_path_factory.mktemp("kernel-cache"))
    yield
    if old is None:
        os.environ.pop("GEMM_STAGES_CACHE", None)
    else:
        os.environ["GEMM_STAGES_CACHE"] = old


def _hopper_reason() -> str | None:
    ok, why = gpu.available()
    if not ok:
        return f"needs an sm_90a GPU (H100/H200): {why}"
    dev = gpu.current()
    if dev.cc != (9, 0):
        return f"needs an sm_90a GPU (H100/H200); this GPU ({dev.name}) is {dev.arch}"
    return None


def pytest_collection_modifyitems(config, items):
    order = config.getoption("--order")
    if order == "reverse":
        items.reverse()
    elif order.startswith("shuffle"):
        random.Random(int(order.partition(":")[2] or 0)).shuffle(items)
    elif order != "file":
        raise pytest.UsageError(f"--order takes file, reverse or shuffle:SEED, got {order!r}")
    times = config.getoption("--part-times")
    weights = part_weights(items, times) if times else None
    keep = part_slice(len(items), config.getoption("--part"), weights)
    if (keep.start, keep.stop) != (0, len(items)):
        config.stash[_PART] = part_note(keep.start, keep.stop, len(items), order)
        if weights:
            config.stash[_PART] += (f"; by {times}, {sum(weights[keep]):.0f} s of the order's "
                                    f"{sum(weights):.0f} s")
        config.hook.pytest_deselected(items=items[:keep.start] + items[keep.stop:])
        items[:] = items[keep]
    ok, why = gpu.available()
    hopper_why = None
    for item in items:
        if "gpu" in item.keywords and not ok:
            item.add_marker(pytest.mark.skip(reason=f"needs a CUDA GPU: {why}"))
        elif "hopper" in item.keywords:
            hopper_why = hopper_why or _hopper_reason() or ""
            if hopper_why:
                item.add_marker(pytest.mark.skip(reason=hopper_why))


@pytest.fixture
def runnable():
    """runnable(name) -> the stage, or a skip that says why this machine cannot run it."""
    import stages

    def get(name):
        st = stages.get(name)
        ok, why = st.runnable()
        if not ok:
            pytest.skip(why)
        return st

    return get


@pytest.fixture
def fake_tma_driver():
    """install(encode) -> a stand-in cuda driver for stages.core.tma whose cuTensorMapEncodeTiled
    is `encode(*args)` (it returns (0, an object with getPtr) as the driver does): tensor maps
    encoded on a host without a GPU. The real driver, and tma's own cache, come back afterwards."""
    import importlib
    import types

    from stages.core import tma

    enum = types.SimpleNamespace
    saved_cache = tma._cache
    tma._driver.cache_clear()

    def install(encode):
        fake = types.SimpleNamespace(
            CUtensorMapSwizzle=enum(CU_TENSOR_MAP_SWIZZLE_NONE=0, CU_TENSOR_MAP_SWIZZLE_32B=1,
                                    CU_TENSOR_MAP_SWIZZLE_64B=2, CU_TENSOR_MAP_SWIZZLE_128B=3),
            CUtensorMapDataType=enum(CU_TENSOR_MAP_DATA_TYPE_FLOAT16=6),
            CUtensorMapInterleave=enum(CU_TENSOR_MAP_INTERLEAVE_NONE=0),
            CUtensorMapL2promotion=enum(CU_TENSOR_MAP_L2_PROMOTION_NONE=0, CU_TENSOR_MAP_L2_PROMOTION_L2_64B=1,
                                        CU_TENSOR_MAP_L2_PROMOTION_L2_128B=2, CU_TENSOR_MAP_L2_PROMOTION_L2_256B=3),
            CUtensorMapFloatOOBfill=enum(CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE=0),
            CUresult=enum(CUDA_SUCCESS=0), cuuint64_t=int, cuuint32_t=int, cuTensorMapEncodeTiled=encode)
        tma._driver = lambda: fake  # noqa: E731  (restored below)
        return tma

    yield install
    importlib.reload(tma)  # the real, lru-cached _driver back, and the module's own cache
    tma._cache.update(saved_cache)
