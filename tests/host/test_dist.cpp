// Host tests of the multi-GPU plumbing that needs no GPU: the rank's
// environment, the file rendezvous, `rigel launch`'s process handling, and
// the ZeRO-1 shards, `rigel fleet`'s steps.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/host_threads.hpp"
#include "dist/file_sync.hpp"
#include "dist/fleet.hpp"
#include "dist/launch.hpp"
#include "dist/partition.hpp"
#include "dist/rendezvous.hpp"
#include "temp_dir.hpp"

using namespace rigel::dist;

namespace {

// Sets (or clears) the four variables for one test and restores nothing:
// every test that reads them sets all four.
void set_rank_env(const char* rank, const char* world, const char* dir) {
    const auto put = [](const char* name, const char* v) { v ? setenv(name, v, 1) : unsetenv(name); };
    put(kRankVar, rank);
    put(kWorldVar, world);
    put(kLocalRankVar, nullptr);
    put(kRendezvousVar, dir);
}

std::filesystem::path fresh_dir(const std::string& name) {
    const auto d = std::filesystem::temp_directory_path() / (name + std::to_string(getpid()));
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    return d;
}

LaunchSpec spec(int nproc, std::vector<std::string> command) {
    LaunchSpec s;
    s.nproc = nproc;
    s.command = std::move(command);
    return s;
}

std::string read(const std::filesystem::path& p) {
    std::ifstream f(p);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

}  // namespace

TEST(DistRank, UnsetMeansOneProcessAndBadValuesAreRefused) {
    set_rank_env(nullptr, nullptr, nullptr);
    const RankInfo one = rank_from_env();
    EXPECT_EQ(one.rank, 0);
    EXPECT_EQ(one.world, 1);
    EXPECT_TRUE(one.rendezvous.empty());
    set_rank_env("1", "2", "/tmp/x");
    const RankInfo r = rank_from_env();
    EXPECT_EQ(r.rank, 1);
    EXPECT_EQ(r.local_rank, 1);
    EXPECT_EQ(r.rendezvous, "/tmp/x");
    set_rank_env("2", "2", "/tmp/x");
    EXPECT_THROW(rank_from_env(), std::invalid_argument);
    set_rank_env("0", "2", nullptr);
    EXPECT_THROW(rank_from_env(), std::invalid_argument);
    set_rank_env("zero", "2", "/tmp/x");
    EXPECT_THROW(rank_from_env(), std::invalid_argument);
    set_rank_env(nullptr, nullptr, nullptr);
}

TEST(DistRank, EachRankTakesItsShareOfTheHostsThreads) {
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    unsetenv("RIGEL_WORLD_SIZE");
    EXPECT_EQ(rigel::default_host_threads(), hw);
    setenv("RIGEL_WORLD_SIZE", "2", 1);
    EXPECT_EQ(rigel::default_host_threads(), std::max(1, hw / 2));
    setenv("RIGEL_WORLD_SIZE", "100000", 1);
    EXPECT_EQ(rigel::default_host_threads(), 1);
    setenv("RIGEL_WORLD_SIZE", "x", 1);  // not a count: all of them, as outside a launch
    EXPECT_EQ(rigel::default_host_threads(), hw);
    unsetenv("RIGEL_WORLD_SIZE");
}

TEST(DistRendezvous, AReaderWaitsForTheWholeFileAndTimesOut) {
    const auto dir = fresh_dir("rigel_rdv_test");
    std::string blob(128, '\0');
    for (std::size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<char>(i * 7);
    std::thread writer([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        publish(dir.string(), "nccl_id", blob);
    });
    EXPECT_EQ(wait_for(dir.string(), "nccl_id", 10.0), blob);
    writer.join();
    EXPECT_THROW(wait_for(dir.string(), "never", 0.05), std::runtime_error);
    std::filesystem::remove_all(dir);
}

TEST(DistLaunch, EveryRankRunsWithItsVariables) {
    const auto out = fresh_dir("rigel_launch_test");
    setenv("RIGEL_TEST_OUT", out.c_str(), 1);
    const LaunchResult r = launch(spec(3, {"sh", "-c",
                                           "echo $RIGEL_RANK $RIGEL_WORLD_SIZE $RIGEL_LOCAL_RANK "
                                           "$(test -d \"$RIGEL_RENDEZVOUS\" && echo dir) "
                                           "$(test \"$RIGEL_LAUNCH_ID\" = \"$(basename $RIGEL_RENDEZVOUS)\" && echo id) > "
                                           "$RIGEL_TEST_OUT/rank_$RIGEL_RANK"}));
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_EQ(r.first_failed, -1);
    for (int rank = 0; rank < 3; ++rank)
        EXPECT_EQ(read(out / ("rank_" + std::to_string(rank))),
                  std::to_string(rank) + " 3 " + std::to_string(rank) + " dir id\n");
    std::filesystem::remove_all(out);
}

TEST(DistLaunch, OneFailureStopsTheOthersAndIsReported) {
    const auto start = std::chrono::steady_clock::now();
    const LaunchResult r = launch(spec(3, {"sh", "-c", "if [ \"$RIGEL_RANK\" = 1 ]; then exit 3; fi; sleep 30"}));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.first_failed, 1);
    EXPECT_LT(took, 10.0);  // the sleepers were stopped, not waited for
    EXPECT_EQ(launch(spec(1, {"rigel-no-such-program"})).exit_code, 127);
    EXPECT_FALSE(check(spec(0, {"true"})).empty());
    EXPECT_FALSE(check(spec(2, {})).empty());
    LaunchSpec no_grace = spec(2, {"true"});
    no_grace.grace_seconds = -1;
    EXPECT_FALSE(check(no_grace).empty());
}

// Independent ranks (rigel fleet's): one failure stops no other, and the launch reports it after all end.
TEST(DistLaunch, IndependentRanksRunOnAfterAFailure) {
    const auto out = fresh_dir("rigel_launch_independent");
    setenv("RIGEL_TEST_OUT", out.c_str(), 1);
    LaunchSpec s = spec(3, {"sh", "-c", "if [ \"$RIGEL_RANK\" = 1 ]; then exit 3; fi; sleep 0.3; "
                                        "echo done > $RIGEL_TEST_OUT/rank_$RIGEL_RANK"});
    s.independent = true;
    const LaunchResult r = launch(s);
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.first_failed, 1);
    EXPECT_EQ(read(out / "rank_0"), "done\n");
    EXPECT_EQ(read(out / "rank_2"), "done\n");
    std::filesystem::remove_all(out);
}

