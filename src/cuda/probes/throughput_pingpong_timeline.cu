// The ping-pong timeline probe: where the cycles of the library's GEMM kernel
// go, tile by tile. The fixed ping-pong kernel (the dispatcher's choice for
// bf16 products of a few waves and more: 128 x 128 tiles, two consumers taking
// turns, 6 stages, the epilogue compiled in, TMA stores) runs with Timeline
// (src/cuda/gemm/timeline_epilogue.cuh), which reads each SM's clock at every
// tile's turn, first full stage, last issue, drain and store. From those:
//   start-up       CTA start to its first full stage;
//   first tile     its main loop's excess over the tensor cores' time;
//   period         one drain to the next (consecutive tiles of a CTA, the two
//                  consumers alternating): the tensor pipe's time a tile
//                  where nothing stalls it, against k_tiles x 512 cycles (a
//                  128 x 128 x 64 bf16 k-tile at 2048 dense FMA a clock an SM,
//                  the H100 whitepaper's figure for Hopper's tensor cores);
//   hand-off       one consumer's last issue to the other's first full stage;
//   idle           the part of a hand-off after the previous tile drained:
//                  cycles the tensor pipe had nothing queued;
//   starved        the cycles a main loop waited for stages after its first,
//                  and how many of its k-tiles found their stage not yet full
//                  (the producer or memory behind the tensor cores);
//   epilogue       drained to stored;
//   tail           the last drain to the CTA's end (the last epilogue, not
//                  hidden under another main loop).
// A CTA's cycles are exactly start-up + the first tile's main loop + its
// periods + its tail, so the busiest CTA's excess over its tiles' tensor time
// is split among those four. Each case's D is verified against float64 of the
// same bf16 inputs (src/gemm/reference.hpp) on the recorded run, and a shape
// that is a multiple of no tile runs first, fully verified.
// The pair cases run the same kernel on 2 x 1 clusters (the library's
// "fixed_pair": each CTA loads its A and half of B, multicast to both, and a
// stage is refilled once the consumers of both CTAs have released it), as
// many clusters as fit at once: where the pair loses its cycles beside the
// single CTAs. The narrow-tail cases run the library's "fixed_tail" (the last
// tile columns re-cut 104 wide where that evens out the last wave,
// gemm/narrow_tail.hpp): the busiest CTA's cycles against the uniform tiles'.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/check.cuh"
#include "cuda/gemm/fused_epilogue.cuh"
#include "cuda/gemm/timeline_epilogue.cuh"
#include "cuda/hopper/pingpong_gemm.cuh"
#include "cuda/probes/probe_device_util.cuh"
#include "gemm/narrow_tail.hpp"
#include "harness/nvml_sampler.hpp"
#include "gemm/reference.hpp"
#include "probes/finding_text.hpp"
#include "probes/probe.hpp"
#include "probes/throughput/pingpong_timeline.hpp"

