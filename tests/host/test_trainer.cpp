// The training loop (src/train/trainer.hpp) on the float64 reference backend
// and a tiny model: the loss falls on learnable data; a run stopped halfway,
// checkpointed and resumed ends bit for bit where one uninterrupted run does;
// a stop request ends the run after its step, checkpointed, on every rank;
// bad options, files, folders and checkpoints (another schedule, other data)
// are refused before any step, and a fresh run never writes over a checkpoint.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "train/checkpoint.hpp"
#include "train/trainer.hpp"

using namespace rigel::train;
namespace fs = std::filesystem;

namespace {

constexpr Gpt2Config kTiny{.layers = 2, .heads = 2, .channels = 16, .max_seq_len = 16, .vocab_size = 32,
                           .padded_vocab_size = 32};

class TrainerTest : public ::testing::Test {
public:  // the data-parallel tests drive it from their rank threads
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("rigel_trainer_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
                                            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        // A learnable stream: each token determined by the one before.
        std::vector<std::uint16_t> tokens(4000);
        tokens[0] = 1;
        for (std::size_t i = 1; i < tokens.size(); ++i) tokens[i] = static_cast<std::uint16_t>((tokens[i - 1] * 7 + 3) % 32);
        write_token_file(dir_ / "train.bin", tokens);
        write_token_file(dir_ / "val.bin", std::vector<std::uint16_t>(tokens.begin() + 100, tokens.begin() + 600));
    }
    void TearDown() override { fs::remove_all(dir_); }

