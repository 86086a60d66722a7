"""The persistent schedule of v4 (and v5, which copies it), checked on the host: the functions
between kernel.cu's "schedule" banner and its "stream-K fixup" banner are `__host__ __device__`,
so a C++ compiler builds them unchanged into a checker. No GPU needed.

Checked: the Hilbert walk is a bijection with neighbouring steps, and each ORDER's unit_coords a
bijection onto the units; every worker list covers every
k-block of every unit exactly once; a stream-K unit's last k-block has exactly one owner, the
workers the owner gathers (`streamk_lower`) are exactly those that computed the rest of the unit,
all of them lower than the owner (so no wait can depend on a block launched later), and each
worker publishes at most one partial, as the first stream-K piece of its list (one slot per worker)."""
import shutil
import subprocess

import pytest

import stages

CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")

PRELUDE = """
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <vector>
using std::abs; using std::max; using std::min;
#define __host__
#define __device__
#define __forceinline__ inline
#ifndef CLUSTER_M
#define CLUSTER_M 1
#endif
#ifndef BM
#define BM 128
#endif
#define GROUP_M 16
#define STREAMK 1
#define PARTIAL 0
"""

CHECKER = r"""
static int fails = 0, sk_cases = 0;
#define CHECK(c, ...) do { if (!(c)) { if (++fails < 20) { std::printf(__VA_ARGS__); std::printf("\n"); } } } while (0)

static void check_hilbert(int w, int h) {
  std::vector<int> seen(w * h, 0);
  int px = -1, py = -1;
  for (int i = 0; i < w * h; ++i) {
    int x, y;
    gilbert_d2xy(i, w, h, x, y);
    CHECK(x >= 0 && x < w && y >= 0 && y < h, "hilbert %dx%d: index %d -> (%d,%d) outside", w, h, i, x, y);
    if (x < 0 || x >= w || y < 0 || y >= h) return;
    CHECK(!seen[y * w + x]++, "hilbert %dx%d: (%d,%d) visited twice", w, h, x, y);
    if (i) CHECK(abs(x - px) <= 1 && abs(y - py) <= 1, "hilbert %dx%d: step %d jumps", w, h, i);
    px = x; py = y;
  }
}

static void check_unit_coords(int units_m, int units_n) {
  std::vector<int> seen(units_m * units_n, 0);
  for (int i = 0; i < units_m * units_n; ++i) {
    int um, un;
    unit_coords(i, units_m, units_n, um, un);
    CHECK(um >= 0 && um < units_m && un >= 0 && un < units_n, "order: %dx%d unit %d -> (%d,%d) outside",
          units_m, units_n, i, um, un);
    if (um < 0 || um >= units_m || un < 0 || un >= units_n) return;
    CHECK(!seen[um * units_n + un]++, "order: %dx%d (%d,%d) twice", units_m, units_n, um, un);
  }
}

static void check_streamk(int units, int workers, int kt) {
  // who[u][k]: the worker that computes k-block k of unit u; owner[u]: who stores it
  std::vector<std::vector<int>> who(units, std::vector<int>(kt, -1));
  std::vector<int> owner(units, -1);
  std::vector<std::vector<int>> partial_of(units);  // workers that published a partial of u
  std::vector<std::pair<int, int>> owned_from;       // (unit, worker) with kb > 0: gathers
  for (int w = 0; w < workers; ++w) {
    Schedule s = make_schedule(w, workers, units, kt);
    const int dp = units - streamk_units(units, workers, kt);
    int u, kb, ke, piece = 0, published = 0;  // piece: stream-K pieces so far
    while (s.next(u, kb, ke)) {
      CHECK(u >= 0 && u < units && 0 <= kb && kb < ke && ke <= kt,
            "units %d workers %d kt %d: worker %d piece (%d, %d, %d) out of range", units, workers, kt, w, u, kb, ke);
      if (!(u >= 0 && u < units && 0 <= kb && kb < ke && ke <= kt)) return;
      for (int k = kb; k < ke; ++k) {
        CHECK(who[u][k] < 0, "units %d workers %d kt %d: unit %d k %d computed twice", units, workers, kt, u, k);
        who[u][k] = w;
      }
      if (ke == kt) {
        CHECK(owner[u] < 0, "units %d workers %d kt %d: unit %d has two owners", units, workers, kt, u);
        owner[u] = w;
        if (kb > 0) owned_from.push_back({u, w});
      } else {
        CHECK(piece == 0, "units %d workers %d kt %d: worker %d publishes a partial after its first stream-K piece",
              units, workers, kt, w);
        ++published;
        partial_of[u].push_back(w);
      }
      piece += u >= dp;
    }
    CHECK(published <= 1, "units %d workers %d kt %d: worker %d publishes %d partials", units, workers, kt, w, published);
  }
  for (int u = 0; u < units; ++u)
    for (int k = 0; k < kt; ++k)
      CHECK(who[u][k] >= 0, "units %d workers %d kt %d: unit %d k %d never computed", units, workers, kt, u, k);
  const int sk = streamk_units(units, workers, kt), dp = units - sk;
  sk_cases += sk > 0;
  const long long sk_iters = (long long)sk * kt;
  for (auto [u, w] : owned_from) {
    CHECK(u >= dp, "units %d workers %d kt %d: data-parallel unit %d split", units, workers, kt, u);
    std::vector<int> got;
    for (int d = streamk_lower(w, (long long)(u - dp) * kt, sk_iters, workers); d >= 0;
         d = streamk_lower(d, (long long)(u - dp) * kt, sk_iters, workers)) {
      CHECK(d < w, "units %d workers %d kt %d: owner %d gathers from higher worker %d", units, workers, kt, w, d);
      got.push_back(d);
    }
    std::vector<int> want = partial_of[u];
    std::sort(want.rbegin(), want.rend());
    CHECK(got == want, "units %d workers %d kt %d: unit %d owner %d gathers %zu workers, %zu published",
          units, workers, kt, u, w, got.size(), want.size());
  }
  for (int u = 0; u < units; ++u) {
    if (owner[u] < 0) continue;
    bool split = false;
    for (int k = 0; k < kt; ++k) split |= who[u][k] != owner[u];
    if (!split) CHECK(partial_of[u].empty(), "units %d workers %d kt %d: whole unit %d has partials", units, workers, kt, u);
  }
}

static void check_div_small() {
  // v5's div_small (the schedule's 64-bit divisions without a CALL) against `/`; v4 divides directly.
#ifdef HAS_DIV_SMALL
  const long long ns[] = {0, 1, 2, 63, 64, 0x7fffffffLL, 0x80000000LL, 0x80000001LL, 0xffffffffLL, 0x100000000LL,
                          123456789012LL, (1LL << 40) + 7, (1LL << 52) - 1, (1LL << 61) + 12345, (1LL << 62) - 1};
  const int ds[] = {1, 2, 3, 7, 64, 132, 1000, 65535, 65536, 1 << 25, 0x7ffffffe, 0x7fffffff};
  for (long long n : ns)
    for (int d : ds) CHECK(div_small(n, d) == n / d, "div_small(%lld, %d) = %lld, not %lld", n, d, div_small(n, d), n / d);
  unsigned long long x = 88172645463325252ULL;  // xorshift: n below 2^62, d below 2^31
  for (int i = 0; i < 200000; ++i) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    const long long n = static_cast<long long>(x >> (2 + (x & 31)));
    const int d = 1 + static_cast<int>((x >> 7) % (i % 3 ? 70000 : 0x7fffffff));
    CHECK(div_small(n, d) == n / d, "div_small(%lld, %d) = %lld, not %lld", n, d, div_small(n, d), n / d);
  }
#endif
}

int main() {
  check_div_small();
  for (int w = 1; w <= 24; ++w)
    for (int h = 1; h <= 24; ++h) check_hilbert(w, h);
  check_hilbert(16, 32); check_hilbert(32, 64); check_hilbert(56, 32);
  for (int m = 1; m <= 40; ++m)
    for (int n = 1; n <= 40; ++n) check_unit_coords(m, n);
  const int workers_list[] = {1, 2, 3, 7, 66, 132};
  const int kts[] = {1, 2, 3, 5, 16, 24, 64, 128};
  for (int workers : workers_list)
    for (int kt : kts)
      for (int units = 1; units <= 3 * workers + 5; units += (units < 2 * workers ? 1 : 3)) {
        // (units < workers: v4 leaves the extra workers idle; v5 launches that grid only to split
        // every unit, SK_FILL: both must still compute every k-block exactly once)
        check_streamk(units, workers, kt);
      }
  check_streamk(512, 132, 64); check_streamk(2048, 132, 128); check_streamk(1792, 132, 64);
  CHECK(sk_cases > 100, "only %d cases split a wave: the checker does not reach stream-K", sk_cases);
  std::printf("%s %d (%d cases split the last wave)\n", fails ? "FAIL" : "ok", fails, sk_cases);
  return fails != 0;
}
"""


