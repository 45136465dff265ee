// The documented register layouts of the warp-level matrix instructions, and
// the host-side logic of the layout probe. The layouts are constexpr functions
// (plain C++; nvcc's --expt-relaxed-constexpr lets device code call them), so
// the kernels that place operands and the host that judges the results read
// one definition. Sources: PTX ISA 9.0, "Matrix Fragments for mma.m16n8k16
// with floating point type", "... mma.m16n8k8" (.tf32), "... mma.m16n8k32"
// (.s8/.e4m3), "... mma.m8n8k4 with .f64", and "wgmma Register Fragments"
// (the m64nNk16 / m64nNk32 accumulator D).
#pragma once
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/formats.hpp"

namespace rigel::probes {

enum class MmaKind : std::uint8_t {
    f16_m16n8k16,
    bf16_m16n8k16,
    tf32_m16n8k8,
    e4m3_m16n8k32,
    e5m2_m16n8k32,
    e4m3_e5m2_m16n8k32,  // A e4m3, B e5m2 (the accumulation probe's mixed path)
    s8_m16n8k32,
    f64_m8n8k4
};

// Shape and per-lane fragment sizes (elements) of one mma.sync; the
// accumulator is f32 except for s8 (s32) and f64.
struct MmaShape {
    int m, n, k;
    int a_elems, b_elems, d_elems;
    int elem_bytes;  // of A and B
    int acc_bytes;   // of C and D
};

constexpr MmaShape shape_of(MmaKind kind) {
    switch (kind) {
        case MmaKind::f16_m16n8k16:
        case MmaKind::bf16_m16n8k16: return {16, 8, 16, 8, 4, 4, 2, 4};
        case MmaKind::tf32_m16n8k8: return {16, 8, 8, 4, 2, 4, 4, 4};
        case MmaKind::e4m3_m16n8k32:
        case MmaKind::e5m2_m16n8k32:
        case MmaKind::e4m3_e5m2_m16n8k32:
        case MmaKind::s8_m16n8k32: return {16, 8, 32, 16, 8, 4, 1, 4};
        case MmaKind::f64_m8n8k4: return {8, 8, 4, 1, 1, 2, 8, 8};
    }
    return {};
}

constexpr int a_words(MmaKind kind) { return shape_of(kind).a_elems * shape_of(kind).elem_bytes / 4; }
constexpr int b_words(MmaKind kind) { return shape_of(kind).b_elems * shape_of(kind).elem_bytes / 4; }
constexpr int d_words(MmaKind kind) { return shape_of(kind).d_elems * shape_of(kind).acc_bytes / 4; }

// The PTX spelling of each instruction, for findings.
constexpr const char* ptx_name(MmaKind kind) {
    switch (kind) {
        case MmaKind::f16_m16n8k16: return "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
        case MmaKind::bf16_m16n8k16: return "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
        case MmaKind::tf32_m16n8k8: return "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
        case MmaKind::e4m3_m16n8k32: return "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32";
        case MmaKind::e5m2_m16n8k32: return "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32";
        case MmaKind::e4m3_e5m2_m16n8k32: return "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32";
        case MmaKind::s8_m16n8k32: return "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32";
        case MmaKind::f64_m8n8k4: return "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64";
    }
    return "";
}

// The operand type of A and B (of A where they differ).
constexpr DType operand_type(MmaKind kind) {
    switch (kind) {
        case MmaKind::f16_m16n8k16: return DType::f16;
        case MmaKind::bf16_m16n8k16: return DType::bf16;
        case MmaKind::tf32_m16n8k8: return DType::tf32;
        case MmaKind::e4m3_m16n8k32: return DType::e4m3;
        case MmaKind::e5m2_m16n8k32: return DType::e5m2;
        case MmaKind::e4m3_e5m2_m16n8k32: return DType::e4m3;
        case MmaKind::s8_m16n8k32: return DType::i8;
        case MmaKind::f64_m8n8k4: return DType::f64;
    }
    return DType::f32;
}

// Compute capability x10 the instruction needs (PTX ISA target requirements).
constexpr int min_cc(MmaKind kind) {
    switch (kind) {
        case MmaKind::e4m3_m16n8k32:
        case MmaKind::e5m2_m16n8k32:
        case MmaKind::e4m3_e5m2_m16n8k32: return 89;
        default: return 80;
    }
}

enum class Operand : std::uint8_t { a, b, cd };

struct Coord {
    int row, col;
    constexpr bool operator==(const Coord&) const = default;
};

// Element i of `lane`'s fragment of operand `op` is element (row, col) of the
// M x K matrix A, the K x N matrix B, or the M x N matrices C and D.
constexpr Coord doc_coord(MmaKind kind, Operand op, int lane, int i) {
    const int g = lane >> 2;  // groupID
    const int t = lane & 3;   // threadID_in_group
    switch (kind) {
        case MmaKind::f16_m16n8k16:
        case MmaKind::bf16_m16n8k16:
            if (op == Operand::a) return {g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2)};
            if (op == Operand::b) return {2 * t + (i & 1) + 8 * (i >> 1), g};
            return {g + 8 * (i >> 1), 2 * t + (i & 1)};
        case MmaKind::tf32_m16n8k8:
            if (op == Operand::a) return {g + 8 * (i & 1), t + 4 * (i >> 1)};
            if (op == Operand::b) return {t + 4 * i, g};
            return {g + 8 * (i >> 1), 2 * t + (i & 1)};
        case MmaKind::e4m3_m16n8k32:
        case MmaKind::e5m2_m16n8k32:
        case MmaKind::e4m3_e5m2_m16n8k32:
        case MmaKind::s8_m16n8k32:
            if (op == Operand::a) return {g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3)};
            if (op == Operand::b) return {4 * t + (i & 3) + 16 * (i >> 2), g};
            return {g + 8 * (i >> 1), 2 * t + (i & 1)};
        case MmaKind::f64_m8n8k4:
            if (op == Operand::a) return {g, t};
            if (op == Operand::b) return {t, g};
            return {g, 2 * t + i};
    }
    return {0, 0};
}

