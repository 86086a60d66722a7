"""Static report of a stage's compiled kernel, no GPU needed: registers, shared and local memory,
spills, ptxas warnings and the SASS instruction mix (cuobjdump/nvdisasm from pip or the toolkit)."""
from __future__ import annotations

import collections
import os
import re
import subprocess
import textwrap
from dataclasses import dataclass, field

import numpy as np

from stages.core import compiler, contract, gpu
from stages.core.stage import Call

from . import records

# Instruction families worth naming in a GEMM, in the order a reader meets them.
FAMILIES = {
    "FFMA": "fp32 fused multiply-add (CUDA cores)",
    "HFMA2": "packed fp16 multiply-add (CUDA cores)",
    "HMMA": "tensor-core mma.sync (Ampere-style, warp-wide)",
    "HGMMA": "tensor-core wgmma (Hopper, warpgroup-wide, operands from shared memory)",
    "LDG": "global -> register load",
    "STG": "register -> global store",
    "LDS": "shared -> register load",
    "STS": "register -> shared store",
    "LDSM": "ldmatrix: shared -> tensor-core fragment",
    "LDGSTS": "cp.async: global -> shared, bypassing registers",
    "UTMALDG": "TMA tensor load: global -> shared by the copy engine",
    "UTMASTG": "TMA tensor store: shared -> global",
    "SYNCS": "mbarrier operations",
    "BAR": "block-wide barrier (__syncthreads)",
    "LDL": "local-memory load (spills, run-time-indexed arrays)",
    "STL": "local-memory store",
}
PTXAS_FAILURES = ("C7515", "C7511", "C7520")  # wgmma serialized; too few registers; serialized by inserted fences

# "/*0120*/  @P0 LDG.E.128 R4, ..." -> LDG.E.128. Lines guarded by @!PT (never true) are padding
# the compiler leaves around cp.async and are skipped.
_SASS_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s+(?!@!PT\b)(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", re.M)


@dataclass
class Report:
    stage: str
    kernel: str
    arch: str
    nvrtc: str
    registers: int | None = None
    static_smem: int | None = None
    dynamic_smem: int | None = None
    stack_frame: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    local_memory: int | None = None
    warnings: list[str] = field(default_factory=list)
    opcodes: dict[str, int] = field(default_factory=dict)  # base opcode -> count
    sass_available: bool = True
    sass_error: str = ""
    source: str = "ptxas report"  # where registers/stack/spills came from ("the cubin" without a report)
    call: str = ""  # with a shape: "MxNxK epilogue", the call whose build this is
    call_defines: dict = field(default_factory=dict)  # ... and what the stage's defines_for picked for it

    @property
    def families(self) -> dict[str, int]:
        return {f: self.opcodes.get(f, 0) for f in FAMILIES if self.opcodes.get(f, 0)}

    @property
    def total_instructions(self) -> int:
        return sum(self.opcodes.values())

    @property
    def failures(self) -> list[str]:
        """Everything that makes a kernel slow by construction: spills, local memory, C7515/C7511;
        and a report that could not be read (unknown is not zero)."""
        out = []
        if self.spill_stores is None or self.spill_loads is None or self.registers is None:
            out.append(f"spills unknown (no ptxas report; the cubin has {self.opcodes.get('STL', 0)} STL, "
                       f"{self.opcodes.get('LDL', 0)} LDL)")
        if self.spill_stores or self.spill_loads:
            out.append(f"spills: {self.spill_stores} B stored, {self.spill_loads} B loaded")
        if self.local_memory:
            out.append(f"local memory: {self.local_memory} B per thread")
        out += [w for w in self.warnings if any(code in w for code in PTXAS_FAILURES)]
        return out

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in (
            "stage", "kernel", "arch", "nvrtc", "registers", "static_smem", "dynamic_smem",
            "stack_frame", "spill_stores", "spill_loads", "local_memory", "source", "warnings", "opcodes", "failures",
            "call", "call_defines")}

    def render(self) -> str:
        def b(x):
            return "?" if x is None else f"{x:,} B"
        lines = [f"{self.stage}  kernel {self.kernel}, compiled for {self.arch} by NVRTC {self.nvrtc}"]
        if self.call:
            picked = " ".join(f"{k}={v}" for k, v in self.call_defines.items()) or "nothing (one build for every shape)"
            lines += textwrap.wrap(f"the build a call of {self.call} runs on {gpu.REFERENCE_DEVICE.name}; per call the "
                                   f"stage picks {picked}", 98, initial_indent="  ", subsequent_indent="    ")
        lines += [
            f"  registers/thread  {self.registers}",
            f"  shared memory     static {b(self.static_smem)}, dynamic {b(self.dynamic_smem)}"
            " (as the kernel defines it: gemm_smem_bytes)",
            f"  local memory      {b(self.local_memory)} (stack frame {b(self.stack_frame)}, "
            f"spill stores {b(self.spill_stores)}, spill loads {b(self.spill_loads)}; from {self.source})",
            "  ptxas warnings    " + ("; ".join(self.warnings) if self.warnings else "none"),
        ]
        if not self.sass_available:
            lines.append(f"  SASS              unavailable ({self.sass_error})")
        else:
            lines.append(f"  SASS              {self.total_instructions} instructions; by family:")
            for fam, cnt in self.families.items():
                lines.append(f"    {fam:<8} {cnt:>6}  {FAMILIES[fam]}")
            others = collections.Counter({k: v for k, v in self.opcodes.items() if k not in FAMILIES})
            if others:
                lines.append("    other    " + ", ".join(f"{k} {v}" for k, v in others.most_common(8)))
        if self.failures:
            lines.append("  PROBLEMS          " + "; ".join(self.failures))
        return "\n".join(lines)