def run_on_host(tmp_path, stage_name: str, order: int, main: str, defines: dict | None = None) -> subprocess.CompletedProcess:
    """Build the stage's schedule section (with ORDER, and `defines` before the prelude's) plus
    `main` as a host program and run it."""
    src = tmp_path / "schedule.cpp"
    code = schedule_source(stage_name)
    has_div = "#define HAS_DIV_SMALL\n" if "div_small(" in code else ""
    own = "".join(f"#define {k} {v}\n" for k, v in (defines or {}).items())
    src.write_text(own + PRELUDE + f"#define ORDER {order}\n" + has_div + code + main)
    exe = tmp_path / "schedule"
    subprocess.run([CXX, "-std=c++17", "-O2", "-o", str(exe), str(src)], check=True, capture_output=True, text=True)
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)


def schedule_source(stage_name: str) -> str:
    code = stages.get(stage_name).code()
    start = code.index("// ---- schedule: tile index")
    end = code.index("// ---- stream-K fixup")
    return code[start:end]


@pytest.mark.skipif(CXX is None, reason="no C++ compiler on this machine")
@pytest.mark.parametrize("stage", ["v4_swizzle_pipeline", "v5_fused_epilogue"])
@pytest.mark.parametrize("order", [0, 1, 2, 3])
def test_schedule_on_host(tmp_path, stage, order):
    res = run_on_host(tmp_path, stage, order, CHECKER)
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stdout