// The documented formulas as text, for the findings' detail.
inline std::string doc_formula(MmaKind kind) {
    const std::string gt = "g = lane>>2, t = lane&3; ";
    switch (kind) {
        case MmaKind::f16_m16n8k16:
        case MmaKind::bf16_m16n8k16:
            return gt +
                   "A[i]: (g + 8*((i>>1)&1), 2t + (i&1) + 8*(i>>2)); B[i]: (2t + (i&1) + 8*(i>>1), g); "
                   "C/D[i]: (g + 8*(i>>1), 2t + (i&1))";
        case MmaKind::tf32_m16n8k8:
            return gt + "A[i]: (g + 8*(i&1), t + 4*(i>>1)); B[i]: (t + 4i, g); C/D[i]: (g + 8*(i>>1), 2t + (i&1))";
        case MmaKind::e4m3_m16n8k32:
        case MmaKind::e5m2_m16n8k32:
        case MmaKind::e4m3_e5m2_m16n8k32:
        case MmaKind::s8_m16n8k32:
            return gt +
                   "A[i]: (g + 8*((i>>2)&1), 4t + (i&3) + 16*(i>>3)); B[i]: (4t + (i&3) + 16*(i>>2), g); "
                   "C/D[i]: (g + 8*(i>>1), 2t + (i&1))";
        case MmaKind::f64_m8n8k4: return gt + "A: (g, t); B: (t, g); C/D[i]: (g, 2t + i)";
    }
    return "";
}

// wgmma m64nNk* accumulator: register i of thread `tid` (0..127) of the
// warpgroup holds D(row, col); N/2 registers per thread.
constexpr Coord wgmma_d_coord(int tid, int i) {
    const int w = tid >> 5;
    const int lane = tid & 31;
    return {16 * w + (lane >> 2) + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * (lane & 3) + (i & 1)};
}