namespace rigel::probes {
namespace {

using cuda::gemm_kernels::FixedEpilogue;
using cuda::gemm_kernels::FixedTailEpilogue;
using cuda::gemm_kernels::Timeline;
using timeline::quantile;
using timeline::mean;
using timeline::Summary;
using gemm::Epilogue;

constexpr const char* probe_name = "pingpong_timeline";
// The library's fixed ping-pong kernel for A stored M x K and B stored N x K (layout NT), on single CTAs
// (ClusterM 1) or pairs.
template <int ClusterM>
using Pong = cuda::sm90::PingPong<DType::bf16, 6, cuda::sm90::Major::k, cuda::sm90::Major::k, ClusterM>;
// The same on single CTAs with the narrow tail ("fixed_tail").
using PongTail = cuda::sm90::PingPong<DType::bf16, 6, cuda::sm90::Major::k, cuda::sm90::Major::k, 1, false, 128, 128,
                                      gemm::kTailTileN>;
constexpr int kTile = 128;
constexpr double kCyclesPerKTile = 512.0;  // 128 x 128 x 64 FMA at 2048 a clock
constexpr int kRecordedRuns = 5;

struct Case {
    std::int64_t m, n, k;
    Epilogue epilogue;
    bool full_verify;  // every element; else the sampled rows of reference.hpp
    int cluster_m = 1;  // 2: the pair
    // 2: the grid on half the SMs (single CTAs only): the chip then draws far from its power cap, so a cost
    // that comes and goes with power shows as a difference from the full grid's rows.
    int sm_share = 1;
    bool narrow_tail = false;  // the narrow tail's kernel (single CTAs, epilogues none and bias + GELU)
};

// The narrow tail's (Tail) as the library runs it for this layout: its narrow tiles load B through a map
// of 104-row boxes (FixedTailEpilogue).
template <Epilogue E, bool Tail = false>
using Traced =
    Timeline<std::conditional_t<Tail, FixedTailEpilogue<__nv_bfloat16, E>, FixedEpilogue<__nv_bfloat16, E>>>;

// CTAs the case launches: one a tile up to the SMs, or as many pairs as fit at once (a pair's unit
// is a tile-row pair).
template <int ClusterM>
int traced_grid(std::int64_t tiles_m, std::int64_t tiles_n, int sms) {
    if constexpr (ClusterM == 1) {
        return static_cast<int>(std::min<std::int64_t>(tiles_m * tiles_n, sms));
    } else {
        // Every epilogue's kernel has the same footprint; the library's launcher sizes its grid the same way.
        return cuda::sm90::pingpong_cluster_ctas<Pong<ClusterM>, Traced<Epilogue::none>>(
            (tiles_m + ClusterM - 1) / ClusterM * tiles_n);
    }
}

// One launch of the traced kernel on device bytes a, b, bias into d: tiles_n columns of 128-wide tiles, then
// (Tail) tail_cols columns of narrow ones.
template <int ClusterM, Epilogue E, bool Tail = false>
void launch_traced(const gemm::Desc& d, const void* a, const void* b, const void* bias, void* out,
                   std::uint64_t* events, int slots, int grid, int tiles_n, int tail_cols) {
    using Epi = Traced<E, Tail>;
    using G = std::conditional_t<Tail, PongTail, Pong<ClusterM>>;
    static_assert(Epi::kStages == G::kStages, "the library's kernel for this epilogue has 6 stages");
    typename Epi::Params p{};
    p.d = out;
    p.bias = bias;
    p.ldd = d.n;
    p.kind = E;
    p.d_type = gemm::Type::bf16;
    p.paired = true;
    p.octets = true;
    p.tma = true;
    p.map_d = cuda::sm90::make_map_128b(out, DType::bf16, d.m, d.n, d.n, 64);
    p.tail_cols = tail_cols;  // a narrow tile's last 40 columns leave through an unswizzled box (plan.cu's)
    if (tail_cols > 0)
        p.map_d_tail = cuda::sm90::make_map_128b(out, DType::bf16, d.m, d.n, d.n, 64, gemm::kTailTileN % 64);
    p.events = events;
    p.slots = slots;
    const CUtensorMap map_a = cuda::sm90::make_map_128b(a, DType::bf16, d.m, d.k, d.k, kTile);
    // A pair's CTA loads half of B's tile (plan.cu's boxes: the tile's columns over the cluster's CTAs).
    const CUtensorMap map_b = cuda::sm90::make_map_128b(b, DType::bf16, d.n, d.k, d.k, kTile / ClusterM);
    if constexpr (Tail) p.map_b_tail = cuda::sm90::make_map_128b(b, DType::bf16, d.n, d.k, d.k, gemm::kTailTileN);
    constexpr int smem = cuda::sm90::pingpong_smem_bytes<G, Epi>;
    const auto kernel = cuda::sm90::pingpong_kernel<G, Epi>;
    cuda::allow_dynamic_smem<cuda::sm90::pingpong_kernel<G, Epi>>(smem);
    const int m = static_cast<int>(d.m), n = static_cast<int>(d.n), k = static_cast<int>(d.k);
    const int tiles_m = static_cast<int>((d.m + kTile - 1) / kTile);
    if constexpr (ClusterM == 1) {
        kernel<<<grid, G::kThreads, smem>>>(map_a, map_b, p, m, n, k, tiles_m, tiles_n, G::kGroupM);
    } else {
        cudaLaunchAttribute attr{};
        const cudaLaunchConfig_t cfg = cuda::sm90::cluster_launch_config(static_cast<unsigned>(grid), G::kThreads,
                                                                         smem, nullptr, ClusterM, &attr);
        RIGEL_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, map_a, map_b, p, m, n, k, tiles_m, tiles_n, G::kGroupM));
    }
    RIGEL_CUDA_CHECK_LAUNCH();
}

