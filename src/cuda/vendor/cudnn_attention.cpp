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
    std::shared_ptr<fe::graph::Tensor_attributes> q, k, v, o, stats;
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

Built build(const Desc& d) {
    Built b;
    b.graph = std::make_shared<fe::graph::Graph>();
    fe::graph::Graph& g = *b.graph;
    g.set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    b.q = token_tensor(g, "Q", d, d.ldq);
    b.k = token_tensor(g, "K", d, d.ldk);
    b.v = token_tensor(g, "V", d, d.ldv);
    auto options = fe::graph::SDPA_attributes()
                       .set_name("sdpa")
                       .set_generate_stats(true)
                       .set_causal_mask(d.causal)
                       .set_attn_scale(d.scale);
    auto [o, stats] = g.sdpa(b.q, b.k, b.v, options);
    o->set_output(true).set_dim({d.batch, d.heads, d.seq, d.head_dim}).set_stride({d.seq * d.ldo, d.head_dim, d.ldo, 1});
    stats->set_output(true).set_data_type(fe::DataType_t::FLOAT);
    b.o = o;
    b.stats = stats;
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
Built& built(const Desc& d) {
    static std::mutex lock;
    static std::map<Key, Built> graphs;
    const std::lock_guard<std::mutex> hold(lock);
    const Key key = key_of(d);
    auto it = graphs.find(key);
    if (it == graphs.end()) it = graphs.emplace(key, build(d)).first;
    return it->second;
}

}  // namespace

std::string cudnn_sdpa_support(const Desc& desc) {
    try {
        return built(rigel::attention::with_defaults(desc)).refusal;
    } catch (const std::exception& e) {
        return e.what();
    }
}

void cudnn_sdpa_forward(const Desc& desc, const rigel::attention::ForwardArgs& a, cudaStream_t stream) {
    const Desc d = rigel::attention::with_defaults(desc);
    Built& b = built(d);
    if (!b.refusal.empty()) throw std::runtime_error(b.refusal);
    if (a.lse == nullptr) throw std::invalid_argument("cuDNN's training graph writes the statistics: lse is null");
    if (const cudnnStatus_t s = cudnnSetStream(handle(), stream); s != CUDNN_STATUS_SUCCESS)
        throw std::runtime_error(std::string("cudnnSetStream failed: ") + cudnnGetErrorString(s));
    std::unordered_map<std::shared_ptr<fe::graph::Tensor_attributes>, void*> pack{
        {b.q, const_cast<void*>(a.q)}, {b.k, const_cast<void*>(a.k)}, {b.v, const_cast<void*>(a.v)},
        {b.o, a.o},                    {b.stats, a.lse}};
    if (auto e = b.graph->execute(handle(), pack, b.workspace); !e.is_good())
        throw std::runtime_error("cuDNN SDPA failed: " + e.get_message());
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
void cudnn_sdpa_forward(const rigel::attention::Desc&, const rigel::attention::ForwardArgs&, cudaStream_t) {
    throw std::runtime_error(kAbsent);
}
std::string cudnn_sdpa_version() { return "absent"; }

#endif

}  // namespace rigel::cuda::vendor