// Byte offset of element (row, k) of a rows x K tile in shared memory in
// wgmma's no-swizzle K-major canonical layout, ((8,m),(T,2k)):((1T,SBO),(1,LBO))
// (PTX ISA 9.0, "Shared Memory Matrix Layout", canonical layouts): core
// matrices of 8 rows x 16 bytes, each contiguous; the probes put the 16-byte
// K chunks of all rows one after another, so LBO = rows * 16 bytes and SBO =
// 128 bytes. rows is a multiple of 8.
constexpr unsigned kmajor_offset(int row, int k, int rows, int elem_bytes) {
    const int chunk_elems = 16 / elem_bytes;
    return unsigned((k / chunk_elems) * rows * 16 + (row / 8) * 128 + (row % 8) * 16 + (k % chunk_elems) * elem_bytes);
}

inline std::string wgmma_d_formula() {
    return "w = tid>>5, g = (tid&31)>>2, t = tid&3; D[i]: (16w + g + 8*((i>>1)&1), 8*(i>>2) + 2t + (i&1))";
}

// ---- element encoding (host) -------------------------------------------------------------

// The bits of value v in the instruction's A/B element type; throws when v is
// not exactly representable (the probes only ever feed exact values).
inline std::uint64_t encode_element(MmaKind kind, double v) {
    const auto need_float = [&] {
        const float f = static_cast<float>(v);
        if (static_cast<double>(f) != v) throw std::invalid_argument("value not representable in fp32");
        return f;
    };
    std::uint64_t bits = 0;
    double back = 0;
    switch (kind) {
        case MmaKind::f16_m16n8k16:
            bits = f32_to_f16(need_float());
            back = f16_to_f32(std::uint16_t(bits));
            break;
        case MmaKind::bf16_m16n8k16:
            bits = f32_to_bf16(need_float());
            back = bf16_to_f32(std::uint16_t(bits));
            break;
        case MmaKind::tf32_m16n8k8: {
            const float f = f32_to_tf32(need_float());
            bits = std::bit_cast<std::uint32_t>(f);
            back = f;
            break;
        }
        case MmaKind::e4m3_m16n8k32:
        case MmaKind::e4m3_e5m2_m16n8k32:  // A's type
            bits = f32_to_e4m3(need_float(), Overflow::saturate);
            back = e4m3_to_f32(std::uint8_t(bits));
            break;
        case MmaKind::e5m2_m16n8k32:
            bits = f32_to_e5m2(need_float(), Overflow::saturate);
            back = e5m2_to_f32(std::uint8_t(bits));
            break;
        case MmaKind::s8_m16n8k32:
            if (v != std::floor(v) || v < -128 || v > 127) throw std::invalid_argument("value not an s8");
            bits = static_cast<std::uint8_t>(static_cast<std::int8_t>(v));
            back = v;
            break;
        case MmaKind::f64_m8n8k4:
            bits = std::bit_cast<std::uint64_t>(v);
            back = v;
            break;
    }
    if (back != v) throw std::invalid_argument("value not representable in " + std::string(name(operand_type(kind))));
    return bits;
}

// Packs, for every lane, the elements of its fragment of `op` into 32-bit
// words, low element in the low bits (PTX: "elements (low to high)").
// value(row, col) gives the matrix element. Result: [lane][word].
inline std::vector<std::uint32_t> pack_fragments(MmaKind kind, Operand op,
                                                 const std::function<double(int, int)>& value) {
    const MmaShape s = shape_of(kind);
    const int elems = op == Operand::a ? s.a_elems : s.b_elems;
    const int words = elems * s.elem_bytes / 4;
    std::vector<std::uint32_t> out(std::size_t(32) * words, 0);
    for (int lane = 0; lane < 32; ++lane) {
        std::uint32_t* w = out.data() + std::size_t(lane) * words;
        for (int i = 0; i < elems; ++i) {
            const Coord c = doc_coord(kind, op, lane, i);
            const std::uint64_t bits = encode_element(kind, value(c.row, c.col));
            const int byte = i * s.elem_bytes;
            if (s.elem_bytes == 8) {
                w[byte / 4] = static_cast<std::uint32_t>(bits);
                w[byte / 4 + 1] = static_cast<std::uint32_t>(bits >> 32);
            } else {
                w[byte / 4] |= static_cast<std::uint32_t>(bits) << (8 * (byte % 4));
            }
        }
    }
    return out;
}