template <int ClusterM>
void launch(const gemm::Desc& d, const void* a, const void* b, const void* bias, void* out, std::uint64_t* events,
            int slots, int grid, int tiles_n, int tail_cols, bool tail) {
    if constexpr (ClusterM == 1) {
        if (tail && d.epilogue == Epilogue::bias_gelu)
            return launch_traced<1, Epilogue::bias_gelu, true>(d, a, b, bias, out, events, slots, grid, tiles_n,
                                                               tail_cols);
        if (tail)
            return launch_traced<1, Epilogue::none, true>(d, a, b, bias, out, events, slots, grid, tiles_n, tail_cols);
    }
    if (d.epilogue == Epilogue::bias_gelu)
        return launch_traced<ClusterM, Epilogue::bias_gelu>(d, a, b, bias, out, events, slots, grid, tiles_n, 0);
    if constexpr (ClusterM == 1)
        if (d.epilogue == Epilogue::bias)
            return launch_traced<ClusterM, Epilogue::bias>(d, a, b, bias, out, events, slots, grid, tiles_n, 0);
    launch_traced<ClusterM, Epilogue::none>(d, a, b, bias, out, events, slots, grid, tiles_n, 0);
}

std::string cases_text(const Case& c) {
    return std::to_string(c.m) + " x " + std::to_string(c.n) + " x " + std::to_string(c.k);
}

