"""Writes the notebooks (without outputs) from the cells below: `python notebooks/build.py`;
`python notebooks/build.py --figures` re-executes the overview to refresh the README's PNGs.

The committed .ipynb files carry no outputs, so nothing stale is ever committed; tests execute
every one top to bottom. Stage walkthroughs come from one template, one per registered stage, so
a new stage gets its walkthrough by rerunning this script (its "why" figure comes from the stage
folder's why.py, or a generic one when it has none).
"""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SETUP = '''\
import os
from pathlib import Path

import matplotlib.pyplot as plt
from IPython.display import HTML, Markdown, display

import stages
from stages.core import gpu
from stages.tools import bench, plots, records

# The switch: LIVE = True (or GEMM_STAGES_LIVE=1) on a GPU machine re-measures, writes a run
# record to results/runs/ and draws from it; otherwise every figure comes from the published
# records in results/.
LIVE = os.environ.get("GEMM_STAGES_LIVE", "0") == "1"
FIGURES = Path(os.environ.get("GEMM_STAGES_FIGURES", "figures"))
recs = records.load_all()
gpu_ok, gpu_why = gpu.available()
print("GPU here:", "yes" if gpu_ok else f"no ({gpu_why})")
print("stages:", ", ".join(stages.names()))'''


def overview():
    cells = [
        new_markdown_cell(
            "# gemm-stages: overview\n\n"
            "Where each stage sits against the H200's ceilings, how much each idea adds, and how the "
            "speed grows with size.\n\n"
            "**Data.** By default every figure comes from the H200 records committed under `results/` "
            "(listed at the end). On a GPU machine, set `LIVE = True` (or run with `GEMM_STAGES_LIVE=1`): "
            "the notebook re-measures every stage, cuBLAS and the ceilings and writes new records, "
            "which the figures then use. The stage list comes from the registry, so a stage added "
            "later appears in every figure by itself."),
        new_code_cell(SETUP),
        new_code_cell(
            "if LIVE and gpu_ok:\n"
            "    from stages.tools import ceilings\n"
            "    sizes = [(s, s, s) for s in (256, 512, 1024, 2048, 4096, 8192)]\n"
            "    rec, crec = bench.run_bench([*stages.names(), 'cublas'], shapes=sizes), ceilings.record()\n"
            "    for r in (rec, crec):\n"
            "        r['_path'] = str(records.write(r))\n"
            "        print('wrote run record', r['_path'], '(add it to results/ with --publish to keep it)')\n"
            "    recs = recs + [rec, crec]\n"
            "elif LIVE:\n"
            "    print('LIVE asked for, but', gpu_why, '- using the committed records')\n"
            "GPU = 'H200' if not (LIVE and gpu_ok) else gpu.current().name.replace('NVIDIA ', '')"),
        new_markdown_cell(
            "## The traffic model behind the x axis\n\n"
            "A block that owns a BM × BN tile of C reads a BM × K strip of A and a BN × K strip of B "
            "once, so over the whole GEMM A is read N/BN times, B M/BM times, and C written once:\n\n"
            "bytes = 2 · (M·N·K/BN + M·N·K/BM + M·N)   (fp16: 2 bytes an element)\n\n"
            "v0 shares nothing between threads: its tile is 1 × 1 and every multiply-add reads two "
            "operands (0.5 FLOP/byte). Cache hits are not credited: this is what DRAM would serve if "
            "no cache helped, so a stage can sit *above* the HBM roof when L2 serves its re-reads "
            "(the grouped block order of v2 and v3 exists to make that happen). cuBLAS's tiles are not "
            "known; it is placed at the compulsory traffic (A, B, C once each)."),
        new_code_cell(
            "rows = ['| stage | idea | reuse tile | FLOP/byte at 4096³ |', '|---|---|---|---|']\n"
            "for name in [*stages.names(), 'cublas']:\n"
            "    st = stages.get(name)\n"
            "    tile = 'compulsory' if name == 'cublas' else '{} × {}'.format(*st.reuse_tile)\n"
            "    rows.append(f'| {name} | {st.idea} | {tile} | {plots.intensity(st, 4096, 4096, 4096):.1f} |')\n"
            "display(Markdown('\\n'.join(rows)))"),
        new_markdown_cell("## Roofline at 4096³"),
        new_code_cell(
            "fig, ax = plt.subplots(figsize=(9, 6))\n"
            "plots.roofline(recs, ax=ax, gpu_substring=GPU)\n"
            "print('saved', plots.save(fig, 'roofline', FIGURES))\n"
            "plt.show()"),
        new_markdown_cell(
            "Reading it: v0 sits far below even the HBM roof at its 0.5 FLOP/byte: its limit is the "
            "load instructions themselves (see its walkthrough). v1 has the data reuse to leave memory "
            "behind; it runs at 41 TFLOP/s, 61% of the datasheet fp32 FMA roof (66.9 TFLOP/s) and 76% "
            "of what an FFMA-only loop reaches on the same GPU (54.3 TFLOP/s, the ceilings record): "
            "close to the fp32 roof, not on it. v2 and v3 use the tensor cores; by the tiling model "
            "they would be memory-bound at 63-84 FLOP/byte, and they run above that HBM line because "
            "most re-reads of A and B hit L2 (the grouped block order keeps them there).\n\n"
            "The model's traffic for v3 at 4096³ is 2·4096³·(1/128 + 1/256) B = 1.61 GB of A and B "
            "tile reads in 0.206 ms (results/20261203T165256-nvidia-h200.json), about 7.8 TB/s. That is the same order as what load-instruction "
            "probes get out of L2 (7.5 TB/s in the ceilings record, 8.0 TB/s in "
            "`probes/l2_bandwidth.py`), but both are lower bounds on L2's rate, and v3 reads through "
            "TMA, not load instructions: this figure does not show that v3 is L2-bound, and the L2 "
            "line is drawn as a lower bound, not a roof. What limits v3 was then measured with "
            "Nsight Compute (the profile record, `python -m stages profile`): its tensor pipe is "
            "active 82% of its active cycles, L2 serves 1.48 GB at a 78% hit rate and DRAM 0.19 GB; "
            "the top stall reasons are `barrier` and `wait`, i.e. the pipeline and the epilogue, "
            "not L2 bandwidth. v4 (warp specialization, a persistent grid, a TMA-store epilogue) "
            "takes the tensor pipe to 95% active. The hollow markers place each stage by the DRAM "
            "bytes measured instead of the model: every stage from v1 on sits right of the ridge, "
            "because L2 serves the re-reads."),
        new_markdown_cell("## Version over version"),
        new_code_cell(
            "fig, ax = plt.subplots(figsize=(9, 4.5))\n"
            "plots.speedups(recs, ax=ax, gpu_substring=GPU)\n"
            "print('saved', plots.save(fig, 'speedups', FIGURES))\n"
            "plt.show()"),
        new_markdown_cell("## TFLOP/s against size"),
        new_code_cell(
            "fig, ax = plt.subplots(figsize=(9, 5))\n"
            "plots.by_size(recs, ax=ax, gpu_substring=GPU)\n"
            "print('saved', plots.save(fig, 'sizes', FIGURES))\n"
            "plt.show()"),
        new_markdown_cell(
            "Small problems do not fill 132 SMs: at 256³ a 128 × 128 tiling has 4 blocks, and every "
            "stage (cuBLAS included) is launch- and latency-bound. From 2048³ on, the tiles fill the "
            "GPU and the stages separate by their instruction path."),
        new_code_cell(
            "print('records used:')\n"
            "for p in plots.sources(recs, GPU):\n"
            "    print(' ', p)"),
    ]
    return cells