// ---- the layout probe's experiments --------------------------------------------------------
//
// A holds, in every (lane, element) slot, a small "digit" of that slot; B is
// one-hot (a single 1 in one (lane, element) slot); C is zero. Every output
// element is then either zero or exactly one A element times 1, so each D
// register names the A slot that landed there. Three variants carry the
// digits 1 + groupID, 1 + threadID_in_group and 1 + element index (all <= 16,
// exact in every element type, e4m3 included), which together identify the
// A slot. Running this for every B slot records the whole relation
// "A slot x B slot -> D slot (or nothing)", which is everything a program can
// observe of the three layouts; it is compared, pair by pair, with what the
// documented formulas predict.

constexpr int layout_variants = 3;

constexpr int layout_digit(int variant, int lane, int i) {
    return 1 + (variant == 0 ? (lane >> 2) : variant == 1 ? (lane & 3) : i);
}

constexpr int layout_experiments(MmaKind kind) { return layout_variants * 32 * shape_of(kind).b_elems; }

// Inputs of experiment e as per-slot values: [lane][element].
struct LayoutInputs {
    std::vector<double> a;  // 32 x a_elems
    std::vector<double> b;  // 32 x b_elems
};

inline LayoutInputs layout_inputs(MmaKind kind, int e) {
    const MmaShape s = shape_of(kind);
    const int variant = e / (32 * s.b_elems);
    const int b_slot = e % (32 * s.b_elems);
    LayoutInputs in;
    in.a.resize(std::size_t(32) * s.a_elems);
    in.b.assign(std::size_t(32) * s.b_elems, 0.0);
    for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < s.a_elems; ++i) in.a[std::size_t(lane) * s.a_elems + i] = layout_digit(variant, lane, i);
    in.b[std::size_t(b_slot)] = 1.0;
    return in;
}

// Packs per-slot values into the words the raw-register kernel loads.
inline std::vector<std::uint32_t> pack_slots(MmaKind kind, Operand op, const std::vector<double>& slots) {
    const MmaShape s = shape_of(kind);
    const int elems = op == Operand::a ? s.a_elems : s.b_elems;
    const int words = elems * s.elem_bytes / 4;
    std::vector<std::uint32_t> out(std::size_t(32) * words, 0);
    for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < elems; ++i) {
            const std::uint64_t bits = encode_element(kind, slots[std::size_t(lane) * elems + i]);
            const int byte = i * s.elem_bytes;
            std::uint32_t* w = out.data() + std::size_t(lane) * words;
            if (s.elem_bytes == 8) {
                w[byte / 4] = static_cast<std::uint32_t>(bits);
                w[byte / 4 + 1] = static_cast<std::uint32_t>(bits >> 32);
            } else {
                w[byte / 4] |= static_cast<std::uint32_t>(bits) << (8 * (byte % 4));
            }
        }
    return out;
}

using CoordMap = std::function<Coord(int lane, int i)>;

struct FragmentMaps {
    CoordMap a, b, cd;
};

inline FragmentMaps documented_maps(MmaKind kind) {
    return {[kind](int l, int i) { return doc_coord(kind, Operand::a, l, i); },
            [kind](int l, int i) { return doc_coord(kind, Operand::b, l, i); },
            [kind](int l, int i) { return doc_coord(kind, Operand::cd, l, i); }};
}

