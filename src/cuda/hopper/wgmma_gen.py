#!/usr/bin/env python3
"""Writes src/cuda/hopper/wgmma_mma.cuh: the inline-PTX wgmma.mma_async wrappers
that the Hopper rungs and the wgmma probes share (declared in wgmma.cuh).

Inline asm takes only literal strings, and an m64nN instruction names N/2
accumulator registers, so the operand lists are written out here once.

    python3 src/cuda/hopper/wgmma_gen.py          # rewrite the header
    python3 src/cuda/hopper/wgmma_gen.py --check  # exit 1 if it is stale
"""
import pathlib
import sys

OUT = pathlib.Path(__file__).with_name("wgmma_mma.cuh")

# DType -> (PTX .dtype.atype.btype, asm constraint of D, immediates after the
# scale-d predicate: imm-scale-a, imm-scale-b, and whether the type takes
# imm-trans-a, imm-trans-b). No operand is negated (scale 1); integer wgmma
# has no scale immediates. Only f16 and bf16 take the transpose immediates:
# mma<TransA, TransB> passes them (0: K-major, 1: M- or N-major); every
# other type reads K-major operands only, and mma<0, 0> is all it has.
TYPES = {
    "bf16": ("f32.bf16.bf16", "f", ", 1, 1", True),
    "f16": ("f32.f16.f16", "f", ", 1, 1", True),
    "tf32": ("f32.tf32.tf32", "f", ", 1, 1", False),
    "e4m3": ("f32.e4m3.e4m3", "f", ", 1, 1", False),
    "e5m2": ("f32.e5m2.e5m2", "f", ", 1, 1", False),
    "i8": ("s32.s8.s8", "r", "", False),
}
K = {"bf16": 16, "f16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32, "i8": 32}

# What is issued: the rungs (k30-k37: m64n128 and m64n256 in bf16, f16, e4m3,
# e5m2; k36's m64n128 halves), the library's 128 x 168, 128 x 176 and 128 x 192 ping-pong tiles (m64n168, m64n176, m64n192,
# bf16), k41's 128 x 192 tiles (m64n192, f16), the ping-pong kernel's narrow tails (m64n104, and k42's m64n64, bf16 and f16) and the probes (layouts: bf16 and e4m3 at N = 8;
# numerics: bf16, e4m3 and e5m2 at N = 8; throughput: bf16 and e4m3 at
# N = 8..256, f16, tf32, i8 at 256; wgmma_operand_layout: bf16 at N = 40, a
# partial 64-column slab alone).
PLAN = {
    "bf16": [8, 16, 32, 40, 64, 104, 128, 168, 176, 192, 256],
    "f16": [64, 104, 128, 192, 256],
    "tf32": [256],
    "e4m3": [8, 16, 32, 64, 128, 256],
    "e5m2": [8, 128, 256],
    "i8": [256],
}

# A from registers (the "RS" form: the A fragment in the m16n8k16 layout of each
# warp's 16 rows, B from shared memory): attention's P V product, whose P is
# the softmax of accumulators already in registers (D = 64 and 128).
PLAN_RS = {"bf16": [64, 128]}

PER_LINE = 12  # registers per line of the PTX string
OUTS_PER_LINE = 6  # asm outputs per line


def specialization(t: str, n: int) -> str:
    ptx_types, con, imm, transposable = TYPES[t]
    r = n // 2
    acc = "std::int32_t" if con == "r" else "float"
    regs = [f"%{i}" for i in range(r)]
    reg_lines = [", ".join(regs[i : i + PER_LINE]) for i in range(0, r, PER_LINE)]
    sep = [", " if i + 1 < len(reg_lines) else "" for i in range(len(reg_lines))]
    ptx_regs = "".join(f'            "{line}{s}"\n' for line, s in zip(reg_lines, sep))
    outs = [f'"+{con}"(d[{i}])' for i in range(r)]
    out_lines = [", ".join(outs[i : i + OUTS_PER_LINE]) for i in range(0, r, OUTS_PER_LINE)]
    outputs = ",\n              ".join(out_lines)
    if transposable:
        trans_imm, trans_in = f", %{r + 3}, %{r + 4}", ', "n"(TransA), "n"(TransB)'
        trans_rule = "static_assert((TransA | TransB) >> 1 == 0, \"imm-trans is 0 or 1\");"
    else:
        trans_imm, trans_in = "", ""
        trans_rule = f"static_assert(TransA == 0 && TransB == 0, \"{t} wgmma reads K-major operands only\");"
    return f"""template <>
struct Wgmma<DType::{t}, {n}> : WgmmaType<DType::{t}> {{
    template <int TransA = 0, int TransB = 0>
    static __device__ __forceinline__ void mma({acc} (&d)[{r}], std::uint64_t desc_a, std::uint64_t desc_b,
                                               std::uint32_t scale_d) {{
        {trans_rule}
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile(
            "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{r + 2}, 0;\\n"
            "wgmma.mma_async.sync.aligned.m64n{n}k{K[t]}.{ptx_types} {{"
{ptx_regs}            "}}, %{r}, %{r + 1}, p{imm}{trans_imm};\\n}}\\n"
            : {outputs}
            : "l"(desc_a), "l"(desc_b), "r"(scale_d){trans_in});
#else
        (void)d, (void)desc_a, (void)desc_b, (void)scale_d;
#endif
    }}
}};
"""


def specialization_rs(t: str, n: int) -> str:
    ptx_types, con, imm, _ = TYPES[t]
    r = n // 2
    regs = [f"%{i}" for i in range(r)]
    reg_lines = [", ".join(regs[i : i + PER_LINE]) for i in range(0, r, PER_LINE)]
    sep = [", " if i + 1 < len(reg_lines) else "" for i in range(len(reg_lines))]
    ptx_regs = "".join(f'            "{line}{s}"\n' for line, s in zip(reg_lines, sep))
    outs = [f'"+{con}"(d[{i}])' for i in range(r)]
    out_lines = [", ".join(outs[i : i + OUTS_PER_LINE]) for i in range(0, r, OUTS_PER_LINE)]
    outputs = ",\n              ".join(out_lines)
    return f"""template <>
struct WgmmaRS<DType::{t}, {n}> : WgmmaType<DType::{t}> {{
    template <int TransB = 0>
    static __device__ __forceinline__ void mma(float (&d)[{r}], const std::uint32_t (&a)[4], std::uint64_t desc_b,
                                               std::uint32_t scale_d) {{
        static_assert(TransB >> 1 == 0, "imm-trans-b is 0 or 1");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
        asm volatile(
            "{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{r + 5}, 0;\\n"
            "wgmma.mma_async.sync.aligned.m64n{n}k{K[t]}.{ptx_types} {{"
{ptx_regs}            "}}, {{%{r}, %{r + 1}, %{r + 2}, %{r + 3}}}, %{r + 4}, p{imm}, %{r + 6};\\n}}\\n"
            : {outputs}
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(scale_d), "n"(TransB));
#else
        (void)d, (void)a, (void)desc_b, (void)scale_d;
#endif
    }}
}};
"""


def render() -> str:
    parts = [
        "// Generated by src/cuda/hopper/wgmma_gen.py: do not edit; change the script and",
        "// run it. The specializations of sm90::Wgmma<DType, N>, one per (type, N) that",
        "// rigel issues; wgmma.cuh declares the template and includes this file.",
        "#pragma once",
        "#include <cstdint>",
        "",
        "namespace rigel::cuda::sm90 {",
        "",
    ]
    body = "\n".join(specialization(t, n) for t, ns in PLAN.items() for n in ns)
    body += "\n" + "\n".join(specialization_rs(t, n) for t, ns in PLAN_RS.items() for n in ns)
    return "\n".join(parts) + "\n" + body + "\n}  // namespace rigel::cuda::sm90\n"


def main() -> int:
    text = render()
    if sys.argv[1:] == ["--check"]:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is stale: run python3 {pathlib.Path(__file__)}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