def cpu_baseline():
    return [
        new_markdown_cell(
            "# The CPU baseline: a numba GEMM with BLIS's loop nest, packing and blocking\n\n"
            "Everything here runs **live on your CPU**: the packing, the micro-kernel's assembly, and "
            "the speed against numpy's float32 matmul on the same cores. Set `GEMM_STAGES_CPU_SIZES` "
            "(e.g. `512,1024,2048`) to time other sizes. The README's CPU table comes from the "
            "recorded `make bench` run instead (`results/`)."),
        new_code_cell(
            "import importlib\n"
            "import inspect\n"
            "import os\n"
            "import platform\n\n"
            "import matplotlib.pyplot as plt\n"
            "import numpy as np\n"
            "from IPython.display import Markdown, display\n\n"
            "import cpu_reference\n"
            "g = importlib.import_module('cpu_reference.gemm')  # the module (cpu_reference.gemm is also the function)\n"
            "from stages.tools import cpu_bench, records, report, verify\n\n"
            "print(records.cpu_name(), os.cpu_count(), 'cores;', platform.python_version())\n"
            "print({k: getattr(g, k) for k in ('MR', 'NR', 'MC', 'KC', 'NC', 'KU', 'PAD')})"),
        new_markdown_cell(
            "## 1. Packing\n\nBlocks of A (MC × KC) and B (NC × KC) are copied into contiguous panels "
            "so the micro-kernel streams through memory in the order it computes. Both operands "
            "are K-major (the `a @ b.T` layout). Each packed block is `panels[p, r, k]`: panel p "
            "holds MR (or NR) consecutive rows, stored one after another, each row's KC values "
            "contiguous. BLIS instead interleaves its micro-panels so that the MR (or NR) values of "
            "one k sit together: that suits its outer-product micro-kernel, while this one computes "
            "its 4 × 6 tile as 24 dot products along k (an inner product, vectorized along k). "
            "The source:"),
        new_code_cell("print(inspect.getsource(g.pack_panel))"),
        new_markdown_cell("## 2. The micro-kernel and what its assembly shows"),
        new_code_cell("print(inspect.getsource(g.micro_kernel))"),
        new_code_cell(
            "rep = cpu_reference.simd_report()\n"
            "for key, val in rep.items():\n"
            "    if key != 'hot_loop':\n"
            "        print(f'{key}: {val}')\n"
            "print('\\n'.join(rep.get('hot_loop', [])[:40]))"),
        new_markdown_cell("## 3. Correct first"),
        new_code_cell(
            "st_cpu = __import__('stages').get('cpu_numba')\n"
            "for shape in [(1, 1, 1), (17, 129, 3), (129, 1024, 17), (128, 128, 16384)]:\n"
            "    chk = verify.check(st_cpu, *shape)\n"
            "    print(shape, 'ok' if chk.passed else 'FAIL', f'rel err {chk.rel_fro:.1e}')"),
        new_markdown_cell("## 4. Speed against numpy, same cores, same run"),
        new_code_cell(
            "sizes = [int(s) for s in os.environ.get('GEMM_STAGES_CPU_SIZES', '256,512,1024').split(',')]\n"
            "rows = cpu_bench.run_cpu([(s, s, s) for s in sizes], rounds=3)\n"
            "fig, ax = plt.subplots(figsize=(7, 4))\n"
            "cpu_bench.plot_cpu(rows, ax=ax)\n"
            "plt.show()"),
        new_markdown_cell("The newest recorded run (the README's table: since 2026-12-03 the lent H200's 16-core host):"),
        new_code_cell("display(Markdown(report.cpu_table(records.load_all())))"),
    ]