// What an mma whose fragments follow `maps` returns for per-slot inputs:
// D = A * B + C, as per-slot values [lane][d element]. Float64, exact for the
// probe's inputs. This is the host's expectation (with the documented maps)
// and, in the tests, a stand-in device (with altered maps).
inline std::vector<double> simulate_mma(MmaKind kind, const FragmentMaps& maps, const std::vector<double>& a_slots,
                                        const std::vector<double>& b_slots, const std::vector<double>& c_slots) {
    const MmaShape s = shape_of(kind);
    std::vector<double> a(std::size_t(s.m) * s.k, 0.0), b(std::size_t(s.k) * s.n, 0.0), c(std::size_t(s.m) * s.n, 0.0);
    for (int lane = 0; lane < 32; ++lane) {
        for (int i = 0; i < s.a_elems; ++i) {
            const Coord p = maps.a(lane, i);
            a[std::size_t(p.row) * s.k + p.col] = a_slots[std::size_t(lane) * s.a_elems + i];
        }
        for (int i = 0; i < s.b_elems; ++i) {
            const Coord p = maps.b(lane, i);
            b[std::size_t(p.row) * s.n + p.col] = b_slots[std::size_t(lane) * s.b_elems + i];
        }
        for (int i = 0; i < s.d_elems; ++i) {
            const Coord p = maps.cd(lane, i);
            c[std::size_t(p.row) * s.n + p.col] = c_slots[std::size_t(lane) * s.d_elems + i];
        }
    }
    std::vector<double> d_slots(std::size_t(32) * s.d_elems);
    for (int lane = 0; lane < 32; ++lane)
        for (int i = 0; i < s.d_elems; ++i) {
            const Coord p = maps.cd(lane, i);
            double acc = c[std::size_t(p.row) * s.n + p.col];
            for (int k = 0; k < s.k; ++k) acc += a[std::size_t(p.row) * s.k + k] * b[std::size_t(k) * s.n + p.col];
            d_slots[std::size_t(lane) * s.d_elems + i] = acc;
        }
    return d_slots;
}

// The verdict on all experiments of one instruction. `device` holds every
// experiment's D slots: [experiment][lane][d element].
struct LayoutVerdict {
    long slots_checked = 0;   // D values compared with the float64 expectation
    long mismatches = 0;      // ... that differed
    long pairs_observed = 0;  // (A slot, B slot) pairs whose product the device placed in a D slot
    long pairs_expected = 0;  // ... that the documented layouts predict
    std::string first_mismatch;
    bool ok() const { return mismatches == 0 && pairs_observed == pairs_expected && slots_checked > 0; }
};

inline LayoutVerdict judge_layout(MmaKind kind, const std::vector<double>& device) {
    const MmaShape s = shape_of(kind);
    const int n_exp = layout_experiments(kind);
    if (device.size() != std::size_t(n_exp) * 32 * s.d_elems)
        throw std::invalid_argument("judge_layout: wrong number of device values");
    const FragmentMaps doc = documented_maps(kind);
    const std::vector<double> zero_c(std::size_t(32) * s.d_elems, 0.0);
    LayoutVerdict v;
    for (int e = 0; e < n_exp; ++e) {
        const LayoutInputs in = layout_inputs(kind, e);
        const std::vector<double> want = simulate_mma(kind, doc, in.a, in.b, zero_c);
        const bool count_pairs = e < 32 * s.b_elems;  // the first variant: one product per nonzero slot
        for (std::size_t j = 0; j < want.size(); ++j) {
            const double got = device[std::size_t(e) * want.size() + j];
            ++v.slots_checked;
            if (count_pairs) {
                v.pairs_observed += got != 0.0;
                v.pairs_expected += want[j] != 0.0;
            }
            if (got != want[j]) {
                if (v.mismatches == 0) {
                    const int lane = int(j) / s.d_elems;
                    const int i = int(j) % s.d_elems;
                    v.first_mismatch = "experiment " + std::to_string(e) + ", lane " + std::to_string(lane) +
                                       ", D element " + std::to_string(i) + ": device " + std::to_string(got) +
                                       ", documented layout predicts " + std::to_string(want[j]);
                }
                ++v.mismatches;
            }
        }
    }
    return v;
}