ROWS_CHECKER = r"""
static int fails = 0, cases = 0;
#define CHECK(c, ...) do { if (!(c)) { if (++fails < 20) { std::printf(__VA_ARGS__); std::printf("\n"); } } } while (0)

// Every row of C in exactly one tile (EDGE_SHIFT: at least one; a moved tile recomputes rows of
// the tile before it), every tile inside its rows' range, and the CTAs of a unit on one parity.
static void check_rows(int M) {
  const int units_m = (M + BM * CLUSTER_M - 1) / (BM * CLUSTER_M);
  if (ROW_PARITY && (M % 2 || units_m % 2)) return;  // (the host's row_parity: no such build)
  const int extent = ROW_PARITY ? M / 2 : M;
  std::vector<int> seen(M, 0);
  for (int um = 0; um < units_m; ++um)
    for (int rm = 0; rm < CLUSTER_M; ++rm) {
      const TileRows t = tile_rows(um, rm, M), t0 = tile_rows(um, 0, M);
      CHECK(t.parity == t0.parity, "M %d: unit %d's CTAs on parities %d and %d", M, um, t0.parity, t.parity);
      CHECK(t.row >= 0 && (t.parity == 0 || ROW_PARITY), "M %d: unit %d rank %d at row %d parity %d", M, um, rm, t.row, t.parity);
      for (int r = 0; r < BM; ++r) {
        const int i = t.row + r;
        if (i < extent) ++seen[ROW_PARITY ? 2 * i + t.parity : i];
      }
    }
  for (int r = 0; r < M; ++r)
    CHECK(EDGE_SHIFT ? seen[r] >= 1 : seen[r] == 1, "M %d: row %d in %d tiles", M, r, seen[r]);
  ++cases;
}

int main() {
  for (int M = 1; M <= 1200; ++M) check_rows(M);
  check_rows(4096); check_rows(8190); check_rows(8192);
  std::printf("%s %d (%d shapes)\n", fails ? "FAIL" : "ok", fails, cases);
  return fails != 0 || cases < 100;
}
"""


@pytest.mark.skipif(CXX is None, reason="no C++ compiler on this machine")
@pytest.mark.parametrize("bm, cm", [(64, 1), (64, 2), (128, 2), (128, 4), (192, 1)])
@pytest.mark.parametrize("parity", [0, 1])
@pytest.mark.parametrize("edge_shift", [0, 1])
def test_every_row_of_c_is_in_a_tile(tmp_path, bm, cm, parity, edge_shift):
    """v5's tile_rows (kernel.cu, "schedule"), on the host: with and without ROW_PARITY (tiles of
    C's even rows and of its odd rows) and EDGE_SHIFT, every row of C is in a tile, once where no
    tile is moved, and the CTAs of a cluster, which share B's k-blocks, share one parity."""
    res = run_on_host(tmp_path, "v5_fused_epilogue", 1, ROWS_CHECKER,
                      {"BM": bm, "CLUSTER_M": cm, "ROW_PARITY": parity, "EDGE_SHIFT": edge_shift})
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stdout