// power: the board's mean draw while the case ran back to back (NVML), 0 where not sampled.
void add_rows(std::vector<Finding>& out, const Case& c, const Summary& s, int grid, bool verified,
              const std::string& check, const DeviceSample& power) {
    const bool pair = c.cluster_m == 2;
    const std::string path = std::string(pair ? "pingpong_kernel fixed_pair " : "pingpong_kernel fixed ") +
                             std::string(gemm::name(c.epilogue)) + " NT " + cases_text(c) +
                             (c.sm_share == 2 ? " on half the SMs" : "") +
                             (c.narrow_tail ? " with the narrow tail (fixed_tail)" : "");
    const auto row = [&](const std::string& quantity, double value, const std::string& unit, const std::string& detail,
                         const std::string& expected = "") {
        Finding f = make_finding(probe_name, path, "bf16", quantity);
        f.measured = fmt_fixed(value, 1);
        f.value = value;
        f.unit = unit;
        f.expected = expected;
        f.verified = verified;
        f.relation = DocRelation::fills_in;
        f.doc_statement = "the tensor cores' rate (twice A100's 1024 dense FP16/BF16 FMA a clock per SM); "
                          "silent on what a "
                          "kernel loses between tiles";
        f.doc_source = "NVIDIA H100 Tensor Core GPU Architecture whitepaper";
        f.detail = detail + " " + std::to_string(grid) + (pair ? " CTAs in 2 x 1 clusters. " : " CTAs. ") + check;
        f.kernel = std::string(pair            ? "pingpong_kernel<PingPong<bf16, 6, K, K, 2>"
                               : c.narrow_tail ? "pingpong_kernel<PingPong<bf16, 6, K, K, 1, false, 128, 128, 104>"
                                               : "pingpong_kernel<PingPong<bf16, 6, K, K>") +
                   (c.narrow_tail ? ", Timeline<FixedTailEpilogue<bf16, " : ", Timeline<FixedEpilogue<bf16, ") +
                   std::string(gemm::name(c.epilogue)) + ">>>";
        f.sm_clock_mhz = s.clock_mhz;
        if (power.valid) {
            f.power_w = power.power_w;
            f.power_max_w = power.power_max_w;
        }
        out.push_back(std::move(f));
    };
    const Summary::Busiest& b = s.busiest;
    const double ideal = b.tiles * s.tile_cycles;
    row("busiest CTA: cycles", b.total, "cycles",
        "start to the last consumer's end of the CTA of the most cycles, in the median of " +
            std::to_string(kRecordedRuns) + " runs (ranked by that CTA's cycles); its " + fmt_fixed(b.tiles, 0) +
            " tiles' tensor time " + fmt_fixed(ideal, 0) + " cycles" +
            (c.narrow_tail ? " (each counted 128 wide; a narrow tile's is 104 / 128 of that)." : "."),
        fmt_fixed(ideal, 0));
    row("busiest CTA: start-up", b.startup, "cycles", "CTA start to its first full stage.");
    row("busiest CTA: first tile's excess", b.first, "cycles",
        "its first tile's first full stage to its drain, less the tile's tensor time.");
    row("busiest CTA: excess between tiles", b.between, "cycles",
        "the sum over its later tiles of drain-to-drain less a tile's tensor time.");
    row("busiest CTA: tail", b.tail, "cycles", "its last drain to its end (the last epilogue).");
    row("period, median", quantile(s.period, 0.5), "cycles",
        "drain to drain of consecutive tiles of a CTA, every CTA and run; p10 " +
            fmt_fixed(quantile(s.period, 0.1), 0) +
            ", p90 " + fmt_fixed(quantile(s.period, 0.9), 0) + ", max " + fmt_fixed(quantile(s.period, 1.0), 0) + ".",
        fmt_fixed(s.tile_cycles, 0));
    row("hand-off, median", quantile(s.handoff, 0.5), "cycles",
        "one consumer's last issue to the other's first full stage; p90 " + fmt_fixed(quantile(s.handoff, 0.9), 0) +
            ", max " + fmt_fixed(quantile(s.handoff, 1.0), 0) + ".");
    row("hand-off: the turn, median", quantile(s.turn_lag, 0.5), "cycles",
        "one consumer's last issue to the other's return from the turn's barrier; p90 " +
            fmt_fixed(quantile(s.turn_lag, 0.9), 0) + ".");
    row("hand-off: after the turn, median", quantile(s.setup, 0.5), "cycles",
        "the turn to the first full stage (the tile's coordinates, the wait); p90 " +
            fmt_fixed(quantile(s.setup, 0.9), 0) +
            ".");
    row("starved k-tiles a tile, mean", mean(s.starved_ktiles), "k-tiles",
        "k-tiles after a tile's first whose stage was not yet full when the consumer reached it, every tile; p90 " +
            fmt_fixed(quantile(s.starved_ktiles, 0.9), 0) + ", max " + fmt_fixed(quantile(s.starved_ktiles, 1.0), 0) +
            ".");
    row("starved cycles a tile, mean", mean(s.starved_cycles), "cycles",
        "the cycles those waits took, every tile; p90 " + fmt_fixed(quantile(s.starved_cycles, 0.9), 0) + ", max " +
            fmt_fixed(quantile(s.starved_cycles, 1.0), 0) + ".");
    row("busiest CTA: starved cycles", b.starved, "cycles",
        "the busiest CTA's main loops' waits for stages after each tile's first, summed over its tiles.");
    row("idle between tiles, mean", mean(s.idle), "cycles",
        "the previous tile's drain to the next one's first full stage, where positive (0 otherwise); p90 " +
            fmt_fixed(quantile(s.idle, 0.9), 0) + ", max " + fmt_fixed(quantile(s.idle, 1.0), 0) + ".");
    row("epilogue, median", quantile(s.epilogue, 0.5), "cycles",
        "drained to stored; p90 " + fmt_fixed(quantile(s.epilogue, 0.9), 0) + ".");
    row("start-up, median", quantile(s.startup, 0.5), "cycles",
        "CTA start to its first full stage, every CTA; max " + fmt_fixed(quantile(s.startup, 1.0), 0) + ".");
    row("start-up: to the first load, median", quantile(s.to_first_load, 0.5), "cycles",
        "CTA start to the producer thread about to issue its first load (barriers set up, the block's "
        "barrier, the producer's registers given back); max " + fmt_fixed(quantile(s.to_first_load, 1.0), 0) + ".");
    row("start-up: first load to first full stage, median", quantile(s.first_load_to_data, 0.5), "cycles",
        "the producer's first load to the consumer's first full stage (its tensor maps' descriptors, "
        "the first k-tile's trip from memory); max " + fmt_fixed(quantile(s.first_load_to_data, 1.0), 0) + ".");
    row("tail, median", quantile(s.tail, 0.5), "cycles",
        "last drain to the CTA's end, every CTA; max " + fmt_fixed(quantile(s.tail, 1.0), 0) + ".");
    row("CTA end spread", quantile(s.end_ns, 1.0) - quantile(s.end_ns, 0.0), "ns",
        "the last CTA's end less the first's, by the global timer (a run spans " + fmt_fixed(s.span_ns, 0) +
            " ns); median end " + fmt_fixed(quantile(s.end_ns, 0.5), 0) + " ns.");
}

}  // namespace

