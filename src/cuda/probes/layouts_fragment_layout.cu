// Probe mma_fragment_layout: which lane and register of a warp-level matrix
// instruction holds which element of A, B, C and D, recovered from the
// device's own answers and set beside the PTX ISA's formulas.
//
// mma.sync: the kernel moves raw register words in and out; it never places
// an element itself, so nothing of the documented layout is assumed on the
// device. A carries a small digit per (lane, element) slot and B is one-hot;
// every D register then holds zero or exactly one A slot's digit, and three
// digit variants name that slot. Over all B slots this gives the full relation
// "A slot x B slot -> D slot", everything a program can observe of the three
// layouts; each of its values is compared with the float64 result the
// documented formulas predict from the same bytes. A fourth experiment (A = B
// = 0, distinct C) checks that C and D share one layout.
//
// wgmma (sm_90a): the operands sit in shared memory, in the documented
// no-swizzle K-major layout, with A(m, k) = m + 1 (B = 1) or B(k, n) = n + 1
// (A = 1); every accumulator register then names its row or its column.
#include <bit>
#include <optional>
#include <string>
#include <vector>

#include "cuda/probes/mma_sync_ptx.cuh"
#include "cuda/probes/probe_device_util.cuh"
#include "cuda/probes/wgmma_ptx.cuh"
#include "probes/layouts/fragment_maps.hpp"