def kernel_splits_on_host(tmp_path, stage_name: str, cases) -> list[bool]:
    """The kernel's own rule, streamk_units(units, workers, kt) > 0, for each (units, workers, kt)
    of `cases`, compiled from the stage's schedule section and run on the host."""
    main = ("int main() {\n" + "".join(f'  std::printf("%d\\n", streamk_units({u}, {w}, {kt}));\n' for u, w, kt in cases)
            + "  return 0;\n}\n")
    out = run_on_host(tmp_path, stage_name, 1, main).stdout
    splits = [int(x) > 0 for x in out.split()]
    assert len(splits) == len(cases)
    return splits


def test_v4_runs_the_fixup_build_only_where_it_splits():
    """defines_for: the STREAMK=1 build (and its scratch) only for calls whose wave the rule
    splits; a STREAMK=0 variant stays STREAMK=0; EPI_BORROW is refused where it cannot apply;
    EPI_DEFER only where a block computes more than one unit."""
    import stages.v4_swizzle_pipeline as v4
    from stages.core import gpu
    from stages.core.stage import Call

    st = stages.get("v4_swizzle_pipeline")
    dev = gpu.REFERENCE_DEVICE

    def build(m, n, k, cfg):
        return v4.defines_for(Call(None, None, None, m, n, k, cfg, dev, None))

    assert build(4096, 4096, 4096, st.defines) == {"STREAMK": 0}     # 116 of 132: not split
    assert build(8192, 8192, 8192, st.defines) == {}                  # 68 of 132: split
    assert build(4096, 14336, 4096, st.defines) == {}
    assert build(1024, 1024, 1024, st.defines) == {"STREAMK": 0, "EPI_DEFER": 0}  # 32 units: one partial wave
    assert build(8192, 8192, 8192, {**st.defines, "STREAMK": 0}) == {"STREAMK": 0}
    for bad in ({"EPI_BORROW": 1, "CLUSTER_M": 2}, {"EPI_BORROW": 1, "TMA_STORE": 0},
                {"EPI_BORROW": 1, "BN": 128}, {"EPI_BORROW": 2}):
        with pytest.raises(ValueError, match="EPI_BORROW"):
            v4.check_config({**st.defines, **bad})
    v4.check_config({**st.defines, "EPI_BORROW": 1})
    # PINGPONG: a whole tile per consumer warpgroup (BN=128), without stream-K or EPI_BORROW
    pp = {**st.defines, "PINGPONG": 1, "BN": 128, "STREAMK": 0}
    v4.check_config(pp)
    for bad in ({"BN": 256}, {"STREAMK": 1}, {"EPI_BORROW": 1}, {"PINGPONG": 2}):
        with pytest.raises(ValueError, match="PINGPONG"):
            v4.check_config({**pp, **bad})
    assert build(4096, 4096, 4096, pp) == {"STREAMK": 0}
    # EPI_DEFER: how many of the next tile's k-blocks run before the deferred pass (0: none deferred)
    for ok in (0, 1, 2):
        v4.check_config({**st.defines, "EPI_DEFER": ok})
    with pytest.raises(ValueError, match="EPI_DEFER"):
        v4.check_config({**st.defines, "EPI_DEFER": 3})
    # ... and only where a block computes more than one unit (a next tile to hide the pass under)
    assert st.defines["EPI_DEFER"] == 1 and "EPI_DEFER" not in build(4096, 4096, 4096, st.defines)