// A rank that does not exit on SIGTERM (one blocked in a collective, here a
// shell that ignores it) is killed once the grace has passed: the launch
// ends, and reports the failure that started the stop.
TEST(DistLaunch, RanksThatIgnoreTheStopAreKilledAfterTheGrace) {
    LaunchSpec s = spec(3, {"sh", "-c", "if [ \"$RIGEL_RANK\" = 2 ]; then sleep 0.3; exit 5; fi; trap '' TERM; sleep 30"});
    s.grace_seconds = 0.5;
    const auto start = std::chrono::steady_clock::now();
    const LaunchResult r = launch(s);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 5);
    EXPECT_EQ(r.first_failed, 2);
    EXPECT_GE(took, 0.5);  // the grace was given
    EXPECT_LT(took, 5.0);  // and no more
}

namespace {

// Whether process `pid` has ended (gone, or a zombie nobody has reaped yet).
bool ended(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const std::size_t paren = line.rfind(')');
    return paren == std::string::npos || line.substr(paren + 2, 1) == "Z";
}

}  // namespace

// A launcher killed outright (SIGKILL: no handler runs) leaves no rank
// running: each gets SIGTERM from the kernel when it dies (PR_SET_PDEATHSIG).
TEST(DistLaunch, RanksStopWhenTheLauncherDies) {
    const auto out = fresh_dir("rigel_launch_orphans");
    const pid_t launcher = fork();
    ASSERT_GE(launcher, 0);
    if (launcher == 0) {
        // Each rank writes its pid, then becomes the sleep (exec keeps the pid and the death signal).
        setenv("RIGEL_TEST_OUT", out.c_str(), 1);
        launch(spec(2, {"sh", "-c", "echo $$ > $RIGEL_TEST_OUT/pid_$RIGEL_RANK.tmp && "
                                    "mv $RIGEL_TEST_OUT/pid_$RIGEL_RANK.tmp $RIGEL_TEST_OUT/pid_$RIGEL_RANK && "
                                    "exec sleep 30"}));
        _exit(0);
    }
    std::vector<pid_t> ranks;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (int r = 0; r < 2; ++r) {
        const auto file = out / ("pid_" + std::to_string(r));
        while (!std::filesystem::exists(file) && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        const std::string text = read(file);
        if (text.empty())
            ADD_FAILURE() << "rank " << r << " never started";
        else
            ranks.push_back(static_cast<pid_t>(std::stol(text)));
    }
    kill(launcher, SIGKILL);
    waitpid(launcher, nullptr, 0);
    for (const pid_t pid : ranks) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!ended(pid) && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        EXPECT_TRUE(ended(pid)) << "rank process " << pid << " outlived its launcher";
        if (!ended(pid)) kill(pid, SIGKILL);
    }
    std::filesystem::remove_all(out);
}