def _int(pattern: str, text: str) -> int | None:
    m = re.search(pattern, text)
    return int(m.group(1)) if m else None


def parse_ptxas(log: str, kernel: str) -> dict:
    """Registers, stack frame and spills for `kernel` from a `ptxas -v` log."""
    # The name exactly: "gemm_x" must not take the report of "gemm_x_reduce" printed before it
    # (v5's cubin: until this was fixed, v5's main kernel read its reduce kernel's 0-byte frame).
    m = re.search(rf"Function properties for {re.escape(kernel)}\s*$", log, re.MULTILINE)
    part = log[m.start():] if m else ""  # no report for this kernel: unknown, never another's figures
    return {
        "stack_frame": _int(r"(\d+) bytes stack frame", part),
        "spill_stores": _int(r"(\d+) bytes spill stores", part),
        "spill_loads": _int(r"(\d+) bytes spill loads", part),
        "registers": _int(r"Used (\d+) registers", part),
        "static_smem": _int(r"(\d+) bytes smem", part) or 0,
    }


def count_opcodes(sass: str) -> dict[str, int]:
    """Base opcode (text before the first '.') -> count, over every instruction in the listing."""
    counts = collections.Counter(m.group(1).split(".")[0] for m in _SASS_LINE.finditer(sass))
    counts.pop("NOP", None)
    return dict(counts.most_common())


def _run_tool(name: str, args: list[str]) -> str:
    exe = compiler.tool(name)
    if not exe:
        raise FileNotFoundError(f"{name} not found (pip install nvidia-cuda-{name} or a CUDA toolkit)")
    env = dict(os.environ)
    disasm = compiler.tool("nvdisasm")
    if disasm:  # cuobjdump -sass shells out to nvdisasm
        env["PATH"] = os.path.dirname(disasm) + os.pathsep + env.get("PATH", "")
    res = subprocess.run([exe, *args], capture_output=True, text=True, env=env, timeout=120)
    if res.returncode:
        raise RuntimeError(f"{name} failed: {res.stderr.strip()[:300]}")
    return res.stdout


def resource_usage(cubin_path: str, kernel: str) -> dict:
    """REG/STACK/SHARED/LOCAL of `kernel` from `cuobjdump -res-usage`."""
    text = _run_tool("cuobjdump", ["-res-usage", cubin_path])
    m = re.search(rf"Function {re.escape(kernel)}:\s*\n\s*(.+)", text)
    fields = dict(re.findall(r"(\w+(?:\[\d+\])?):(\d+)", m.group(1))) if m else {}
    return {k: int(v) for k, v in fields.items()}


def sass(cubin_path: str) -> str:
    return _run_tool("cuobjdump", ["-sass", cubin_path])


def kernel_sass(cubin_path: str, kernel: str) -> str:
    """The SASS of one kernel of a cubin ("" if it has none of that name): cuobjdump lists every
    function, and a module may hold several (v5's also holds its split-K reduce kernel)."""
    parts = re.split(r"Function : (\w+)", sass(cubin_path))
    return dict(zip(parts[1::2], parts[2::2])).get(kernel, "")


class _Aligned:  # an operand or output as a stage's defines_for reads it, with no GPU: a 256-byte aligned base
    class data:
        ptr = 0