WALK_SETUP = '''
from stages.tools import diagrams
from stages.tools.inspect import inspect_stage

st = stages.get(NAME)


def show_readme(anchor):
    """The stage README's text that belongs here (its `<!-- explains: ... -->` hints say where)."""
    for md in plots.readme_blocks(NAME, anchor):
        display(Markdown(md))


def draw(kind, defines=None, **options):
    """A diagram from the kernel's own arithmetic, for the stage's defines or changed ones:
    draw("banks_padded", {"PAD": 8}) redraws it for a variant."""
    diagrams.draw(kind, {**st.defines, **(defines or {})}, **options)
    plt.show()


def show_part(part):
    """One part of the kernel: its diff from the previous stage, the README's explanation of it,
    and the diagrams the stage's why.py puts there."""
    display(HTML(plots.kernel_diff_html(NAME, part=part)))
    show_readme(part)
    for kind, options in plots.stage_diagrams(NAME, part):
        print(f"diagram {kind!r}:", getattr(diagrams.KINDS[kind], "__doc__", "").split(chr(10) + chr(10))[0])
        draw(kind, **options)'''

PART_TEXT = {
    "setup": "Everything outside the section banners: the header, defines, the shared-memory size, "
             "helpers, the block's coordinates.",
    "load": "Getting A and B from global memory to where the math reads them.",
    "compute": "The multiply-adds.",
    "epilogue": "Writing C.",
}


