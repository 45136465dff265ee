// cuDNN's SDPA through the cudnn-frontend graph API (cudnn_attention.hpp).
#include "cuda/vendor/cudnn_attention.hpp"

#include <stdexcept>
#include <string>

#if RIGEL_HAVE_CUDNN_FRONTEND
#include <cudnn.h>
#include <cudnn_frontend.h>

#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>
#endif

namespace rigel::cuda::vendor {

#if RIGEL_HAVE_CUDNN_FRONTEND
namespace {

namespace fe = cudnn_frontend;
using rigel::attention::Desc;

// The fields of a desc a graph is built for.
using Key = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, float, std::int64_t,
                       std::int64_t, std::int64_t, std::int64_t>;
Key key_of(const Desc& d) {
    return {d.batch, d.heads, d.seq, d.head_dim, d.causal, d.scale, d.ldq, d.ldk, d.ldv, d.ldo};
}

struct Built {
    std::string refusal;  // empty: usable
    std::shared_ptr<fe::graph::Graph> graph;
    std::shared_ptr<fe::graph::Tensor_attributes> q, k, v, o, stats, dout, dq, dk, dv;
    void* workspace = nullptr;
};

cudnnHandle_t handle() {
    static cudnnHandle_t h = [] {
        cudnnHandle_t created = nullptr;
        if (const cudnnStatus_t s = cudnnCreate(&created); s != CUDNN_STATUS_SUCCESS)
            throw std::runtime_error(std::string("cudnnCreate failed: ") + cudnnGetErrorString(s));
        return created;
    }();
    return h;
}

std::shared_ptr<fe::graph::Tensor_attributes> token_tensor(fe::graph::Graph& g, const char* name, const Desc& d,
                                                           std::int64_t ld) {
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_dim({d.batch, d.heads, d.seq, d.head_dim})
                        .set_stride({d.seq * ld, d.head_dim, ld, 1}));
}

void set_token_layout(fe::graph::Tensor_attributes& t, const Desc& d, std::int64_t ld) {
    t.set_output(true).set_dim({d.batch, d.heads, d.seq, d.head_dim}).set_stride({d.seq * ld, d.head_dim, ld, 1});
}

// The forward graph (O and the statistics from Q, K, V), or the backward one
// (dQ, dK, dV from Q, K, V, O, dO and the statistics).
Built build(const Desc& d, bool backward) {
    Built b;
    b.graph = std::make_shared<fe::graph::Graph>();
    fe::graph::Graph& g = *b.graph;
    g.set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    b.q = token_tensor(g, "Q", d, d.ldq);
    b.k = token_tensor(g, "K", d, d.ldk);
    b.v = token_tensor(g, "V", d, d.ldv);
    if (backward) {
        b.o = token_tensor(g, "O", d, d.ldo);
        b.dout = token_tensor(g, "dO", d, d.ldo);
        b.stats = g.tensor(fe::graph::Tensor_attributes()
                               .set_name("stats")
                               .set_dim({d.batch, d.heads, d.seq, 1})
                               .set_stride({d.heads * d.seq, d.seq, 1, 1})
                               .set_data_type(fe::DataType_t::FLOAT));
        auto options = fe::graph::SDPA_backward_attributes()
                           .set_name("sdpa_backward")
                           .set_causal_mask(d.causal)
                           .set_attn_scale(d.scale);
        auto [dq, dk, dv] = g.sdpa_backward(b.q, b.k, b.v, b.o, b.dout, b.stats, options);
        set_token_layout(*dq, d, d.ldq);
        set_token_layout(*dk, d, d.ldk);
        set_token_layout(*dv, d, d.ldv);
        b.dq = dq;
        b.dk = dk;
        b.dv = dv;
    } else {
        auto options = fe::graph::SDPA_attributes()
                           .set_name("sdpa")
                           .set_generate_stats(true)
                           .set_causal_mask(d.causal)
                           .set_attn_scale(d.scale);
        auto [o, stats] = g.sdpa(b.q, b.k, b.v, options);
        set_token_layout(*o, d, d.ldo);
        stats->set_output(true).set_data_type(fe::DataType_t::FLOAT);
        b.o = o;
        b.stats = stats;
    }
    const auto refuse = [&](const char* step, fe::error_t e) {
        b.refusal = std::string("cuDNN ") + step + ": " + e.get_message();
        return b;
    };
    if (auto e = g.validate(); !e.is_good()) return refuse("refused the graph", e);
    if (auto e = g.build_operation_graph(handle()); !e.is_good()) return refuse("could not build the graph", e);
    if (auto e = g.create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}); !e.is_good())
        return refuse("has no plan", e);
    if (auto e = g.check_support(handle()); !e.is_good()) return refuse("does not support it", e);
    if (auto e = g.build_plans(fe::BuildPlanPolicy_t::HEURISTICS_CHOICE); !e.is_good())
        return refuse("could not build a plan", e);
    std::int64_t bytes = 0;
    if (auto e = g.get_workspace_size(bytes); !e.is_good()) return refuse("gave no workspace size", e);
    if (bytes > 0 && cudaMalloc(&b.workspace, static_cast<std::size_t>(bytes)) != cudaSuccess)
        b.refusal = "cuDNN's workspace of " + std::to_string(bytes) + " bytes could not be allocated";
    return b;
}