    TrainOptions options() const {
        TrainOptions o;
        o.train_file = dir_ / "train.bin";
        o.val_file = dir_ / "val.bin";
        o.model = kTiny;
        o.batch = 2;
        o.seq = 8;
        o.steps = 8;
        o.lr = 1e-2;
        o.warmup = 2;
        o.val_batches = 2;
        return o;
    }
    ModelState run(const TrainOptions& o, std::vector<StepLog>* logs = nullptr) {
        auto backend = make_reference_backend(o.model);
        return train(o, *backend, [&](const StepLog& l) { if (logs) logs->push_back(l); });
    }
    fs::path dir_;
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_F(TrainerTest, LossFallsOnLearnableData) {
    TrainOptions o = options();
    o.steps = 40;
    o.accumulation = 2;
    std::vector<StepLog> logs;
    run(o, &logs);
    ASSERT_EQ(logs.size(), 40u);
    EXPECT_NEAR(logs.front().loss, std::log(32.0), 0.1);
    EXPECT_LT(logs.back().loss, logs.front().loss - 1.5);
    ASSERT_TRUE(logs.back().has_val);
    EXPECT_LT(logs.back().val_loss, std::log(32.0) - 1.5);
    EXPECT_DOUBLE_EQ(logs[0].lr, 1e-2 / 2);  // warm-up
    for (const StepLog& l : logs) EXPECT_TRUE(std::isfinite(l.grad_norm) && l.grad_norm > 0);
}

TEST_F(TrainerTest, StoppedAndResumedEqualsOneRunBitForBit) {
    TrainOptions whole = options();
    whole.checkpoint = dir_ / "whole.ckpt";
    const ModelState a = run(whole);

    TrainOptions half = options();
    half.checkpoint = dir_ / "half.ckpt";
    half.stop_after = 4;
    std::vector<StepLog> first;
    run(half, &first);
    ASSERT_EQ(first.size(), 4u);
    EXPECT_TRUE(first.back().checkpointed);
    EXPECT_EQ(load_checkpoint(half.checkpoint).step, 4);
    half.stop_after = 0;
    half.resume = true;
    std::vector<StepLog> second;
    const ModelState b = run(half, &second);
    ASSERT_EQ(second.size(), 4u);
    EXPECT_EQ(second.front().step, 5);
    EXPECT_TRUE(same_bits(a.params, b.params));
    EXPECT_TRUE(same_bits(a.m, b.m));
    EXPECT_TRUE(same_bits(a.v, b.v));
    const Checkpoint ca = load_checkpoint(whole.checkpoint), cb = load_checkpoint(half.checkpoint);
    EXPECT_EQ(ca.step, 8);
    EXPECT_EQ(ca.loader, cb.loader);
    EXPECT_TRUE(same_bits(ca.parameters, cb.parameters));
}

TEST_F(TrainerTest, InitOnlyWritesStepZeroThatAResumeStartsFrom) {
    TrainOptions init = options();
    init.checkpoint = dir_ / "init.ckpt";
    init.init_only = true;
    std::vector<StepLog> none;
    run(init, &none);
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(load_checkpoint(init.checkpoint).step, 0);
    TrainOptions from = options();
    from.checkpoint = init.checkpoint;
    from.resume = true;
    const ModelState resumed = run(from);
    TrainOptions fresh = options();
    const ModelState direct = run(fresh);
    EXPECT_TRUE(same_bits(resumed.params, direct.params));
}

TEST_F(TrainerTest, RefusesBadInputBeforeAnyStepAndNeverOverwritesACheckpoint) {
    TrainOptions o = options();
    o.checkpoint = dir_ / "run.ckpt";
    o.stop_after = 2;
    run(o);
    std::ifstream in(o.checkpoint, std::ios::binary);
    const std::vector<char> before((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto refused = [&](TrainOptions bad, const std::string& part) {
        int steps = 0;
        auto backend = make_reference_backend(bad.model);
        try {
            train(bad, *backend, [&](const StepLog&) { ++steps; });
            ADD_FAILURE() << "accepted; expected a refusal naming '" << part << "'";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
        }
        EXPECT_EQ(steps, 0);
    };
    refused(o, "exists: pass --resume");  // a fresh run over an existing checkpoint
    TrainOptions other = o;
    other.resume = true;
    other.batch = 3;
    refused(other, "other options");
    other = o;
    other.resume = true;
    other.model.layers = 3;
    refused(other, "layers");
    other = o;
    other.train_file = dir_ / "missing.bin";
    other.checkpoint.clear();
    refused(other, "missing.bin");
    other = o;
    other.seq = 17;
    refused(other, "exceeds the model's context");
    other = o;
    other.resume = true;
    other.stop_after = 2;
    refused(other, "nothing left");
    // The schedule and the optimizer's settings are the run's: resumed with
    // others it would not end where one run ends.
    other = o;
    other.resume = true;
    other.steps = 12;
    refused(other, "other options");
    other = o;
    other.resume = true;
    other.lr = 2e-2;
    refused(other, "other options");
    other = o;
    other.resume = true;
    other.adamw.weight_decay = 0.05;
    refused(other, "other options");
    // Other tokens under the same name and of the same count: the hash tells them apart.
    std::vector<std::uint16_t> shuffled(4000);
    for (std::size_t i = 0; i < shuffled.size(); ++i) shuffled[i] = static_cast<std::uint16_t>((i * 5 + 1) % 32);
    fs::create_directories(dir_ / "other");
    write_token_file(dir_ / "other" / "train.bin", shuffled);
    other = o;
    other.resume = true;
    other.train_file = dir_ / "other" / "train.bin";
    refused(other, "other options");
    // A validation file too short for one batch of 2 x 8 tokens: refused now, not after the last step.
    write_token_file(dir_ / "short_val.bin", std::vector<std::uint16_t>(10, 1));
    other = o;
    other.checkpoint.clear();
    other.val_file = dir_ / "short_val.bin";
    refused(other, "needs 17");
    // A checkpoint folder that exists but cannot be written: refused now, not at the first checkpoint.
    // (Root writes into a read-only folder; /proc takes no file from anyone.)
    const fs::path read_only = dir_ / "read_only";
    fs::create_directories(read_only);
    fs::permissions(read_only, fs::perms::owner_read | fs::perms::owner_exec);
    other = o;
    other.checkpoint = (geteuid() == 0 ? fs::path("/proc") : read_only) / "run.ckpt";
    refused(other, "cannot be written");
    fs::permissions(read_only, fs::perms::owner_all);
    std::ifstream again(o.checkpoint, std::ios::binary);
    const std::vector<char> after((std::istreambuf_iterator<char>(again)), std::istreambuf_iterator<char>());
    EXPECT_EQ(before, after);
}

// A stop request (`rigel train run`: SIGINT or SIGTERM) ends the run after the
// step in progress, as --max-seconds does: validated and checkpointed there,
// so that --resume continues it.
TEST_F(TrainerTest, AStopRequestEndsTheRunAfterItsStepCheckpointed) {
    TrainOptions o = options();
    o.checkpoint = dir_ / "stopped.ckpt";
    int asked = 0;
    o.should_stop = [&] { return ++asked >= 2; };
    std::vector<StepLog> logs;
    run(o, &logs);
    ASSERT_EQ(logs.size(), 2u);
    EXPECT_EQ(asked, 2);
    EXPECT_TRUE(logs.back().checkpointed);
    EXPECT_TRUE(logs.back().has_val);
    EXPECT_EQ(load_checkpoint(o.checkpoint).step, 2);
    // Resumed, it ends where one uninterrupted run ends.
    o.should_stop = nullptr;
    o.resume = true;
    std::vector<StepLog> rest;
    const ModelState resumed = run(o, &rest);
    ASSERT_EQ(rest.size(), 6u);
    EXPECT_EQ(rest.front().step, 3);
    const ModelState whole = run(options());
    EXPECT_TRUE(same_bits(resumed.params, whole.params));
}

// --profile turns the backend's timing on once, before the second step (the
// first warms up); without it, never.
TEST_F(TrainerTest, ProfilingStartsAtTheSecondStepOnlyWhenAskedFor) {
    class Recording final : public TrainBackend {
    public:
        explicit Recording(const Gpt2Config& c) : inner_(make_reference_backend(c)) {}
        std::string name() const override { return "recording"; }
        void load(const ModelState& s) override { inner_->load(s); }
        ModelState save() override { return inner_->save(); }
        StepStats step(std::span<const Batch> micro, double lr, std::int64_t t, const TrainOptions& o) override {
            steps_seen.push_back({t, profiling});
            return inner_->step(micro, lr, t, o);
        }
        double eval_loss(const Batch& b, const TrainOptions& o) override { return inner_->eval_loss(b, o); }
        void set_profiling(bool on) override {
            profiling = on;
            ++calls;
        }
        std::vector<std::pair<std::int64_t, bool>> steps_seen;
        bool profiling = false;
        int calls = 0;

    private:
        std::unique_ptr<TrainBackend> inner_;
    };
    for (const bool asked : {false, true}) {
        TrainOptions o = options();
        o.steps = 4;
        o.profile = asked;
        Recording backend(o.model);
        train(o, backend, [](const StepLog&) {});
        ASSERT_EQ(backend.steps_seen.size(), 4u);
        EXPECT_EQ(backend.calls, asked ? 1 : 0);
        for (const auto& [t, profiled] : backend.steps_seen) EXPECT_EQ(profiled, asked && t >= 2) << "step " << t;
    }
}

namespace {

// Ranks as threads: a sum is three meetings (reset, add, read back).
class ThreadSync final : public GradientSync {
public:
    struct Shared {
        explicit Shared(int world) : meet(world) {}
        std::barrier<> meet;
        std::mutex lock;
        std::vector<double> total;
        std::vector<unsigned char> gathered;
    };
    ThreadSync(Shared& s, int world, int rank) : s_(s), world_(world), rank_(rank) {}
    int world() const override { return world_; }
    int rank() const override { return rank_; }
    void sum(float* data, std::size_t n, void*) override {
        if (rank_ == 0) s_.total.assign(n, 0.0);
        s_.meet.arrive_and_wait();
        {
            const std::lock_guard<std::mutex> g(s_.lock);
            for (std::size_t i = 0; i < n; ++i) s_.total[i] += data[i];
        }
        s_.meet.arrive_and_wait();
        for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<float>(s_.total[i]);
        s_.meet.arrive_and_wait();
    }
    void gather(void* data, std::size_t bytes_per_rank, void*) override {
        auto* bytes = static_cast<unsigned char*>(data);
        if (rank_ == 0) s_.gathered.assign(bytes_per_rank * static_cast<std::size_t>(world_), 0);
        s_.meet.arrive_and_wait();
        std::copy(bytes + rank_ * bytes_per_rank, bytes + (rank_ + 1) * bytes_per_rank,
                  s_.gathered.begin() + static_cast<std::ptrdiff_t>(rank_ * bytes_per_rank));
        s_.meet.arrive_and_wait();
        std::copy(s_.gathered.begin(), s_.gathered.end(), bytes);
        s_.meet.arrive_and_wait();
    }
    bool any(bool local) override {
        float f = local ? 1.0f : 0.0f;
        sum(&f, 1, nullptr);
        return f > 0;
    }

private:
    Shared& s_;
    int world_, rank_;
};

// Two ranks as threads, each training with options() adjusted by `adjust`.
template <class Fixture, class Adjust>
void run_two_ranks(Fixture& f, Adjust adjust, ModelState (&states)[2], std::vector<StepLog> (&logs)[2]) {
    ThreadSync::Shared shared(2);
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
        ranks.emplace_back([&, r] {
            ThreadSync sync(shared, 2, r);
            TrainOptions o = f.options();
            o.sync = &sync;
            adjust(o, r);
            states[r] = f.run(o, &logs[r]);
        });
    for (std::thread& t : ranks) t.join();
}

}  // namespace

// Data parallelism: two ranks with one micro-batch each see the batches one
// process sees with an accumulation of 2 and end where it ends, within the
// rounding of where the average is taken (the reference backend sums its own
// micro-batches in float64, the ranks' sums meet in fp32); only rank 0 writes
// the checkpoint, and its options resume one process with the same global batch.
TEST_F(TrainerTest, TwoRanksMatchOneProcessWithTwiceTheAccumulation) {
    TrainOptions one = options();
    one.accumulation = 2;
    one.stop_after = 6;
    std::vector<StepLog> one_logs;
    const ModelState single = run(one, &one_logs);

    ModelState states[2];
    std::vector<StepLog> logs[2];
    run_two_ranks(*this, [&](TrainOptions& o, int) {
        o.checkpoint = dir_ / "dp.ckpt";
        o.stop_after = 6;  // the rest in one process, below
    }, states, logs);

    EXPECT_TRUE(same_bits(states[0].params, states[1].params));  // the ranks never drift apart
    ASSERT_EQ(states[0].params.size(), single.params.size());
    double worst = 0;
    for (std::size_t i = 0; i < single.params.size(); ++i)
        worst = std::max(worst, std::fabs(static_cast<double>(states[0].params[i]) - single.params[i]));
    EXPECT_LT(worst, 1e-5);
    ASSERT_EQ(logs[0].size(), one_logs.size());
    for (std::size_t s = 0; s < one_logs.size(); ++s) EXPECT_NEAR(logs[0][s].loss, one_logs[s].loss, 1e-5);
    EXPECT_TRUE(logs[0].back().checkpointed);
    EXPECT_FALSE(logs[1].back().checkpointed);

    // The checkpoint resumes in one process with accumulation 2 (the same global batch).
    TrainOptions more = options();
    more.accumulation = 2;
    more.checkpoint = dir_ / "dp.ckpt";
    more.resume = true;
    more.stop_after = 6;
    EXPECT_THROW(run(more), std::invalid_argument);  // nothing left before step 6
    more.stop_after = 0;
    TrainOptions wrong = more;
    wrong.accumulation = 1;
    EXPECT_THROW(run(wrong), std::invalid_argument);  // another global batch
    std::vector<StepLog> resumed;
    run(more, &resumed);
    ASSERT_EQ(resumed.size(), 2u);
    EXPECT_EQ(resumed.front().step, 7);
}

// --max-seconds under several ranks: the ranks stop at the same step (any
// rank past the limit stops all), so none is left waiting in a sum.
TEST_F(TrainerTest, RanksStopTogetherAtTheTimeLimit) {
    ModelState states[2];
    std::vector<StepLog> logs[2];
    // Rank 1 is out of time at once; rank 0 would run every step.
    run_two_ranks(*this, [](TrainOptions& o, int r) { o.max_seconds = r == 1 ? 1e-9 : 1e9; }, states, logs);
    EXPECT_EQ(logs[0].size(), 1u);
    EXPECT_EQ(logs[1].size(), 1u);
}

// A stop request under several ranks: rank 1 alone is asked (a signal that
// reached one process), and both stop after step 2, checkpointed.
TEST_F(TrainerTest, RanksStopTogetherWhenOneIsAskedTo) {
    ModelState states[2];
    std::vector<StepLog> logs[2];
    run_two_ranks(*this, [&](TrainOptions& o, int r) {
        o.checkpoint = dir_ / "stop.ckpt";
        o.should_stop = [r, asked = 0]() mutable { return r == 1 && ++asked >= 2; };
    }, states, logs);
    ASSERT_EQ(logs[0].size(), 2u);
    ASSERT_EQ(logs[1].size(), 2u);
    EXPECT_TRUE(logs[0].back().checkpointed);
    EXPECT_EQ(load_checkpoint(dir_ / "stop.ckpt").step, 2);
    EXPECT_TRUE(same_bits(states[0].params, states[1].params));
}

// A fresh run over an existing checkpoint under several ranks: every rank
// refuses (not rank 0 alone, which would leave the others waiting in the
// first step's sum), before any step.
TEST_F(TrainerTest, EveryRankRefusesAnExistingCheckpoint) {
    TrainOptions first = options();
    first.checkpoint = dir_ / "taken.ckpt";
    first.stop_after = 1;
    run(first);
    ThreadSync::Shared shared(2);
    int steps[2] = {0, 0};
    std::string refusals[2];
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
        ranks.emplace_back([&, r] {
            ThreadSync sync(shared, 2, r);
            TrainOptions o = options();
            o.checkpoint = first.checkpoint;
            o.sync = &sync;
            auto backend = make_reference_backend(o.model);
            try {
                train(o, *backend, [&](const StepLog&) { ++steps[r]; });
            } catch (const std::invalid_argument& e) {
                refusals[r] = e.what();
            }
        });
    for (std::thread& t : ranks) t.join();
    for (int r = 0; r < 2; ++r) {
        EXPECT_NE(refusals[r].find("exists: pass --resume"), std::string::npos) << r << ": " << refusals[r];
        EXPECT_EQ(steps[r], 0) << r;
    }
}

// ZeRO stage 1: with the optimizer's state sharded, two ranks end bit for bit
// where two unsharded ranks end (AdamW is element by element, the gathers
// copy), and the checkpoint, whose moments are gathered from both ranks,
// equals the unsharded run's.
TEST_F(TrainerTest, ShardedOptimizerStateMatchesTheReplicatedOne) {
    ModelState plain[2], sharded[2];
    std::vector<StepLog> plain_logs[2], sharded_logs[2];
    run_two_ranks(*this, [&](TrainOptions& o, int) { o.checkpoint = dir_ / "plain.ckpt"; }, plain, plain_logs);
    run_two_ranks(*this, [&](TrainOptions& o, int) {
        o.checkpoint = dir_ / "sharded.ckpt";
        o.shard_optimizer = true;
    }, sharded, sharded_logs);
    for (int r = 0; r < 2; ++r) {
        EXPECT_TRUE(same_bits(sharded[r].params, plain[r].params)) << r;
        EXPECT_TRUE(same_bits(sharded[r].m, plain[r].m)) << r;
        EXPECT_TRUE(same_bits(sharded[r].v, plain[r].v)) << r;
    }
    const Checkpoint a = load_checkpoint(dir_ / "plain.ckpt"), b = load_checkpoint(dir_ / "sharded.ckpt");
    EXPECT_TRUE(same_bits(a.first_moment, b.first_moment));
    EXPECT_TRUE(same_bits(a.second_moment, b.second_moment));
    EXPECT_TRUE(same_bits(a.parameters, b.parameters));
}