def walkthrough(name: str, index: int):
    import stages  # noqa: PLC0415
    from stages.tools import plots  # noqa: PLC0415

    st = stages.get(name)
    knob = plots.knob(name)
    questions = plots.questions(name)
    cells = [
        new_markdown_cell(
            f"# {name}: walkthrough\n\n"
            f"Stage {index} of the climb (builds on {st.previous or 'nothing: the starting point'}). "
            "Everything is rendered from the stage folder: its README (all of it, each part placed "
            "next to the code it explains), its kernel (split at the section banners), its why.py "
            "(the knob to turn, the questions, the diagrams, the figure). The `inspect` figures are "
            "compiled here (no GPU needed); the measured numbers come from the committed H200 "
            "records, or from a fresh run with `LIVE = True` on a GPU machine."),
        new_code_cell(SETUP + f"\nNAME = {name!r}\n" + WALK_SETUP),
        new_code_cell(
            "if LIVE and st.runnable()[0]:\n"
            "    rec = bench.run_bench([NAME], shapes=[(4096, 4096, 4096), (8192, 8192, 8192)])\n"
            "    rec['_path'] = str(records.write(rec))\n"
            "    print('wrote run record', rec['_path'])\n"
            "    recs = recs + [rec]\n"
            "elif LIVE:\n"
            "    print('LIVE asked for, but', st.runnable()[1], '- using the committed records')"),
        new_markdown_cell(
            "## Where the time went before this stage (measured)\n\n"
            "Nsight Compute counters of the previous stage (and of this stage, for comparison) at "
            "4096³, from the newest published profile record (`python -m stages profile` on a GPU "
            "machine): the bottleneck this stage's idea attacks, measured before it is explained."),
        new_code_cell(
            "from stages.tools import profile\n"
            "for who in [st.previous, NAME]:\n"
            "    if who:\n"
            "        display(Markdown(f'**{who}**\\n\\n' + profile.profile_table(who, recs, link_prefix='../')))"),
        new_markdown_cell("## The idea"),
        new_code_cell('show_readme("idea")'),
        new_markdown_cell(
            "## The kernel, part by part\n\n"
            "The diff of `kernel.cu` from the previous stage (the first stage: its own source), cut at "
            "the kernel's section banners (`// ---- load`, `// ---- compute`, `// ---- epilogue`; "
            "`plots.BANNER_PART` maps the others), each part followed by what the README says about it "
            "and by the diagrams drawn from its address arithmetic."),
        new_code_cell("display(Markdown(plots.diff_overview(NAME)))"),
    ]
    for part in plots.PARTS:
        cells += [new_markdown_cell(f"### {part}\n\n{PART_TEXT.get(part, '')}"),
                  new_code_cell(f"show_part({part!r})")]
    cells += [
        new_markdown_cell("### Beyond the diff"),
        new_code_cell('show_readme("diff")'),
        new_markdown_cell("## What the compiler made of it (`python -m stages inspect`)"),
        new_code_cell(
            "rep = inspect_stage(st, arch='sm_90a')\n"
            "print(rep.render())\n"
            'show_readme("inspect")'),
    ]
    if plots.calls(name):
        cells += [
            new_markdown_cell(
                "## The build a call runs (`python -m stages inspect --shape ... --epilogue ...`)\n\n"
                "This stage decides part of its build per call: the report above is its configuration's "
                "own build, which a call of another shape does not run. The table lists what it picks for "
                "a few calls on the H200 (`defines_for`, aligned operands; nothing compiled): the "
                "columns whose values differ between them. Add a call of your own to `CALLS`, or "
                "compile and read one with `inspect_stage(st, problem=(M, N, K), "
                "epilogue='bias+gelu')`, the epilogue spelled as for `--epilogue`."),
            new_code_cell(
                "CALLS = plots.calls(NAME)  # [((M, N, K), epilogue), ...]: add yours\n"
                "display(Markdown(plots.call_builds(st, CALLS)))"),
        ]
    cells += [
        new_markdown_cell(
            "## Predict first: turn a knob\n\n"
            + plots.knob_question(name) + "\n\n"
            "Write your prediction down, then run the cell: it compiles the variant (on the CPU, no GPU "
            "needed) and prints both `inspect` reports side by side; on a GPU that runs the stage it "
            "also times both. `KNOB` is yours to change: any define of the stage (`st.defines` lists "
            "them); a configuration the kernel cannot build is refused with the rule it breaks."),
        new_code_cell(
            f"KNOB = {knob!r}\n"
            "var = st.variant(**KNOB)\n"
            "rep_var = inspect_stage(var, arch='sm_90a')\n"
            "display(Markdown(plots.inspect_compare(rep, rep_var)))\n"
            "if gpu_ok and st.runnable()[0]:\n"
            "    display(Markdown(plots.time_pair(st, var, shape=plots.knob_shape(NAME))))\n"
            "else:\n"
            "    print('timing both needs a GPU that runs', NAME, '-', gpu_why if not gpu_ok else st.runnable()[1])"),
        new_markdown_cell("Compare with your prediction, then read the explanation:"),
        new_code_cell(
            "display(Markdown(plots.knob_answer(NAME, st, var, rep, rep_var)))\n"
            'show_readme("knob")'),
    ]
    if questions:
        listing = "\n".join(f"{i}. {q[0]}" for i, q in enumerate(questions, 1))
        cells += [
            new_markdown_cell(
                "## Check yourself\n\n" + listing + "\n\n"
                "Put a number in each entry of `answers` and run both cells: each answer is compared "
                "with the value computed from the stage's own defines and `inspect` report."),
            new_code_cell("answers = {" + ", ".join(f"{i}: None" for i in range(1, len(questions) + 1)) + "}"),
            new_code_cell("display(Markdown(plots.check_answers(NAME, answers, st, rep)))"),
        ]
    cells += [
        new_markdown_cell("## Measured"),
        new_code_cell(
            "rows = plots.measured_rows(NAME, recs)\n"
            "lines = ['| shape | ms | TFLOP/s | % fp16 peak | × cuBLAS |', '|---|---|---|---|---|']\n"
            "for e in rows:\n"
            "    lines.append(f\"| {e['shape']} | {e['ms_median']:.3f} | {e['tflops']:.1f} | \"\n"
            "                 f\"{e.get('pct_peak') or 0:.1f} | {e.get('ratio_cublas') or 0:.3f} |\")\n"
            "display(Markdown('\\n'.join(lines) if rows else 'No measurement recorded yet.'))\n"
            'show_readme("measured")'),
        new_markdown_cell("## Why the idea helps"),
        new_code_cell(
            "print(plots.why_doc(NAME))\n"
            "plots.why(NAME, recs)\n"
            "plt.show()\n"
            'show_readme("why")'),
    ]
    if plots.readme_blocks(name, "end"):
        cells += [new_markdown_cell("## Still open"), new_code_cell('show_readme("end")')]
    return cells


