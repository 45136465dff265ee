#include "dist/file_sync.hpp"

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rigel::dist {
namespace {

class FileSync final : public train::GradientSync {
public:
    FileSync(RankInfo r, double timeout_s) : r_(std::move(r)), timeout_s_(timeout_s) {}

    int world() const override { return r_.world; }
    int rank() const override { return r_.rank; }

    void sum(float* data, std::size_t n, void* stream) override {
        const Tensor t{data, n};
        sum_bucket(std::span<const Tensor>(&t, 1), stream);
    }

    void sum_bucket(std::span<const Tensor> tensors, void*) override {
        std::size_t total = 0;
        for (const Tensor& t : tensors) total += t.n;
        std::string mine(total * sizeof(float), '\0');
        std::size_t at = 0;
        for (const Tensor& t : tensors) {
            if (t.n) std::memcpy(mine.data() + at, t.data, t.n * sizeof(float));
            at += t.n * sizeof(float);
        }
        const std::vector<std::string> parts = exchange(mine, "a sum");
        std::size_t offset = 0;  // in floats, over the bucket
        for (const Tensor& t : tensors) {
            for (std::size_t i = 0; i < t.n; ++i) {
                double s = 0;
                for (const std::string& p : parts) {
                    float v;
                    std::memcpy(&v, p.data() + (offset + i) * sizeof(float), sizeof v);
                    s += static_cast<double>(v);
                }
                t.data[i] = static_cast<float>(s);
            }
            offset += t.n;
        }
    }

    void gather(void* data, std::size_t bytes_per_rank, void*) override {
        auto* bytes = static_cast<char*>(data);
        const std::string mine(bytes + static_cast<std::size_t>(r_.rank) * bytes_per_rank, bytes_per_rank);
        const std::vector<std::string> parts = exchange(mine, "a gather");
        for (std::size_t k = 0; k < parts.size(); ++k)
            if (k != static_cast<std::size_t>(r_.rank) && bytes_per_rank)
                std::memcpy(bytes + k * bytes_per_rank, parts[k].data(), bytes_per_rank);
    }

    bool any(bool local) override {
        bool result = false;
        for (const std::string& p : exchange(local ? "1" : "0", "a vote")) result = result || p == "1";
        return result;
    }

private:
    static std::string file_name(long long op, int rank) {
        return "sync_" + std::to_string(op) + "_rank" + std::to_string(rank);
    }

    // Every rank's part of the next collective, in rank order; each part the size of this rank's.
    std::vector<std::string> exchange(const std::string& mine, const char* what) {
        const long long op = op_++;
        publish(r_.rendezvous, file_name(op, r_.rank), mine);
        std::vector<std::string> parts;
        parts.reserve(static_cast<std::size_t>(r_.world));
        for (int k = 0; k < r_.world; ++k) {
            parts.push_back(k == r_.rank ? mine : wait_for(r_.rendezvous, file_name(op, k), timeout_s_));
            if (parts.back().size() != mine.size())
                throw std::runtime_error("rank " + std::to_string(k) + " sent " + std::to_string(parts.back().size()) +
                                         " bytes to " + what + " (collective " + std::to_string(op) + ") where rank " +
                                         std::to_string(r_.rank) + " sent " + std::to_string(mine.size()) +
                                         ": the ranks run different programs or shapes");
        }
        // Every rank has published this collective, so every rank has read all of the previous one's parts.
        if (op > 0) {
            std::error_code ec;
            std::filesystem::remove(std::filesystem::path(r_.rendezvous) / file_name(op - 1, r_.rank), ec);
        }
        return parts;
    }

    RankInfo r_;
    double timeout_s_;
    long long op_ = 0;
};

}  // namespace

std::unique_ptr<train::GradientSync> make_file_sync(const RankInfo& r, double timeout_s) {
    if (r.rendezvous.empty())
        throw std::invalid_argument("the ranks' file sums need `rigel launch`'s rendezvous folder (" +
                                    std::string(kRendezvousVar) + ")");
    return std::make_unique<FileSync>(r, timeout_s);
}

}  // namespace rigel::dist