namespace rigel::probes {
namespace {

constexpr const char* probe_name = "mma_fragment_layout";
constexpr int warps_per_block = 4;

// One experiment per warp: registers in from a/b/c ([experiment][lane][word]),
// one mma, registers out to d. `built` reports whether the instruction exists
// in this binary for this device.
template <MmaKind K>
__global__ void __launch_bounds__(warps_per_block * 32)
    raw_mma_kernel(const std::uint32_t* a, const std::uint32_t* b, const std::uint32_t* c, std::uint32_t* d,
                   int experiments, int* built) {
    constexpr MmaShape s = shape_of(K);
    constexpr int aw = a_words(K), bw = b_words(K), dw = d_words(K);
    constexpr int acc_w = s.acc_bytes / 4;
    if (blockIdx.x == 0 && threadIdx.x == 0) *built = mma_compiled(K) ? 1 : 0;
    if constexpr (mma_compiled(K)) {
        const int lane = threadIdx.x & 31;
        const int e = blockIdx.x * warps_per_block + static_cast<int>(threadIdx.x >> 5);
        if (e >= experiments) return;  // a whole warp leaves together: mma.sync needs all 32 lanes
        const std::size_t slot = std::size_t(e) * 32 + lane;
        std::uint32_t ar[aw], br[bw];
        mma_acc_t<K> acc[s.d_elems];
#pragma unroll
        for (int i = 0; i < aw; ++i) ar[i] = a[slot * aw + i];
#pragma unroll
        for (int i = 0; i < bw; ++i) br[i] = b[slot * bw + i];
#pragma unroll
        for (int i = 0; i < s.d_elems; ++i) acc_from_words(acc[i], c + slot * dw + i * acc_w);
        mma<K>(acc, ar, br);
#pragma unroll
        for (int i = 0; i < s.d_elems; ++i) acc_to_words(acc[i], d + slot * dw + i * acc_w);
    }
}

// Two experiments (blockIdx.x 0: rows, 1: columns) of one m64nNk16 bf16
// wgmma; A: [2][64 x 16], B: [2][N x 16] (K-major, bf16 bits); the
// accumulator registers come out raw: [2][128][N/2].
template <int N>
__global__ void __launch_bounds__(128)
    wgmma_layout_kernel(const std::uint16_t* a, const std::uint16_t* b, float* d, int* built) {
    constexpr int k = 16;
    __shared__ alignas(128) std::uint8_t sa[64 * k * 2];
    __shared__ alignas(128) std::uint8_t sb[N * k * 2];
    if (blockIdx.x == 0 && threadIdx.x == 0) *built = wgmma_compiled() ? 1 : 0;
    if constexpr (wgmma_compiled()) {
        const int tid = threadIdx.x;
        const int e = blockIdx.x;
        for (int i = tid; i < 64 * k; i += 128)
            *reinterpret_cast<std::uint16_t*>(sa + kmajor_offset(i / k, i % k, 64, 2)) = a[e * 64 * k + i];
        for (int i = tid; i < N * k; i += 128)
            *reinterpret_cast<std::uint16_t*>(sb + kmajor_offset(i / k, i % k, N, 2)) = b[e * N * k + i];
        fence_proxy_async_smem();
        __syncthreads();
        float acc[N / 2];
#pragma unroll
        for (int i = 0; i < N / 2; ++i) acc[i] = 0.0f;
        wgmma_fence();
        wgmma<DType::bf16, N>(acc, smem_desc(sa, 64 * 16, 128), smem_desc(sb, N * 16, 128), 1u);
        wgmma_commit();
        wgmma_wait_all();
#pragma unroll
        for (int i = 0; i < N / 2; ++i) {
            fence_operand(acc[i]);
            d[(std::size_t(e) * 128 + tid) * (N / 2) + i] = acc[i];
        }
    }
}

std::string doc_source_mma(MmaKind kind) {
    const MmaShape s = shape_of(kind);
    return "PTX ISA 9.0, 'Matrix Fragments for mma.m" + std::to_string(s.m) + "n" + std::to_string(s.n) + "k" +
           std::to_string(s.k) + "' (" + std::string(name(operand_type(kind))) + ")";
}

// Accumulator words back to numbers (f32, s32 or f64 per the instruction).
std::vector<double> words_to_values(MmaKind kind, const std::vector<std::uint32_t>& w) {
    const MmaShape s = shape_of(kind);
    std::vector<double> v;
    if (s.acc_bytes == 8) {
        v.resize(w.size() / 2);
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = std::bit_cast<double>(std::uint64_t(w[2 * i]) | (std::uint64_t(w[2 * i + 1]) << 32));
    } else {
        v.resize(w.size());
        for (std::size_t i = 0; i < w.size(); ++i)
            v[i] = kind == MmaKind::s8_m16n8k32 ? double(static_cast<std::int32_t>(w[i]))
                                                : double(std::bit_cast<float>(w[i]));
    }
    return v;
}

std::vector<std::uint32_t> values_to_acc_words(MmaKind kind, const std::vector<double>& v) {
    const MmaShape s = shape_of(kind);
    std::vector<std::uint32_t> w;
    for (double x : v) {
        if (s.acc_bytes == 8) {
            const auto bits = std::bit_cast<std::uint64_t>(x);
            w.push_back(static_cast<std::uint32_t>(bits));
            w.push_back(static_cast<std::uint32_t>(bits >> 32));
        } else if (kind == MmaKind::s8_m16n8k32) {
            w.push_back(static_cast<std::uint32_t>(static_cast<std::int32_t>(x)));
        } else {
            w.push_back(std::bit_cast<std::uint32_t>(static_cast<float>(x)));
        }
    }
    return w;
}

// Runs experiments (per-slot A, B, C values) through the raw kernel; returns
// the D slots of every experiment, or nothing when the binary lacks the code.
template <MmaKind K>
std::optional<std::vector<double>> run_raw(const std::vector<LayoutInputs>& inputs,
                                           const std::vector<std::vector<double>>& c_slots) {
    if (!kernel_has_image(raw_mma_kernel<K>)) return std::nullopt;
    const int n = static_cast<int>(inputs.size());
    std::vector<std::uint32_t> a, b, c;
    for (int e = 0; e < n; ++e) {
        const auto aw = pack_slots(K, Operand::a, inputs[e].a);
        const auto bw = pack_slots(K, Operand::b, inputs[e].b);
        const auto cw = values_to_acc_words(K, c_slots[e]);
        a.insert(a.end(), aw.begin(), aw.end());
        b.insert(b.end(), bw.begin(), bw.end());
        c.insert(c.end(), cw.begin(), cw.end());
    }
    DeviceArray<std::uint32_t> da(a), db(b), dc(c), dd(c.size());
    DeviceArray<int> built(1);
    dd.fill_bytes(0xFF);  // poison: an unwritten register cannot pass for a result
    const int blocks = (n + warps_per_block - 1) / warps_per_block;
    raw_mma_kernel<K><<<blocks, warps_per_block * 32>>>(da.get(), db.get(), dc.get(), dd.get(), n, built.get());
    RIGEL_CUDA_CHECK_LAUNCH();
    RIGEL_CUDA_CHECK(cudaDeviceSynchronize());
    if (built.download()[0] != 1) return std::nullopt;
    return words_to_values(K, dd.download());
}

template <MmaKind K>
void probe_mma(const DeviceFacts& dev, std::vector<Finding>& out) {
    constexpr MmaShape s = shape_of(K);
    const std::string path = ptx_name(K);
    const std::string dtype(name(operand_type(K)));
    const std::string q_abd = "lane/register -> (row, col) of A, B and D";
    const std::string q_cd = "C fragment layout equals D fragment layout";
    if (dev.cc < min_cc(K)) {
        const std::string why =
            "needs compute capability " + std::to_string(min_cc(K)) + ", device has " + std::to_string(dev.cc);
        out.push_back(not_available(probe_name, path, dtype, q_abd, why));
        out.push_back(not_available(probe_name, path, dtype, q_cd, why));
        return;
    }
    // The one-hot experiments.
    std::vector<LayoutInputs> inputs;
    std::vector<std::vector<double>> zeros;
    const std::vector<double> zero_c(std::size_t(32) * s.d_elems, 0.0);
    for (int e = 0; e < layout_experiments(K); ++e) {
        inputs.push_back(layout_inputs(K, e));
        zeros.push_back(zero_c);
    }
    // The C experiment: A = B = 0, C slot (lane, i) = 1 + lane * d_elems + i.
    LayoutInputs c_in;
    c_in.a.assign(std::size_t(32) * s.a_elems, 0.0);
    c_in.b.assign(std::size_t(32) * s.b_elems, 0.0);
    std::vector<double> c_ids(std::size_t(32) * s.d_elems);
    for (std::size_t j = 0; j < c_ids.size(); ++j) c_ids[j] = 1.0 + double(j);
    inputs.push_back(c_in);
    zeros.push_back(c_ids);

    const auto device = run_raw<K>(inputs, zeros);
    if (!device) {
        const std::string why = "this binary has no code for the instruction on this device (built without it)";
        out.push_back(not_available(probe_name, path, dtype, q_abd, why));
        out.push_back(not_available(probe_name, path, dtype, q_cd, why));
        return;
    }
    const std::size_t per_exp = std::size_t(32) * s.d_elems;
    const std::vector<double> onehot(device->begin(), device->end() - static_cast<std::ptrdiff_t>(per_exp));
    const LayoutVerdict v = judge_layout(K, onehot);

    Finding f = make_finding(probe_name, path, dtype, q_abd);
    f.verified = true;
    f.expected = "documented layout: " + std::to_string(v.pairs_expected) + " (A slot, B slot) products placed";
    if (v.ok()) {
        f.measured = "as documented: " + std::to_string(v.slots_checked) + "/" + std::to_string(v.slots_checked) +
                     " D values equal the float64 prediction; " + std::to_string(v.pairs_observed) + " products placed";
        f.relation = DocRelation::confirms;
    } else {
        f.measured = std::to_string(v.mismatches) + " of " + std::to_string(v.slots_checked) +
                     " D values differ from the documented layout's prediction; " + std::to_string(v.pairs_observed) +
                     " products placed";
        f.relation = DocRelation::contradicts;
    }
    f.doc_statement = "the row and column of each fragment element follow the formulas given per matrix";
    f.doc_source = doc_source_mma(K);
    f.detail = "verified for all 32 lanes x " + std::to_string(s.a_elems) + " A, " + std::to_string(s.b_elems) +
               " B, " + std::to_string(s.d_elems) + " D elements (" + std::to_string(layout_experiments(K)) +
               " one-hot experiments): " + doc_formula(K) +
               ". Matrix coordinates are fixed only up to relabelings no program can observe; the relation "
               "A slot x B slot -> D slot is what the hardware fixes, and it was compared in full." +
               (v.first_mismatch.empty() ? "" : " First difference: " + v.first_mismatch);
    out.push_back(f);

    Finding c = make_finding(probe_name, path, dtype, q_cd);
    c.verified = true;
    long c_bad = 0;
    for (std::size_t j = 0; j < per_exp; ++j) c_bad += (*device)[device->size() - per_exp + j] != c_ids[j];
    c.expected = "D slot = C slot for all " + std::to_string(per_exp) + " registers (A = B = 0)";
    c.measured = c_bad == 0 ? "equal in all " + std::to_string(per_exp) + " registers"
                            : std::to_string(c_bad) + " of " + std::to_string(per_exp) + " registers differ";
    c.relation = c_bad == 0 ? DocRelation::confirms : DocRelation::contradicts;
    c.doc_statement = "C and D have the same fragment layout";
    c.doc_source = doc_source_mma(K);
    c.detail = "C register i of lane l carried 1 + l*" + std::to_string(s.d_elems) + " + i";
    out.push_back(c);
}

template <int N>
void probe_wgmma_n(std::vector<Finding>& out) {
    const std::string path = "wgmma.mma_async.sync.aligned.m64n" + std::to_string(N) + "k16.f32.bf16.bf16";
    const std::string q = "thread/register -> (row, col) of the accumulator D";
    if (!kernel_has_image(wgmma_layout_kernel<N>)) {
        out.push_back(not_available(probe_name, path, "bf16", q, "this binary has no sm_90a code for this device"));
        return;
    }
    constexpr int k = 16;
    std::vector<std::uint16_t> a(2 * 64 * k), b(std::size_t(2) * N * k);
    for (int m = 0; m < 64; ++m)
        for (int kk = 0; kk < k; ++kk) {
            a[m * k + kk] = f32_to_bf16(float(m + 1));   // rows run
            a[64 * k + m * k + kk] = f32_to_bf16(1.0f);  // columns run
        }
    for (int n = 0; n < N; ++n)
        for (int kk = 0; kk < k; ++kk) {
            b[n * k + kk] = f32_to_bf16(1.0f);
            b[std::size_t(N) * k + n * k + kk] = f32_to_bf16(float(n + 1));
        }
    DeviceArray<std::uint16_t> da(a), db(b);
    DeviceArray<float> dd(std::size_t(2) * 128 * (N / 2));
    DeviceArray<int> built(1);
    dd.fill_bytes(0xFF);
    wgmma_layout_kernel<N><<<2, 128>>>(da.get(), db.get(), dd.get(), built.get());
    RIGEL_CUDA_CHECK_LAUNCH();
    RIGEL_CUDA_CHECK(cudaDeviceSynchronize());
    if (built.download()[0] != 1) {
        out.push_back(not_available(probe_name, path, "bf16", q, "this binary was built without sm_90a (wgmma)"));
        return;
    }
    const std::vector<float> d = dd.download();
    const std::size_t half = std::size_t(128) * (N / 2);
    const std::vector<double> rows(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(half));
    const std::vector<double> cols(d.begin() + static_cast<std::ptrdiff_t>(half), d.end());
    const WgmmaLayoutVerdict v = judge_wgmma_layout(N, rows, cols);

    Finding f = make_finding(probe_name, path, "bf16", q);
    f.verified = true;
    f.expected = "documented layout for all " + std::to_string(v.registers) + " registers";
    if (v.ok()) {
        f.measured = "as documented: " + std::to_string(v.registers) + "/" + std::to_string(v.registers) +
                     " registers, each (row, col) held once";
        f.relation = DocRelation::confirms;
    } else {
        f.measured = std::to_string(v.mismatches) + " registers elsewhere, " + std::to_string(v.undecodable) +
                     " undecodable" + (v.bijective ? "" : ", not one register per element");
        f.relation = DocRelation::contradicts;
    }
    f.doc_statement = "accumulator fragment layout of wgmma .m64nNk16 with .f32 D";
    f.doc_source = "PTX ISA 9.0, 'Asynchronous Warpgroup Level Matrix Register Fragments' (wgmma m64nNk16, D)";
    f.detail = "verified for 128 threads x " + std::to_string(N / 2) + " registers: " + wgmma_d_formula() +
               ". Operands in shared memory, no swizzle, K-major (LBO = rows*16 B, SBO = 128 B); A(m,k) = m+1 "
               "or B(k,n) = n+1 make D = 16*(index+1)." +
               (v.first_mismatch.empty() ? "" : " First difference: " + v.first_mismatch) +
               (v.undecodable > 0 ? " Undecodable values mean the operands were not read as laid out." : "");
    out.push_back(f);
}

}  // namespace

std::vector<Finding> run_mma_fragment_layout(const ProbeContext& ctx) {
    const DeviceFacts dev = device_facts();
    std::vector<Finding> out;
    report(ctx, "mma.sync fragment layouts");
    probe_mma<MmaKind::f16_m16n8k16>(dev, out);
    probe_mma<MmaKind::bf16_m16n8k16>(dev, out);
    probe_mma<MmaKind::tf32_m16n8k8>(dev, out);
    probe_mma<MmaKind::e4m3_m16n8k32>(dev, out);
    probe_mma<MmaKind::s8_m16n8k32>(dev, out);
    probe_mma<MmaKind::f64_m8n8k4>(dev, out);

    report(ctx, "wgmma accumulator layouts");
    if (dev.cc != 90) {
        const std::string why =
            "wgmma exists on compute capability 9.0 (sm_90a) only; device has " + std::to_string(dev.cc);
        for (int n : {8, 16, 32, 64, 128, 256})
            out.push_back(not_available(probe_name,
                                        "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k16.f32.bf16.bf16",
                                        "bf16", "thread/register -> (row, col) of the accumulator D", why));
        return out;
    }
    probe_wgmma_n<8>(out);
    probe_wgmma_n<16>(out);
    probe_wgmma_n<32>(out);
    probe_wgmma_n<64>(out);
    probe_wgmma_n<128>(out);
    probe_wgmma_n<256>(out);
    return out;
}

}  // namespace rigel::probes