TEST(DistFleet, ProbesThenEachSuiteIntoOneFolder) {
    const std::vector<FleetStep> steps = fleet_steps("out/f", {"bench", "bench_llm"}, true);
    ASSERT_EQ(steps.size(), 3u);
    EXPECT_EQ(steps[0].args, (std::vector<std::string>{"probe", "all", "--out", "out/f"}));
    EXPECT_EQ(steps[1].args, (std::vector<std::string>{"ladder", "--suite", "bench", "--out", "out/f"}));
    EXPECT_EQ(steps[2].what, "ladder --suite bench_llm");
    EXPECT_EQ(fleet_steps("o", {"bench"}, false).size(), 1u);
}

TEST(DistFleet, EveryStepRunsAndTheFailuresAreNamed) {
    const auto out = fresh_dir("rigel_fleet_test");
    const std::string log = (out / "log").string();
    // /bin/sh as the program: each step's arguments are a script and its $0.
    const auto step = [&](const std::string& what, const std::string& script) {
        return FleetStep{what, {"-c", script + "; echo " + what + " >> " + log, what}};
    };
    FleetResult r = run_fleet("/bin/sh", {step("one", "true"), step("two", "true")});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_TRUE(r.failed.empty());
    EXPECT_EQ(read(out / "log"), "one\ntwo\n");
    // A failing step (a GPU's probe that fails) leaves the later ones to run; the first failure's code is kept.
    r = run_fleet("/bin/sh", {FleetStep{"bad", {"-c", "exit 3"}}, step("three", "true"),
                              FleetStep{"worse", {"-c", "exit 5"}}, step("four", "true")});
    EXPECT_EQ(r.exit_code, 3);
    EXPECT_EQ(r.failed, (std::vector<std::string>{"bad (exit 3)", "worse (exit 5)"}));
    EXPECT_EQ(r.stop_signal, 0);
    EXPECT_EQ(read(out / "log"), "one\ntwo\nthree\nfour\n");
    // A step ended by another signal (a crash) is a failure like any other ...
    r = run_fleet("/bin/sh", {FleetStep{"crash", {"-c", "kill -USR1 $$"}}, step("five", "true")});
    EXPECT_EQ(r.exit_code, 128 + SIGUSR1);
    EXPECT_EQ(read(out / "log"), "one\ntwo\nthree\nfour\nfive\n");
    // ... but a step that a stop signal ended (or that ended with its code, as rigel does) stops the run.
    r = run_fleet("/bin/sh", {FleetStep{"stopped", {"-c", "exit 130"}}, step("six", "true")});
    EXPECT_EQ(r.stop_signal, SIGINT);
    EXPECT_EQ(r.exit_code, 130);
    r = run_fleet("/bin/sh", {FleetStep{"killed", {"-c", "kill -TERM $$"}}, step("seven", "true")});
    EXPECT_EQ(r.stop_signal, SIGTERM);
    EXPECT_EQ(read(out / "log"), "one\ntwo\nthree\nfour\nfive\n");  // neither six nor seven ran
    EXPECT_THROW(run_fleet("/rigel-no-such-program", {step("x", "true")}), std::runtime_error);
    std::filesystem::remove_all(out);
}

TEST(DistFleet, AStopSignalToTheFleetEndsTheStepAndStartsNoOther) {
    const auto out = fresh_dir("rigel_fleet_stop");
    const std::string log = (out / "log").string();
    // The step signals the fleet (this test process), as a terminal's Ctrl-C or the launcher signals
    // their group, and then ends well: the fleet noted the signal, waited for the step, and starts no other.
    const FleetResult r = run_fleet(
        "/bin/sh", {FleetStep{"first", {"-c", "kill -HUP $PPID; sleep 0.2; echo first >> " + log, "first"}},
                    FleetStep{"second", {"-c", "echo second >> " + log, "second"}}});
    EXPECT_EQ(r.stop_signal, SIGHUP);
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_TRUE(r.failed.empty());
    EXPECT_EQ(read(out / "log"), "first\n");
    std::filesystem::remove_all(out);
}

TEST(DistPartition, ShardsCoverTheVectorInRankOrderOnAlignedBoundaries) {
    for (std::size_t n : {0ul, 1ul, 7ul, 1000ul, 124'475'904ul})
        for (int world : {1, 2, 3, 8})
            for (std::size_t align : {1ul, 4ul, 8ul}) {
                std::size_t next = 0;
                for (int r = 0; r < world; ++r) {
                    const Range s = shard(n, world, r, align);
                    EXPECT_EQ(s.begin, next) << n << " " << world << " " << r;
                    EXPECT_TRUE(s.begin % align == 0 || s.begin == n);
                    EXPECT_LE(s.size(), (n + world - 1) / world + align);
                    next = s.end;
                }
                EXPECT_EQ(next, n);
            }
    EXPECT_THROW(shard(10, 2, 2, 4), std::invalid_argument);
    EXPECT_THROW(shard(10, 0, 0, 4), std::invalid_argument);
}

