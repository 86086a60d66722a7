"""How many thread-block clusters fit on the GPU at once, one block per SM (a persistent GEMM's
blocks: each takes most of an SM's shared memory). A cluster's blocks are scheduled on one GPC,
so where a GPC's SM count is not a multiple of the cluster size some SMs cannot take a cluster,
and a persistent grid of `SMs / size` clusters may need a second wave.

Two readings for clusters of 1, 2, 4 and 8 blocks:
  * the driver's: cuOccupancyMaxActiveClusters (stages/core/gpu.py `_cluster_slots`, what
    DeviceInfo.clusters and the v4/v5 launch geometry use);
  * the clock's: a kernel whose every block spins for `--spin-us` microseconds, launched as G
    clusters for G around that count; one wave takes ~spin, a second wave twice that.

    python3 scripts/cluster_slots_probe.py --out DIR      ->  DIR/cluster-slots.json
"""
import argparse
import ctypes
import json
import os

import numpy as np

from stages.core import gpu
from stages.tools import records
from stages.tools.timing import QueueHold  # its kernel: every thread spins `ns` on %globaltimer

p = argparse.ArgumentParser()
p.add_argument("--out", default=".")
p.add_argument("--spin-us", type=float, default=200.0)
args = p.parse_args()

cp = gpu.cupy()
drv = gpu.driver()
dev = gpu.current()
kern = cp.RawKernel(QueueHold.SOURCE, "queue_hold")
smem = dev.smem_optin_bytes - 1024
kern.max_dynamic_shared_size_bytes = smem
func = drv.CUfunction(kern.kernel.ptr)
ns = ctypes.c_longlong(int(args.spin_us * 1000))
params = (ctypes.c_void_p * 1)(ctypes.addressof(ns))


def launch(size: int, clusters: int) -> None:
    config = gpu.cluster_launch_config(size, clusters, 384, smem)
    config.hStream = drv.CUstream(cp.cuda.get_current_stream().ptr)
    (err,) = drv.cuLaunchKernelEx(config, func, ctypes.addressof(params), 0)
    assert err == drv.CUresult.CUDA_SUCCESS, err


def time_us(size: int, clusters: int, reps: int = 5) -> float:
    launch(size, clusters)  # warm
    times = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        launch(size, clusters)
        e1.record()
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1) * 1000)
    return float(np.median(times))


rows = []
for size in gpu.CLUSTER_SIZES:
    slots = dev.clusters(size)
    timed = {g: time_us(size, g) for g in sorted({max(1, slots - 1), slots, slots + 1, dev.sm_count // size})}
    row = {"size": size, "driver_max_active_clusters": slots, "sm_count_div_size": dev.sm_count // size,
           "spin_us": args.spin_us, "time_us_by_clusters": timed}
    rows.append(row)
    print(json.dumps(row), flush=True)

os.makedirs(args.out, exist_ok=True)
with open(os.path.join(args.out, "cluster-slots.json"), "w") as f:
    json.dump({"kind": "cluster-slots-probe", "env": records.environment(), "settings": vars(args),
               "cluster_slots": list(dev.cluster_slots), "results": rows}, f, indent=1)