@pytest.mark.skipif(CXX is None, reason="no C++ compiler on this machine")
def test_v4_host_rule_is_the_kernels(tmp_path):
    """v4's host rule (streamk_splits: which build a call runs, and its scratch) is exactly the
    kernel's (streamk_units > 0): a call the kernel would split never runs the build without the
    fixup; and the shapes the README names are split or not as it says."""
    import stages.v4_swizzle_pipeline as v4
    from stages.core import gpu

    st = stages.get("v4_swizzle_pipeline")
    dev = gpu.REFERENCE_DEVICE
    shapes = [(m, n, k) for m in (128, 1024, 2048, 4096, 8192) for n in (256, 2304, 3328, 4096, 4352, 14336)
              for k in (64, 128, 1024, 2048, 4096, 8192)]
    rows = []
    for m, n, k in shapes:
        units, workers = v4._workers(m, n, st.defines, dev)
        rows.append((units, workers, k // 64, v4.streamk_splits(m, n, k, st.defines, dev)))
    kernel_splits = kernel_splits_on_host(tmp_path, "v4_swizzle_pipeline", [r[:3] for r in rows])
    wrong = [s for s, (_, _, _, splits), ks in zip(shapes, rows, kernel_splits) if splits != ks]
    assert not wrong, f"host and kernel disagree on splitting: {wrong}"
    assert sum(r[3] for r in rows) >= 10 and sum(not r[3] for r in rows) >= 10
    assert v4.streamk_splits(8192, 8192, 8192, st.defines, dev)
    assert v4.streamk_splits(4096, 14336, 4096, st.defines, dev)
    assert not v4.streamk_splits(4096, 4096, 4096, st.defines, dev)  # 116 of 132: too little idle


@pytest.mark.skipif(CXX is None, reason="no C++ compiler on this machine")
def test_v5_host_rule_is_the_kernels(tmp_path):
    """v5's host rule (streamk_pays: hand the kernel its stream-K scratch) is exactly the kernel's
    (streamk_units > 0), so the kernel never splits a wave without scratch and no scratch is made
    for nothing; and the shapes the README names are split or not as it says."""
    import stages.v5_fused_epilogue as v5
    from stages.core import gpu
    from stages.core.stage import cdiv

    cfg, dev = stages.get("v5_fused_epilogue").defines, gpu.REFERENCE_DEVICE
    sms = dev.sm_count
    shapes = [(m, n, k) for m in (129, 1000, 2048, 4095, 4096, 8192) for n in (1000, 3328, 4097, 14336)
              for k in (640, 2048, 4104, 8192)]
    rows = []
    for m, n, k in shapes:
        units, workers = v5._workers(m, n, k, cfg, dev)
        rows.append((units, workers, cdiv(k, 64), v5.streamk_pays(m, n, k, cfg, dev)))
    kernel_splits = kernel_splits_on_host(tmp_path, "v5_fused_epilogue", [r[:3] for r in rows])
    wrong = [s for s, (_, _, _, pays), ks in zip(shapes, rows, kernel_splits) if pays != ks]
    assert not wrong, f"host and kernel disagree on splitting: {wrong}"
    assert sum(r[3] for r in rows) >= 5, "the host rule never splits: the test reaches nothing"
    assert v5.streamk_pays(8192, 8192, 8192, cfg, dev) and v5.streamk_pays(4095, 4097, 4104, cfg, dev)
    assert not v5.streamk_pays(4096, 4096, 4096, cfg, dev)      # 116 of 132: too little idle
    assert v5.streamk_pays(4096, 14336, 4096, cfg, dev)         # 27 idle k-blocks per worker >= 12
    assert not v5.streamk_pays(1, 4096, 4096, cfg, dev)         # a split of K has its own reduction
    # Under one wave (SK_FILL): every SM launched and every unit shared out, or the grid stays
    # min(units, SMs) where too little would be gained.
    for shape in [(384, 3000, 6016), (320, 3500, 12288), (1000, 2000, 8200)]:  # 128-row tiles, >= 32 idle
        cm, cn = v5.cluster_for(*shape, cfg, dev)  # k-blocks per SM (the last in 2 x 2 clusters: 30 fit)
        assert v5._workers(*shape, cfg, dev)[1] == dev.clusters(cm * cn) and v5.streamk_pays(*shape, cfg, dev), shape
    # 8-10 idle k-blocks, and 64-row tiles (measured losses; the rule's 64 x 128 tiles for M > 64
    # included: 128 x 4096 x 4096 and 256 x 4096 x 4096, 64 and 128 of them)
    for shape in [(128, 14336, 4096), (16, 14336, 4096), (1000, 1000, 1000), (40, 8448, 4096), (256, 4096, 4096),
                  (128, 4096, 4096)]:
        assert v5._workers(*shape, cfg, dev)[1] < sms and not v5.streamk_pays(*shape, cfg, dev), shape
    fixed = {**cfg, "AUTO": 0, "BM": 128, "BN": 128, "STAGES": 6}
    assert v5._workers(129, 7, 4104, {**fixed, "SK_FILL": 1}, dev) == (2, 2)  # 2 x 65 k-blocks: under 4 per SM
    assert v5._workers(384, 3000, 6008, {**cfg, "SK_FILL": 0}, dev) == (24, 24)  # 2 x 2 clusters of 128 x 128, no fill
    assert v5._workers(384, 3000, 6008, {**fixed, "SK_FILL": 0}, dev) == (72, 72)  # 128 x 128 tiles, no fill
    assert v5._workers(384, 3000, 6000, cfg, dev) == (72, sms)  # rows 32-byte aligned: no clusters, the fill