std::vector<Finding> run_pingpong_timeline(const ProbeContext& ctx) {
    std::vector<Finding> out;
    if (ctx.compute_capability < 90) {
        out.push_back(not_available(probe_name, "pingpong_kernel", "bf16", "cycles a tile",
                                    "wgmma and TMA need compute capability 9.0, device has " +
                                        std::to_string(ctx.compute_capability)));
        return out;
    }
    const DeviceFacts facts = device_facts();
    const auto sampler = current_device_sampler();
    std::vector<Case> cases{{1000, 1048, 1096, Epilogue::none, true}, {1000, 1048, 1096, Epilogue::bias_gelu, true}};
    if (!ctx.quick) {
        cases.push_back({4096, 4096, 4096, Epilogue::none, false});
        cases.push_back({4096, 4096, 4096, Epilogue::bias_gelu, false});
        cases.push_back({4096, 4096, 4096, Epilogue::bias, false});  // the bias's loads without GELU's math
        cases.push_back({4096, 4096, 4096, Epilogue::none, false, 1, 2});
        cases.push_back({4096, 4096, 4096, Epilogue::bias_gelu, false, 1, 2});
        cases.push_back({4096, 4096, 4096, Epilogue::bias, false, 1, 2});  // GELU's share apart from the bias's
        cases.push_back({4096, 4096, 4096, Epilogue::none, false, 1, 1, true});
        cases.push_back({4096, 4096, 4096, Epilogue::bias_gelu, false, 1, 1, true});
        cases.push_back({4096, 11008, 4096, Epilogue::none, false});
        cases.push_back({1000, 1048, 1096, Epilogue::none, true, 2});
        cases.push_back({4096, 4096, 4096, Epilogue::none, false, 2});
        cases.push_back({4096, 11008, 4096, Epilogue::none, false, 2});
    }
    for (const Case& c : cases) {
        // A case's inputs follow from its shape and epilogue alone, so that its variants (half the SMs, the
        // narrow tail, splits) multiply the same bytes as their full-grid twin and differ in nothing else.
        const std::uint64_t seed = ctx.seed + 1000003ull * static_cast<std::uint64_t>(c.m) +
                                   10007ull * static_cast<std::uint64_t>(c.n) + 101ull * static_cast<std::uint64_t>(c.k) +
                                   static_cast<std::uint64_t>(c.epilogue);
        report(ctx, "pingpong_timeline " + cases_text(c) + " " + std::string(gemm::name(c.epilogue)));
        const gemm::Desc d{.m = c.m, .n = c.n, .k = c.k, .b_op = gemm::Op::t, .epilogue = c.epilogue,
                           .lda = c.k, .ldb = c.k, .ldd = c.n};
        const gemm::HostInputs in = gemm::random_inputs(d, seed, 1.0f, 0.0f);
        DeviceArray<std::uint8_t> a(in.a), b(in.b), bias(in.bias.empty() ? std::vector<std::uint8_t>(16) : in.bias);
        DeviceArray<std::uint8_t> dmat(static_cast<std::size_t>(c.m * c.n * 2));
        const std::int64_t tiles_m = (c.m + kTile - 1) / kTile;
        // The narrow tail's plan: tiles_n columns of 128, then tail_cols of 104 (none: all 128 wide).
        const gemm::NarrowTail tail =
            c.narrow_tail ? gemm::plan_narrow_tail(static_cast<int>(tiles_m), c.n, kTile, gemm::kTailTileN, facts.sms)
                          : gemm::NarrowTail{};
        const std::int64_t tiles_n = c.narrow_tail ? tail.wide_cols : (c.n + kTile - 1) / kTile;
        const std::int64_t tail_cols = tail.narrow_cols;
        const int grid = c.cluster_m == 2 ? traced_grid<2>(tiles_m, tiles_n, facts.sms)
                                          : traced_grid<1>(tiles_m, tiles_n + tail_cols, facts.sms / c.sm_share);
        // Tiles a consumer runs at most (a pair's CTA runs one of each tile-row pair), and one to spare.
        const std::int64_t units = (tiles_m + c.cluster_m - 1) / c.cluster_m * (tiles_n + tail_cols);
        const int clusters = grid / c.cluster_m;
        const int slots = static_cast<int>((units + 2 * clusters - 1) / (2 * clusters)) + 1;
        const std::size_t words = static_cast<std::size_t>(grid * timeline::Layout::cta_words(slots));
        DeviceArray<std::uint64_t> events(words);
        const auto launch_once = [&] {
            const int tn = static_cast<int>(tiles_n), tc = static_cast<int>(tail_cols);
            if (c.cluster_m == 2)
                return launch<2>(d, a.get(), b.get(), bias.get(), dmat.get(), events.get(), slots, grid, tn, 0, false);
            launch<1>(d, a.get(), b.get(), bias.get(), dmat.get(), events.get(), slots, grid, tn, tc, c.narrow_tail);
        };
        for (int w = 0; w < 3; ++w) launch_once();  // warm: clocks, L2, maps
        std::vector<std::vector<timeline::CtaTimeline>> runs;
        for (int r = 0; r < kRecordedRuns; ++r) {
            dmat.fill_bytes(gemm::kPoisonByte);
            events.fill_bytes(0);
            launch_once();
            RIGEL_CUDA_CHECK(cudaDeviceSynchronize());
            const std::vector<std::uint64_t> w = events.download();
            std::vector<timeline::CtaTimeline> run;
            for (int cta = 0; cta < grid; ++cta) run.push_back(timeline::read_cta(w, cta, slots));
            runs.push_back(std::move(run));
        }
        // The last recorded run's D against float64.
        const std::vector<std::uint8_t> dh = dmat.download();
        // The board's power with the case running back to back for half a second (launches queued in
        // batches, no gap between them but each batch's end): what tells the half-SM rows' draw from the
        // full grid's. Not in quick runs.
        DeviceSample power;
        if (sampler && !ctx.quick) {
            sampler->start();
            const auto t0 = std::chrono::steady_clock::now();
            while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(500)) {
                for (int i = 0; i < 20; ++i) launch_once();
                RIGEL_CUDA_CHECK(cudaDeviceSynchronize());
            }
            power = sampler->stop();
        }
        gemm::VerifyOptions opt;
        if (!c.full_verify) opt.full_limit = 0x1p28;
        const gemm::GemmVerdict v = gemm::verify_gemm(d, in, gemm::DeviceOutputs{.d = dh.data()}, seed, 16, opt);
        const std::string check =
            v.pass ? "D verified against float64 (" + std::to_string(v.checked_rows) + " rows, worst " +
                         fmt_fixed(v.err_max_scaled, 3) + " of its allowance)."
                   : "D FAILED verification: " + v.reason;
        const Summary s = timeline::summarize(runs, static_cast<double>((c.k + 63) / 64) * kCyclesPerKTile);
        add_rows(out, c, s, grid, v.pass, check, power);
    }
    return out;
}

}  // namespace rigel::probes