// -- the reference backend's sums between processes (dist/file_sync.hpp), ranks as threads here ----

namespace {

RankInfo file_rank(int rank, int world, const std::string& dir) {
    RankInfo r;
    r.rank = rank;
    r.world = world;
    r.local_rank = rank;
    r.rendezvous = dir;
    return r;
}

}  // namespace

TEST(FileSync, SumsGathersAndVotesAlikeOnEveryRank) {
    const rigel::test::TempDir dir;
    constexpr int kWorld = 3;
    std::vector<std::vector<float>> sums(kWorld), gathered(kWorld);
    std::vector<int> votes(kWorld), quiet(kWorld);
    std::vector<std::thread> ranks;
    for (int r = 0; r < kWorld; ++r)
        ranks.emplace_back([&, r] {
            const auto sync = make_file_sync(file_rank(r, kWorld, dir.path().string()), 30.0);
            // Two tensors as one bucket: rank r holds r + i and 0.1 (r + 1).
            std::vector<float> a{float(r), float(r + 1), float(r + 2)}, b{0.1f * float(r + 1)};
            const rigel::train::GradientSync::Tensor bucket[] = {{a.data(), a.size()}, {b.data(), b.size()}};
            sync->sum_bucket(bucket, nullptr);
            sums[r] = a;
            sums[r].push_back(b[0]);
            // Rank r's 2 floats at [2r, 2r + 2), the rest garbage until the gather.
            std::vector<float> g(2 * kWorld, -1.0f);
            g[2 * r] = float(10 * r);
            g[2 * r + 1] = float(10 * r + 1);
            sync->gather(g.data(), 2 * sizeof(float), nullptr);
            gathered[r] = g;
            votes[r] = sync->any(r == 1);
            quiet[r] = sync->any(false);
        });
    for (auto& t : ranks) t.join();
    for (int r = 0; r < kWorld; ++r) {
        // 0 + 1 + 2, 1 + 2 + 3, 2 + 3 + 4; the fractions summed in double in rank order, rounded once.
        EXPECT_EQ(sums[r][0], 3.0f);
        EXPECT_EQ(sums[r][1], 6.0f);
        EXPECT_EQ(sums[r][2], 9.0f);
        EXPECT_EQ(sums[r][3], static_cast<float>(double(0.1f * 1.0f) + double(0.1f * 2.0f) + double(0.1f * 3.0f)));
        EXPECT_EQ(sums[r], sums[0]);  // the same bits on every rank
        EXPECT_EQ(gathered[r], (std::vector<float>{0, 1, 10, 11, 20, 21}));
        EXPECT_EQ(votes[r], 1);
        EXPECT_EQ(quiet[r], 0);
    }
    // Each rank keeps only its file of the last collective (the launcher removes the folder).
    int left = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
        ++left;
        EXPECT_EQ(e.path().filename().string().rfind("sync_3_rank", 0), 0u) << e.path();
    }
    EXPECT_EQ(left, kWorld);
}

TEST(FileSync, RefusesMismatchedPartsAndALaunchWithoutRendezvous) {
    const rigel::test::TempDir dir;
    std::string error;
    std::thread other([&] {
        const auto sync = make_file_sync(file_rank(1, 2, dir.path().string()), 30.0);
        std::vector<float> x(3, 1.0f);
        try {
            sync->sum(x.data(), x.size(), nullptr);
        } catch (const std::runtime_error& e) {
            error = e.what();
        }
    });
    const auto sync = make_file_sync(file_rank(0, 2, dir.path().string()), 30.0);
    std::vector<float> y(2, 1.0f);
    EXPECT_THROW(sync->sum(y.data(), y.size(), nullptr), std::runtime_error);
    other.join();
    EXPECT_NE(error.find("rank 0 sent 8 bytes"), std::string::npos) << error;
    EXPECT_THROW(make_file_sync(RankInfo{}), std::invalid_argument);
    // A rank that never publishes: the wait ends with the file's name.
    std::filesystem::create_directory(dir / "alone");
    const auto alone = make_file_sync(file_rank(0, 2, (dir / "alone").string()), 0.05);
    float z = 1.0f;
    try {
        alone->sum(&z, 1, nullptr);
        ADD_FAILURE() << "no throw";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("sync_0_rank1"), std::string::npos) << e.what();
    }
}