def write(name: str, cells) -> Path:
    for i, cell in enumerate(cells):
        cell.id = f"cell-{i:02d}"  # stable ids: rebuilding leaves an unchanged notebook unchanged
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})
    path = HERE / name
    nbformat.write(nb, path)
    return path


def refresh_figures() -> None:
    """Execute the overview headless: it writes figures/roofline.png, speedups.png, sizes.png
    (the README shows them) from the committed records. The notebook file is not modified."""
    import os  # noqa: PLC0415

    import nbclient  # noqa: PLC0415

    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ["GEMM_STAGES_FIGURES"] = str(HERE / "figures")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HERE.parent), os.environ.get("PYTHONPATH")]))
    nb = nbformat.read(HERE / "00_overview.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": str(HERE)}}).execute()
    for p in sorted((HERE / "figures").glob("*.png")):
        print("wrote", p.relative_to(HERE.parent))


def main() -> None:
    import stages  # noqa: PLC0415

    if "--figures" in sys.argv:
        refresh_figures()
        return

    written = [write("00_overview.ipynb", overview()), write("01_cpu_baseline.ipynb", cpu_baseline())]
    for i, name in enumerate(stages.names()):
        written.append(write(f"{10 + i:02d}_{name}.ipynb", walkthrough(name, i)))
    for p in written:
        print("wrote", p.relative_to(HERE.parent))


if __name__ == "__main__":
    main()