// The graphs built so far (kept for the program's life, as a plan cache is).
Built& built(const Desc& d, bool backward) {
    static std::mutex lock;
    static std::map<std::pair<Key, bool>, Built> graphs;
    const std::lock_guard<std::mutex> hold(lock);
    const auto key = std::make_pair(key_of(d), backward);
    auto it = graphs.find(key);
    if (it == graphs.end()) it = graphs.emplace(key, build(d, backward)).first;
    return it->second;
}

void on_stream(cudaStream_t stream) {
    if (const cudnnStatus_t s = cudnnSetStream(handle(), stream); s != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cudnnSetStream failed: ") + cudnnGetErrorString(s));
}

void execute(Built& b, std::unordered_map<std::shared_ptr<fe::graph::Tensor_attributes>, void*>& pack) {
    if (auto e = b.graph->execute(handle(), pack, b.workspace); !e.is_good())
        throw std::runtime_error("cuDNN SDPA failed: " + e.get_message());
}

std::string support(const Desc& desc, bool backward) {
    try {
        return built(rigel::attention::with_defaults(desc), backward).refusal;
    } catch (const std::exception& e) {
        return e.what();
    }
}

}  // namespace

std::string cudnn_sdpa_support(const Desc& desc) { return support(desc, false); }
std::string cudnn_sdpa_backward_support(const Desc& desc) { return support(desc, true); }

void cudnn_sdpa_forward(const Desc& desc, const rigel::attention::ForwardArgs& a, cudaStream_t stream) {
    Built& b = built(rigel::attention::with_defaults(desc), false);
    if (!b.refusal.empty()) throw std::runtime_error(b.refusal);
    if (a.lse == nullptr) throw std::invalid_argument("cuDNN's training graph writes the statistics: lse is null");
    on_stream(stream);
    std::unordered_map<std::shared_ptr<fe::graph::Tensor_attributes>, void*> pack{
        {b.q, const_cast<void*>(a.q)}, {b.k, const_cast<void*>(a.k)}, {b.v, const_cast<void*>(a.v)},
        {b.o, a.o},                    {b.stats, a.lse}};
    execute(b, pack);
}

void cudnn_sdpa_backward(const Desc& desc, const rigel::attention::BackwardArgs& a, cudaStream_t stream) {
    Built& b = built(rigel::attention::with_defaults(desc), true);
    if (!b.refusal.empty()) throw std::runtime_error(b.refusal);
    on_stream(stream);
    std::unordered_map<std::shared_ptr<fe::graph::Tensor_attributes>, void*> pack{
        {b.q, const_cast<void*>(a.q)},        {b.k, const_cast<void*>(a.k)},
        {b.v, const_cast<void*>(a.v)},        {b.o, const_cast<void*>(a.o)},
        {b.dout, const_cast<void*>(a.dout)},  {b.stats, const_cast<float*>(a.lse)},
        {b.dq, a.dq},                         {b.dk, a.dk},
        {b.dv, a.dv}};
    execute(b, pack);
}

std::string cudnn_sdpa_version() {
    const std::size_t v = cudnnGetVersion();  // major * 10000 + minor * 100 + patch (cuDNN 9)
    return "cuDNN " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100) +
           ", frontend " + std::to_string(CUDNN_FRONTEND_MAJOR_VERSION) + "." +
           std::to_string(CUDNN_FRONTEND_MINOR_VERSION);
}

#else

namespace {
constexpr const char* kAbsent = "rigel was built without the cudnn-frontend headers (scripts/stage_deps.sh)";
}

std::string cudnn_sdpa_support(const rigel::attention::Desc&) { return kAbsent; }
std::string cudnn_sdpa_backward_support(const rigel::attention::Desc&) { return kAbsent; }
void cudnn_sdpa_backward(const rigel::attention::Desc&, const rigel::attention::BackwardArgs&, cudaStream_t) {
    throw std::runtime_error(kAbsent);
}
void cudnn_sdpa_forward(const rigel::attention::Desc&, const rigel::attention::ForwardArgs&, cudaStream_t) {
    throw std::runtime_error(kAbsent);
}
std::string cudnn_sdpa_version() { return "absent"; }

#endif

}  // namespace rigel::cuda::vendor