def call_epilogue(spec: str) -> contract.Epilogue:
    """bench's spelling of an epilogue ("plain", "bias+gelu", ...) as the contract's Epilogue that a
    call with it carries, its bias float16 as bench's (a stand-in: defines_for reads its dtype)."""
    return records.parse_epilogue(spec).epilogue(np.zeros(1, np.float16))


def call_defines(stage, m: int, n: int, k: int, epilogue: contract.Epilogue = contract.PLAIN, dev=None) -> dict:
    """The per-call defines `stage.defines_for` picks for a call of this shape and epilogue with
    aligned, packed operands on `dev` (default: the reference H200): what that call compiles on top
    of the stage's configuration. {} for a stage that builds one kernel for every call."""
    if not stage.defines_for:
        return {}
    return dict(stage.defines_for(Call(_Aligned, _Aligned, _Aligned, m, n, k, stage.defines,
                                       dev or gpu.REFERENCE_DEVICE, epilogue)))


def same_builds(variants, m: int, n: int, k: int, epilogue: contract.Epilogue = contract.PLAIN, dev=None) -> list:
    """The groups (two or more names) of `variants` that build one and the same kernel for a call of
    this shape and epilogue: variants of a stage that decides part of its build per call differ
    only where a call takes the defines they change (a tile knob where the rule picks the tile,
    v5's ROW_PARITY at odd M). Their times then differ by noise alone. `variants`: stages, named
    by their own names, or a {name: stage} mapping (a probe's labels), in order."""
    named = variants.items() if isinstance(variants, dict) else ((st.name, st) for st in variants)
    groups: dict = {}
    for name, st in named:
        built = {**st.defines, **call_defines(st, m, n, k, epilogue, dev)}
        groups.setdefault((st.base_name, tuple(sorted(built.items()))), []).append(name)
    return [names for names in groups.values() if len(names) > 1]


def inspect_stage(stage, arch: str = "sm_90a", problem=(4096, 4096, 4096), epilogue: str | None = None) -> Report:
    """Compile `stage` for `arch` (no GPU needed) and report on its kernel: its configuration's
    own build, or with `epilogue` (bench's spelling: "plain", "bias+gelu", ...) the build a call
    of `problem` with that epilogue runs (`call_defines`).

    The report never depends on what ran before: a cubin whose log lacks ptxas's report for this
    kernel (a cache entry, or NVRTC's own in-process reuse) is compiled again in a fresh process
    to get it; a report still missing then is a failure, never a zero."""
    extra = call_defines(stage, *problem, call_epilogue(epilogue)) if epilogue is not None else {}
    compiled = stage.compile(arch, extra)
    if not compiled.has_ptxas_report(stage.kernel):
        compiled = stage.compile(arch, extra, fresh=True)
    rep = Report(stage=stage.name, kernel=stage.kernel, arch=arch, nvrtc=compiler.nvrtc_version())
    if epilogue is not None:
        rep.call = f"{'x'.join(map(str, problem))} {records.parse_epilogue(epilogue).spelled}"
        rep.call_defines = extra
    for key, val in parse_ptxas(compiled.log, stage.kernel).items():
        setattr(rep, key, val)
    rep.source = "ptxas report" if compiled.has_ptxas_report(stage.kernel) else "the cubin"
    rep.dynamic_smem = stage.launch_for(*problem, dev=gpu.REFERENCE_DEVICE, extra=extra, compiled=compiled).shared_mem
    rep.warnings = compiler.ptxas_warnings(compiled.log)
    try:
        usage = resource_usage(str(compiled.cubin_path), stage.kernel)
        rep.opcodes = count_opcodes(sass(str(compiled.cubin_path)))
        rep.registers = usage.get("REG", rep.registers)
        if rep.stack_frame is None:
            rep.stack_frame = usage.get("STACK")
        if rep.spill_stores is None and "STACK" in usage:
            # No ptxas report (NVRTC 13.0 on the H200 leaves it out of the log when it compiled the
            # same program before): read the binary. Spills are local-memory stores and loads; a
            # kernel without a single STL/LDL instruction spills nothing. With them, unknown bytes.
            rep.spill_stores = None if rep.opcodes.get("STL") else 0
            rep.spill_loads = None if rep.opcodes.get("LDL") else 0
        # Spills live in the stack frame; cuobjdump's LOCAL counts other local arrays.
        rep.local_memory = max(usage.get("LOCAL", 0), rep.stack_frame or 0)
    except (FileNotFoundError, RuntimeError, subprocess.SubprocessError) as exc:
        rep.sass_available, rep.sass_error = False, str(exc)
        rep.local_memory = rep.stack_frame
    return rep
