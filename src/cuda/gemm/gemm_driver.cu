// The GPU driver of `rigel gemm` (src/gemm/driver.hpp): buffers on the
// executor's stream, the reference's random inputs uploaded, outputs poisoned
// with 0xFF bytes (a NaN in every output type, padding included), one run of a
// contender, the bytes back and verify_gemm on them; then paired timing of
// rigel against each baseline, with CUDA events after an L2 flush
// (Executor::time_once) and NVML sampling around the pairs.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/recipe.hpp"
#include "cuda/check.cuh"
#include "cuda/hopper/sm90.cuh"
#include "cuda/vendor/cublaslt_gemm.hpp"
#include "cuda/vendor/vendor.cuh"
#include "gemm/driver.hpp"
#include "gemm/reference.hpp"
#include "harness/nvml_sampler.hpp"

namespace rigel::gemm {
namespace {

// What the refusal test fills its allocation with: not the poison, so that a
// kernel's NaN or a memset of bgrad would both show.
constexpr int kRefusalFill = 0x5A;

cudaStream_t stream_of(Executor& ex) { return static_cast<cudaStream_t>(ex.stream()); }

using cuda::vendor::LtConfig;
using cuda::vendor::LtOwnBgrad;

constexpr double kU32 = 0x1p-24;

// What rounding to a stored type costs, as reference.cpp counts it: unit roundoff and half the
// smallest subnormal (an f32 D: none, nothing rounds after the fp32 epilogue).
struct Rounding {
    double u = 0, eta = 0;
};
Rounding rounding_of(Type t) {
    switch (t) {
        case Type::bf16: return {0x1p-8, 0x1p-134};
        case Type::f16: return {0x1p-11, 0x1p-25};
        default: return {};
    }
}

bool is_poison_element(const std::uint8_t* p, int bytes) {
    return std::all_of(p, p + bytes, [](std::uint8_t b) { return b == kPoisonByte; });
}

cudaDataType_t cuda_type(Type t) {
    switch (t) {
        case Type::f32: return CUDA_R_32F;
        case Type::bf16: return CUDA_R_16BF;
        case Type::f16: return CUDA_R_16F;
        case Type::e4m3: return CUDA_R_8F_E4M3;
        case Type::e5m2: return CUDA_R_8F_E5M2;
    }
    return CUDA_R_32F;
}

// cublasGemmEx on rigel's row-major storage (the mapping is cuBLASLt's, see
// cublaslt_gemm.hpp): no epilogue, and C only as D itself.
void cublas_gemm(const Desc& desc, const Args& args, cudaStream_t s) {
    const Desc d = with_packed_leading_dimensions(desc);
    if (const std::string why = check_args(d, args); !why.empty()) throw std::invalid_argument(why);
    if (d.epilogue != Epilogue::none || (args.beta != 0.0f && args.c != args.d))
        throw std::invalid_argument("cublasGemmEx takes no epilogue and no C apart from D");
    const cuda::vendor::LtGemm g = cuda::vendor::lt_gemm(d);
    const float alpha = args.alpha, beta = args.beta;
    RIGEL_CUBLAS_CHECK(cublasGemmEx(cuda::vendor::cublas_on(s), g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, static_cast<int>(g.m),
                                    static_cast<int>(g.n), static_cast<int>(g.k), &alpha, args.b,
                                    cuda_type(d.b_type), static_cast<int>(g.a.ld), args.a, cuda_type(d.a_type),
                                    static_cast<int>(g.b.ld), &beta, args.d, cuda_type(d.d_type),
                                    static_cast<int>(g.d.ld), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// The device buffers of one case, with the host inputs they were filled from.
class DeviceCase {
public:
    DeviceCase(Executor& ex, const GemmCase& c, std::uint64_t seed)
        : ex_(ex),
          desc_(with_packed_leading_dimensions(c.desc)),
          in_place_(c.in_place),
          sizes_(buffer_sizes(desc_, c.beta)),
          in_(random_inputs(desc_, seed, c.alpha, c.beta)) {
        const EpilogueTraits e = traits(desc_.epilogue);
        a_ = buffer(sizes_.a);
        b_ = buffer(sizes_.b);
        d_ = buffer(sizes_.d);
        if (sizes_.c && !in_place_) c_ = buffer(sizes_.c);
        if (sizes_.bias) bias_ = buffer(sizes_.bias);
        if (sizes_.aux) aux_ = buffer(sizes_.aux);
        if (sizes_.bgrad) bgrad_ = buffer(sizes_.bgrad);
        if (bgrad_ && c.bgrad_accumulate) {
            // What a step's earlier micro-batches left in the bias gradient: values of the column sums'
            // own scale, which a call that wrote bgrad afresh (or added them twice) would miss.
            Rng rng(seed ^ 0x6267726164616363ull);
            bgrad_before_.resize(static_cast<std::size_t>(desc_.n));
            for (float& x : bgrad_before_) x = static_cast<float>(rng.uniform(-64.0, 64.0));
        }
        ex.upload(a_->get(), in_.a.data(), in_.a.size());
        ex.upload(b_->get(), in_.b.data(), in_.b.size());
        if (c_) ex.upload(c_->get(), in_.c.data(), in_.c.size());
        if (bias_) ex.upload(bias_->get(), in_.bias.data(), in_.bias.size());
        if (aux_ && e.aux_in) ex.upload(aux_->get(), in_.aux.data(), in_.aux.size());
        args_ = Args{.a = a_->get(),
                     .b = b_->get(),
                     .d = d_->get(),
                     .c = c_ ? c_->get() : (in_place_ && c.beta != 0.0f ? d_->get() : nullptr),
                     .bias = bias_ ? bias_->get() : nullptr,
                     .aux = aux_ ? aux_->get() : nullptr,
                     .bgrad = bgrad_ ? static_cast<float*>(bgrad_->get()) : nullptr,
                     .alpha = c.alpha,
                     .beta = c.beta,
                     .bgrad_accumulate = c.bgrad_accumulate};
    }

    const Desc& desc() const { return desc_; }
    const Args& args() const { return args_; }

    // Every output byte poisoned (padding included); in place, D holds C again.
    void prepare_outputs() {
        const cudaStream_t s = stream_of(ex_);
        if (in_place_ && !in_.c.empty())
            ex_.upload(d_->get(), in_.c.data(), in_.c.size());
        else
            RIGEL_CUDA_CHECK(cudaMemsetAsync(d_->get(), kPoisonByte, sizes_.d, s));
        if (aux_ && traits(desc_.epilogue).aux_out)
            RIGEL_CUDA_CHECK(cudaMemsetAsync(aux_->get(), kPoisonByte, sizes_.aux, s));
        if (bgrad_ && !bgrad_before_.empty())
            ex_.upload(bgrad_->get(), bgrad_before_.data(), sizes_.bgrad);
        else if (bgrad_)
            RIGEL_CUDA_CHECK(cudaMemsetAsync(bgrad_->get(), kPoisonByte, sizes_.bgrad, s));
        ex_.synchronize();
    }

    // D's bytes as the last launch left them.
    std::vector<std::uint8_t> d_bytes() {
        std::vector<std::uint8_t> d(sizes_.d);
        ex_.download(d.data(), d_->get(), d.size());
        return d;
    }

    // The outputs against float64. `own`: a baseline that wrote the bias gradient to a buffer of its
    // own, in its own type (cuBLASLt's bf16 where it refuses rigel's f32); D is checked by verify_gemm
    // as for every contender, and that gradient by check_own_bgrad.
    GemmVerdict check_outputs(Path path, std::uint64_t seed, int threads, const LtOwnBgrad& own = {}) {
        const EpilogueTraits e = traits(desc_.epilogue);
        std::vector<std::uint8_t> d(sizes_.d), aux, bgrad, own_bgrad;
        ex_.download(d.data(), d_->get(), d.size());
        if (e.aux_out) {
            aux.resize(sizes_.aux);
            ex_.download(aux.data(), aux_->get(), aux.size());
        }
        ColumnSums sums;
        std::vector<float> slot;
        if (e.bgrad && own.data) {
            own_bgrad.resize(static_cast<std::size_t>(own.count) * static_cast<std::size_t>(type_bytes(own.type)));
            ex_.download(own_bgrad.data(), own.data, own_bgrad.size());
            // verify_gemm judges D and an f32 bias gradient together. This baseline wrote no f32 one, so
            // its slot gets the very column sums verify_gemm compares it with (off by their f32 rounding,
            // a small fraction of the allowance): that part then checks nothing and hides nothing of D,
            // and the baseline's own gradient is held to check_own_bgrad below.
            sums = column_sums(d, path, threads);
            slot.resize(sums.ref.size());
            std::transform(sums.ref.begin(), sums.ref.end(), slot.begin(),
                           [](double x) { return static_cast<float>(x); });
        } else if (e.bgrad) {
            bgrad.resize(sizes_.bgrad);
            ex_.download(bgrad.data(), bgrad_->get(), bgrad.size());
        }
        const DeviceOutputs out{.d = d.data(),
                                .aux = aux.empty() ? nullptr : aux.data(),
                                .bgrad = !slot.empty()    ? slot.data()
                                         : bgrad.empty() ? nullptr
                                                         : reinterpret_cast<const float*>(bgrad.data()),
                                .bgrad_before = bgrad_before_.empty() ? nullptr : bgrad_before_.data()};
        GemmVerdict v = verify_gemm(desc_, in_, out, seed, threads, VerifyOptions{.path = path});
        if (!own_bgrad.empty()) check_own_bgrad(v, sums, own, own_bgrad);
        return v;
    }

private:
    std::unique_ptr<DeviceBuffer> buffer(std::size_t bytes) { return std::make_unique<DeviceBuffer>(ex_, bytes); }

    // The column sums of dgelu_bgrad's D that a bias gradient is checked against, and what each may be
    // off by before the gradient's own rounding, taken as verify_gemm takes its own (reference.hpp):
    // from the float64 reference when it checks every row of D (M N (K + 64) within full_limit), else
    // from the D the device wrote (itself checked against the reference on the sampled rows). Unlike
    // verify_gemm's, which follows rigel's own order of additions, the fp32 sum is allowed any order
    // ((M - 1) u |x| summed, the worst case): the vendor's order is not documented.
    struct ColumnSums {
        std::vector<double> ref, allowed;
    };
    ColumnSums column_sums(const std::vector<std::uint8_t>& d_bytes, Path path, int threads) const {
        const Desc& d = desc_;
        const auto n = static_cast<std::size_t>(d.n);
        const double per_row = static_cast<double>(d.n) * (static_cast<double>(d.k) + 64.0);
        const bool all_rows = std::floor(VerifyOptions{}.full_limit / per_row) >= static_cast<double>(d.m);
        const double m = static_cast<double>(d.m);
        const double gamma = (m - 1.0) * kU32 / (1.0 - (m - 1.0) * kU32);
        const int workers = static_cast<int>(std::clamp<std::int64_t>(threads, 1, d.m));
        std::vector<std::vector<double>> sum(static_cast<std::size_t>(workers), std::vector<double>(n, 0.0)),
            allowed(sum), magnitude(sum);
        const Rounding r = rounding_of(d.d_type);
        const int bytes = type_bytes(d.d_type);
        std::vector<std::thread> pool;
        for (int w = 0; w < workers; ++w)
            pool.emplace_back([&, w] {
                auto& s = sum[static_cast<std::size_t>(w)];
                auto& a = allowed[static_cast<std::size_t>(w)];
                auto& mag = magnitude[static_cast<std::size_t>(w)];
                for (std::int64_t i = d.m * w / workers; i < d.m * (w + 1) / workers; ++i)
                    for (std::size_t j = 0; j < n; ++j) {
                        if (all_rows) {
                            const ElementBound b = element_bound(d, in_, i, static_cast<std::int64_t>(j), path);
                            s[j] += b.d_ref;
                            a[j] += b.unrounded_allowed;
                            mag[j] += std::fabs(b.d_ref) + b.unrounded_allowed;
                            continue;
                        }
                        const std::int64_t idx = i * d.ldd + static_cast<std::int64_t>(j);
                        if (is_poison_element(d_bytes.data() + idx * bytes, bytes)) continue;  // verify_gemm fails it
                        const double x = load_element(d.d_type, d_bytes.data(), idx);
                        if (std::isnan(x)) continue;
                        s[j] += x;
                        mag[j] += std::fabs(x);
                    }
            });
        for (std::thread& t : pool) t.join();
        ColumnSums out{.ref = std::vector<double>(n, 0.0), .allowed = std::vector<double>(n, 0.0)};
        for (std::size_t j = 0; j < n; ++j) {
            double s = 0, a = 0, mag = 0;
            for (int w = 0; w < workers; ++w) {
                s += sum[static_cast<std::size_t>(w)][j];
                a += allowed[static_cast<std::size_t>(w)][j];
                mag += magnitude[static_cast<std::size_t>(w)][j];
            }
            out.ref[j] = s;
            // Whether the vendor sums D before its rounding to D's type or after is not documented:
            // either is allowed, each stored element being within u_D |x| + eta_D of x.
            if (all_rows) {
                out.allowed[j] = a + r.u * mag + m * r.eta + gamma * mag;
            } else {
                const double v = (mag + m * r.eta) / (1.0 - r.u);  // bounds the magnitudes before rounding
                out.allowed[j] = r.u * v + m * r.eta + gamma * v;
            }
        }
        return out;
    }

    // A baseline's own bias gradient (`bytes`: own.count elements of own.type) against the column sums,
    // each allowed their allowance plus its rounding to own.type; folded into `v` (the first failure
    // kept, the worst ratio over D and the gradient).
    static void check_own_bgrad(GemmVerdict& v, const ColumnSums& sums, const LtOwnBgrad& own,
                                const std::vector<std::uint8_t>& bytes) {
        const Rounding r = rounding_of(own.type);
        const int width = type_bytes(own.type);
        std::int64_t unwritten = 0, nan = 0;
        double worst = 0;
        std::string detail;
        for (std::int64_t j = 0; j < own.count; ++j) {
            if (is_poison_element(bytes.data() + j * width, width)) {
                ++unwritten;
                continue;
            }
            const double got = load_element(own.type, bytes.data(), j);
            if (std::isnan(got)) {
                ++nan;
                continue;
            }
            const double ref = sums.ref[static_cast<std::size_t>(j)];
            const double allowed =
                sums.allowed[static_cast<std::size_t>(j)] + r.u * std::fabs(got) / (1.0 - r.u) + r.eta;
            const double err = got == ref ? 0.0 : std::fabs(got - ref);
            const double ratio = err == 0 ? 0.0 : allowed > 0 ? err / allowed : INFINITY;
            if (ratio > worst) {
                worst = ratio;
                char buf[192];
                std::snprintf(buf, sizeof buf, "bgrad[%lld] (%s) is %.9g, the column sum %.9g, allowance %.3g",
                              static_cast<long long>(j), name(own.type), got, ref, allowed);
                detail = buf;
            }
        }
        v.nan_count += nan;
        if (worst > v.err_max_scaled) {
            v.err_max_scaled = worst;
            v.worst = "bgrad";
        }
        if (!v.pass) return;
        if (unwritten > 0)
            v.reason = std::to_string(unwritten) + " of the " + std::to_string(own.count) + " elements of the " +
                       name(own.type) + " bias gradient were never written";
        else if (nan > 0)
            v.reason = std::to_string(nan) + " elements of the " + std::string(name(own.type)) +
                       " bias gradient are NaN where the reference is finite";
        else if (worst > v.tolerance) {
            char buf[64];
            std::snprintf(buf, sizeof buf, " (%.3g allowances off)", worst);
            v.reason = detail + buf;
        }
        v.pass = v.reason.empty();
    }

    Executor& ex_;
    Desc desc_;
    bool in_place_;
    BufferSizes sizes_;
    HostInputs in_;
    std::unique_ptr<DeviceBuffer> a_, b_, c_, d_, bias_, aux_, bgrad_;
    std::vector<float> bgrad_before_;  // bgrad_accumulate: what bgrad holds before each checked launch
    Args args_;
};

// One contender's launch on the case's buffers.
struct Runner {
    Contender who;
    std::function<void()> launch;
    std::function<std::string()> kernel;  // asked after the first launch (cuBLASLt names its algorithm then)
    LtOwnBgrad own{};                     // cuBLASLt's own bias-gradient buffer, where it writes one
    std::string note{};                   // VerifyRow::note
};

Runner runner(Contender who, Plan& plan, const DeviceCase& dc, Executor& ex) {
    const cudaStream_t s = stream_of(ex);
    const Args args = dc.args();
    const Desc desc = dc.desc();
    switch (who) {
        case Contender::rigel:
            return {who, [&plan, args, s] { plan.run(args, s); },
                    [&plan, args] { return kernel_text(plan.choice_for(args)); }};
        case Contender::rigel_decomposed:
            return {who, [&plan, args, s] { plan.run_decomposed(args, s); },
                    [&plan, args] { return kernel_text(plan.choice_for(args)) + " + epilogue kernel"; }};
        case Contender::cublaslt:
            // As a user of cuBLASLt would run it (bench_case asked its support in this config first).
            return {who, [desc, args, s] { cuda::vendor::cublaslt_gemm(desc, args, s, LtConfig::as_a_user); },
                    [desc] { return cuda::vendor::cublaslt_gemm_algorithm(desc, LtConfig::as_a_user); },
                    cuda::vendor::cublaslt_gemm_own_bgrad(desc),
                    cuda::vendor::cublaslt_gemm_note(desc, LtConfig::as_a_user)};
        case Contender::cublas:
            return {who, [desc, args, s] { cublas_gemm(desc, args, s); }, [] { return std::string("cublasGemmEx"); }};
    }
    throw std::logic_error("unknown contender");
}

// Poison, the launch, the bytes back against float64. rigel's plans launch
// twice (unless C is D, or bgrad is added into, which a second launch would add into again), so that
// a kernel whose run leaves state for the next (the split fixed kernels'
// workspace and counters) is checked on its second run. With `same_bits`, the
// two launches' D must be the same bytes: every plan but an atomic split
// promises runs that repeat bit for bit.
VerifyRow verify_one(const GemmCase& c, DeviceCase& dc, Runner& r, Executor& ex, std::uint64_t seed, int threads,
                     bool same_bits = false) {
    VerifyRow row{.case_name = c.name, .desc = dc.desc(), .path = r.who, .note = r.note};
    try {
        dc.prepare_outputs();
        if (r.own.data)
            RIGEL_CUDA_CHECK(cudaMemsetAsync(r.own.data, kPoisonByte,
                                             static_cast<std::size_t>(r.own.count) *
                                                 static_cast<std::size_t>(type_bytes(r.own.type)),
                                             stream_of(ex)));
        const int launches = r.who == Contender::rigel && !c.in_place && !c.bgrad_accumulate ? 2 : 1;
        std::vector<std::uint8_t> first;
        for (int i = 0; i < launches; ++i) {
            r.launch();
            if (i == 0 && launches == 2 && same_bits) {
                ex.synchronize();
                first = dc.d_bytes();
            }
        }
        ex.synchronize();
        if (!first.empty() && first != dc.d_bytes()) {
            row.kernel = r.kernel();
            row.pass = false;
            row.reason = "D differs between two runs of the same plan on the same inputs";
            return row;
        }
        row.kernel = r.kernel();
        // Only rigel's fused path is held to the fused allowance; the decomposed
        // path rounds the product to D's type before its epilogue, and a vendor
        // library may do the same (cuBLASLt's GELU_AUX_BIAS misses the fused
        // allowance by about one bf16 rounding of the pre-activation on the H200
        // machine), so both get the decomposed path's one extra rounding.
        const Path path = r.who == Contender::rigel ? Path::fused : Path::decomposed;
        const GemmVerdict v = dc.check_outputs(path, seed, threads, r.own);
        row.pass = v.pass;
        row.err_max_scaled = v.err_max_scaled;
        row.tolerance = v.tolerance;
        row.reason = v.reason;
    } catch (const std::exception& e) {
        // A refusal or a failed CUDA call is this row's failure, not the run's:
        // a sticky device error fails every later row too, each saying so.
        row.pass = false;
        row.reason = std::string("error: ") + e.what();
    }
    return row;
}

// The case's plan: on the kernel it names, or the dispatcher's.
Plan plan_for(const GemmCase& c) {
    if (on_dispatcher_plan(c)) return Plan(c.desc);
    const std::optional<Choice> k = case_choice(c, cuda::sm90::sm_count(), cuda::sm90::dram_bytes_per_second());
    if (!k) throw std::invalid_argument("case " + c.name + ": no kernel " + c.kernel + " for its operand type");
    return Plan(c.desc, *k);
}

}  // namespace

std::string run_baseline(Contender who, const Desc& d, const Args& args, Stream s) {
    switch (who) {
        case Contender::cublaslt:
            cuda::vendor::cublaslt_gemm(d, args, s);
            return cuda::vendor::cublaslt_gemm_algorithm(d);
        case Contender::cublas:
            cublas_gemm(d, args, static_cast<cudaStream_t>(s));
            return "cublasGemmEx";
        default: break;
    }
    throw std::invalid_argument(std::string("run_baseline: ") + name(who) + " is not a vendor baseline");
}

std::string baseline_support(Contender who, const Desc& d) {
    if (who == Contender::cublaslt) return cuda::vendor::cublaslt_gemm_support(d);
    if (who == Contender::cublas)
        return d.epilogue == Epilogue::none ? std::string() : std::string("cublasGemmEx takes no epilogue");
    throw std::invalid_argument(std::string("baseline_support: ") + name(who) + " is not a vendor baseline");
}

std::vector<VerifyRow> verify_case(Executor& ex, const GemmCase& c, std::uint64_t seed, int threads) {
    Plan plan = plan_for(c);
    DeviceCase dc(ex, c, seed);
    std::vector<VerifyRow> rows;
    for (Contender who : {Contender::rigel, Contender::rigel_decomposed}) {
        if (who == Contender::rigel_decomposed && !applies(who, c)) continue;
        Runner r = runner(who, plan, dc, ex);
        const Choice& ch = plan.choice();
        const bool atomic_split = ch.splits > 1 && ch.pingpong && !ch.ordered_split;
        rows.push_back(verify_one(c, dc, r, ex, seed, threads, who == Contender::rigel && !atomic_split));
    }
    return rows;
}

VerifyRow check_refusal(Executor& ex, const RefusalCase& r) {
    VerifyRow row{.case_name = r.name, .desc = with_packed_leading_dimensions(r.desc)};
    const auto refused_as_expected = [&](const std::string& what, const std::invalid_argument& e) {
        row.reason = e.what();
        if (row.reason.find(r.expect) == std::string::npos) {
            row.reason = what + " refused for another reason than '" + r.expect + "': " + row.reason;
            return false;
        }
        return true;
    };
    if (r.breakage == Breakage::none) {
        try {
            Plan plan(r.desc);
            row.reason = "Plan accepted a desc it must refuse ('" + r.expect + "')";
        } catch (const std::invalid_argument& e) {
            row.pass = refused_as_expected("Plan", e);
        }
        return row;
    }

    Plan plan(r.desc);
    row.kernel = kernel_text(plan.choice());
    const std::size_t bytes = refusal_layout(r.desc, r.beta, r.breakage, 0).bytes;
    DeviceBuffer buf(ex, bytes);
    const RefusalLayout l = refusal_layout(r.desc, r.beta, r.breakage, reinterpret_cast<std::uintptr_t>(buf.get()));
    RIGEL_CUDA_CHECK(cudaMemsetAsync(buf.get(), kRefusalFill, bytes, stream_of(ex)));
    ex.synchronize();
    bool refused = true;
    for (const auto& [what, call] :
         {std::pair<std::string, std::function<void()>>{"Plan::run", [&] { plan.run(l.args, stream_of(ex)); }},
          {"Plan::run_decomposed", [&] { plan.run_decomposed(l.args, stream_of(ex)); }}}) {
        try {
            call();
            refused = false;
            row.reason = what + " accepted a call it must refuse ('" + r.expect + "')";
        } catch (const std::invalid_argument& e) {
            refused = refused && refused_as_expected(what, e);
        }
        if (!refused) break;
    }
    ex.synchronize();  // a launch that faulted would show here
    std::vector<unsigned char> after(bytes);
    ex.download(after.data(), buf.get(), bytes);
    std::size_t changed = 0;
    for (unsigned char byte : after) changed += byte != kRefusalFill;
    row.pass = refused && changed == 0;
    if (refused && changed)
        row.reason =
            "refused, but " + std::to_string(changed) + " byte(s) of the call's buffers changed: " + row.reason;
    return row;
}

BenchOutcome bench_case(Executor& ex, const GemmCase& c, std::span<const Contender> baselines,
                        const PairedConfig& timing, std::uint64_t seed, int threads) {
    BenchOutcome out;
    Plan plan = plan_for(c);
    DeviceCase dc(ex, c, seed);
    Runner rigel = runner(Contender::rigel, plan, dc, ex);
    out.verified.push_back(verify_one(c, dc, rigel, ex, seed, threads));
    const bool rigel_ok = out.verified.back().pass;
    std::vector<Runner> against;
    for (Contender b : baselines) {
        if (!applies(b, c)) continue;
        if (b == Contender::cublaslt)
            if (const std::string why = cuda::vendor::cublaslt_gemm_support(dc.desc(), LtConfig::as_a_user);
                !why.empty()) {
                out.skipped.push_back(std::string(name(b)) + ": " + why);
                continue;
            }
        Runner r = runner(b, plan, dc, ex);
        // The baseline is held to the same check: a pair is timed only where
        // both compute the same thing.
        out.verified.push_back(verify_one(c, dc, r, ex, seed, threads));
        if (out.verified.back().pass) against.push_back(std::move(r));
    }
    if (!rigel_ok) return out;

    const Desc& d = dc.desc();
    const double flop = 2.0 * static_cast<double>(d.m) * static_cast<double>(d.n) * static_cast<double>(d.k);
    for (Runner& b : against) {
        const auto side_a = [&] { return ex.time_once(rigel.launch); };
        const auto side_b = [&] { return ex.time_once(b.launch); };
        BenchRow row{.case_name = c.name, .desc = d, .candidate = Contender::rigel, .baseline = b.who,
                     .kernel = rigel.kernel(), .baseline_note = b.note};
        if (timing.block_s > 0) {
            // Blocked timing: the device read over each block apart, so that each side's own clock shows.
            // (A block cut short by an error ends its sampling as the optional goes.)
            std::vector<DeviceSample> blocks[2], all;
            std::optional<DeviceSampling> sampling;
            const PairedStats s = measure_blocked(side_a, side_b, timing, [&](int side, bool begin) {
                if (begin) {
                    sampling.emplace(ex);
                } else {
                    blocks[side].push_back(sampling->stop());
                    all.push_back(blocks[side].back());
                    sampling.reset();
                }
            });
            row.stats = s;
            row.candidate_sample = median_over_blocks(blocks[0]);
            row.baseline_sample = median_over_blocks(blocks[1]);
            row.sample = median_over_blocks(all);
        } else {
            DeviceSampling sampling(ex);
            row.stats = measure_paired(side_a, side_b, timing);
            row.sample = sampling.stop();
        }
        const PairedStats& s = row.stats;
        row.candidate_tflops = flop / s.a.median_s * 1e-12;
        row.baseline_tflops = flop / s.b.median_s * 1e-12;
        out.rows.push_back(std::move(row));
    }
    return out;
}

}  // namespace rigel::gemm