// Recovers, from the device's answers, which A slot fed each D slot in each
// one-hot experiment (-1: none; -2: the three digits do not name a slot).
// Result: [b slot][lane][d element].
inline std::vector<int> recover_a_slots(MmaKind kind, const std::vector<double>& device) {
    const MmaShape s = shape_of(kind);
    const std::size_t per_exp = std::size_t(32) * s.d_elems;
    const int b_slots = 32 * s.b_elems;
    std::vector<int> out(std::size_t(b_slots) * per_exp, -1);
    for (int b = 0; b < b_slots; ++b)
        for (std::size_t j = 0; j < per_exp; ++j) {
            std::array<double, layout_variants> d{};
            int nonzero = 0;
            for (int var = 0; var < layout_variants; ++var) {
                d[var] = device[(std::size_t(var) * b_slots + b) * per_exp + j];
                nonzero += d[var] != 0.0;
            }
            int& slot = out[std::size_t(b) * per_exp + j];
            if (nonzero == 0) continue;
            const bool integral = d[0] == std::floor(d[0]) && d[1] == std::floor(d[1]) && d[2] == std::floor(d[2]);
            const int g = int(d[0]) - 1, t = int(d[1]) - 1, i = int(d[2]) - 1;
            if (nonzero != layout_variants || !integral || g < 0 || g > 7 || t < 0 || t > 3 || i < 0 || i >= s.a_elems)
                slot = -2;
            else
                slot = (4 * g + t) * s.a_elems + i;
        }
    return out;
}

// ---- wgmma accumulator layout ----------------------------------------------------------------
//
// Two runs with operands in shared memory (no swizzle): A(m, k) = m + 1 with
// B = 1 gives D(m, n) = 16 (m + 1); A = 1 with B(k, n) = n + 1 gives
// D(m, n) = 16 (n + 1). Every value is an exact bf16 (n + 1 <= 256) and an
// exact fp32 sum, so each register names its row and its column.

struct WgmmaLayoutVerdict {
    long registers = 0;
    long mismatches = 0;     // registers whose (row, col) differs from the documented one
    long undecodable = 0;    // values that are not 16 * (index + 1) in range
    bool bijective = false;  // every (row, col) held by exactly one register
    std::string first_mismatch;
    bool ok() const { return registers > 0 && mismatches == 0 && undecodable == 0 && bijective; }
};

// rows_run / cols_run: [tid 0..127][register 0..N/2-1] as the device dumped them.
inline WgmmaLayoutVerdict judge_wgmma_layout(int n, const std::vector<double>& rows_run,
                                             const std::vector<double>& cols_run) {
    const int regs = n / 2;
    if (rows_run.size() != std::size_t(128) * regs || cols_run.size() != rows_run.size())
        throw std::invalid_argument("judge_wgmma_layout: wrong number of values");
    WgmmaLayoutVerdict v;
    std::vector<int> seen(std::size_t(64) * n, 0);
    for (int tid = 0; tid < 128; ++tid)
        for (int i = 0; i < regs; ++i) {
            ++v.registers;
            const double r = rows_run[std::size_t(tid) * regs + i] / 16.0 - 1.0;
            const double c = cols_run[std::size_t(tid) * regs + i] / 16.0 - 1.0;
            if (r != std::floor(r) || c != std::floor(c) || r < 0 || r >= 64 || c < 0 || c >= n) {
                ++v.undecodable;
                continue;
            }
            ++seen[std::size_t(r) * n + std::size_t(c)];
            const Coord want = wgmma_d_coord(tid, i);
            if (want.row != int(r) || want.col != int(c)) {
                if (v.mismatches == 0)
                    v.first_mismatch = "thread " + std::to_string(tid) + " register " + std::to_string(i) +
                                       " holds D(" + std::to_string(int(r)) + ", " + std::to_string(int(c)) +
                                       "), documented D(" + std::to_string(want.row) + ", " + std::to_string(want.col) +
                                       ")";
                ++v.mismatches;
            }
        }
    v.bijective = true;
    for (int x : seen) v.bijective = v.bijective && x == 1;
    return v;
}

}  // namespace rigel::probes
