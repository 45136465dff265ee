// k05_cpu_threads: k04's packed kernel on every core.
// Run alone: rigel ladder --backend cpu --rungs k05_cpu_threads --dtype f32 --sizes 2048 --threads 16
//
// Adds over k04: parallelism, BLIS-style. All threads walk the same loop over
// blocks (MC rows of A, KC, NC columns of B). For each block they pack the
// shared panels together, each thread a slice, then wait at a barrier, then
// each computes its own part of the C block: a tm x tn grid of threads over
// the block's register tiles (MR rows x NR columns). Packing is done once in
// total, as in k04, not once per thread; the packed blocks are double-buffered,
// so one barrier per block is enough (the next block is packed into the other
// buffer while slower threads may still read this one). Every element of C has
// one owner thread, so the updates need no atomics.
// The threads are a pool created on first use and kept between calls (they
// spin briefly after a call, then sleep): creating them would cost 10-20 us
// each. Inside a call they wait for each other by spinning, not sleeping.
// Bottleneck: the FMA ports of every core, the shared L3/DRAM bandwidth for
// the packed reads, the all-core AVX-512 clock (lower than one core's), and
// the wait at each barrier for the slowest thread.
// Prediction: close to threads x k04 at N=2048 and above, within 10 % of
// OpenBLAS with the same thread count. Why the barrier spins and the pool's
// threads spin briefly between calls: with sleeping waiters (std::barrier)
// the H200 host stayed well short of OpenBLAS, and with sleeping threads
// between calls small f64 problems had medians far above their best times
// (calls that waited for woken threads).
// Measured: README.md, "The climb" and "2048 x 2048 x 2048" (k05_cpu_threads).
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "cpu/cpu_rungs.hpp"
#include "cpu/packed_gemm.hpp"

namespace rigel::cpu {
namespace {

// Threads created once and kept between calls. run() hands them a job and
// returns when all have finished it; the caller is worker 0. Between jobs a
// worker first spins for a moment (calls that follow each other closely, as
// in a timing loop, then start without a wake-up through the kernel, which on
// a virtual machine can cost far more than the spin) and then sleeps.
class WorkerPool {
public:
    ~WorkerPool() {
        {
            const std::lock_guard lk(m_);
            stop_.store(true, std::memory_order_release);
        }
        wake_.notify_all();
        for (auto& t : threads_) t.join();
    }

    // job must not throw: an exception would leave the others at a barrier.
    void run(int workers, const std::function<void(int)>& job) {
        {
            const std::lock_guard lk(m_);
            while (static_cast<int>(threads_.size()) < workers - 1) {
                const int index = static_cast<int>(threads_.size()) + 1;
                threads_.emplace_back(
                    [this, index, seen = generation_.load(std::memory_order_relaxed)] { loop(index, seen); });
            }
            job_ = &job;
            active_ = workers;
            pending_.store(workers - 1, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        job(0);
        for (int i = 0; i < kSpins && pending_.load(std::memory_order_acquire) != 0; ++i) _mm_pause();
        if (pending_.load(std::memory_order_acquire) != 0) {
            std::unique_lock lk(m_);
            done_.wait(lk, [&] { return pending_.load(std::memory_order_acquire) == 0; });
        }
    }

private:
    static constexpr int kSpins = 8192;  // some hundreds of microseconds of pause

    void loop(int index, std::uint64_t seen) {
        for (;;) {
            for (int i = 0; i < kSpins && generation_.load(std::memory_order_acquire) == seen &&
                            !stop_.load(std::memory_order_acquire);
                 ++i)
                _mm_pause();
            const std::function<void(int)>* job = nullptr;
            {
                std::unique_lock lk(m_);
                wake_.wait(lk, [&] {
                    return stop_.load(std::memory_order_relaxed) || generation_.load(std::memory_order_relaxed) != seen;
                });
                if (stop_.load(std::memory_order_relaxed)) return;
                seen = generation_.load(std::memory_order_relaxed);
                if (index >= active_) continue;
                job = job_;
            }
            (*job)(index);
            if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
                const std::lock_guard lk(m_);  // the caller checks pending_ under this lock
                done_.notify_one();
            }
        }
    }

    std::mutex m_;
    std::condition_variable wake_, done_;
    std::vector<std::thread> threads_;
    const std::function<void(int)>* job_ = nullptr;  // written under m_ before generation_ moves
    int active_ = 0;
    std::atomic<int> pending_{0};
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<bool> stop_{false};
};

// A barrier that spins: the threads wait only for the slowest one's packing
// or last tiles (microseconds), less than a sleep and wake-up through the
// kernel would take (std::barrier parks waiters on a futex after a short
// spin; with 16 barriers per 2048^3 call that could cost several percent).
// After a while it yields, so that more threads than cores still progress.
class SpinBarrier {
public:
    explicit SpinBarrier(int count) : count_(count) {}
    void arrive_and_wait() {
        const unsigned phase = phase_.load(std::memory_order_relaxed);
        if (arrived_.fetch_add(1, std::memory_order_acq_rel) == count_ - 1) {
            arrived_.store(0, std::memory_order_relaxed);
            phase_.fetch_add(1, std::memory_order_release);
            return;
        }
        int spins = 0;
        while (phase_.load(std::memory_order_acquire) == phase) {
            if (spins < kSpinsBeforeYield) {
                _mm_pause();
                ++spins;
            } else {
                std::this_thread::yield();
            }
        }
    }

private:
    static constexpr int kSpinsBeforeYield = 4096;  // tens of microseconds of pause
    const int count_;
    alignas(64) std::atomic<int> arrived_{0};
    alignas(64) std::atomic<unsigned> phase_{0};
};

// Rows of A packed per block: the block is shared, so it can be tall; the cap
// bounds the buffers (2 x 4096 x KC elements).
constexpr std::int64_t kMaxSharedRows = 4096;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct Grid {
    int tm = 1, tn = 1;
};

// The thread grid over one block's pm x pn register tiles: the largest share
// (in tiles) decides the time; among equal shares prefer the one whose thread
// touches the fewest packed rows + columns (less L2 traffic per thread).
Grid choose_grid(std::int64_t pm, std::int64_t pn, int mr, int nr, int threads) {
    Grid best;
    double best_cost = -1;
    for (int tm = 1; tm <= std::min<std::int64_t>(threads, pm); ++tm) {
        const int tn = static_cast<int>(std::min<std::int64_t>(threads / tm, pn));
        const double rows = static_cast<double>(ceil_div(pm, tm) * mr);
        const double cols = static_cast<double>(ceil_div(pn, tn) * nr);
        const double cost = rows * cols + 16.0 * (rows + cols);
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best = {tm, tn};
        }
    }
    return best;
}

// [begin, end) of part `i` of `count` equal parts of `total`.
std::pair<std::int64_t, std::int64_t> share(std::int64_t total, int i, int count) {
    return {total * i / count, total * (i + 1) / count};
}

// One pool and one pair of buffers for both types; one call at a time owns them.
struct Shared {
    std::mutex call_lock;
    WorkerPool pool;
    packed::PackBuffers buffers[2];
};

Shared& shared() {
    static Shared s;
    return s;
}

template <typename T>
void run_threads(const GemmProblem& p) {
    Shared& sh = shared();
    const std::lock_guard hold(sh.call_lock);

    const auto* a = static_cast<const T*>(p.a);
    const auto* b = static_cast<const T*>(p.b);
    auto* c = static_cast<T*>(p.c);
    const std::int64_t m = p.m, n = p.n, k = p.k;
    const packed::Kernel<T> ker = packed::active_kernel<T>();
    const std::int64_t mc_step = packed::even_block(m, kMaxSharedRows, ker.mr);
    const std::int64_t kc_step = packed::even_block(k, ker.kc, 1);
    const Grid g =
        choose_grid(ceil_div(mc_step, ker.mr), ceil_div(n, ker.nr), ker.mr, ker.nr, std::max(1, p.threads));
    // The shared B block is tn times k04's: each thread's columns of it are
    // about one k04 block (its L2 share), and there are tn times fewer rounds
    // of packing and barriers (8 per 2048^3 call on a 4 x 4 grid).
    const std::int64_t nc_step = packed::even_block(n, ker.nc * g.tn, ker.nr);
    const int workers = g.tm * g.tn;
    T* abuf[2];
    T* bbuf[2];
    for (int i = 0; i < 2; ++i) {
        abuf[i] = static_cast<T*>(sh.buffers[i].a(sizeof(T) * static_cast<std::size_t>(mc_step * kc_step)));
        bbuf[i] = static_cast<T*>(sh.buffers[i].b(sizeof(T) * static_cast<std::size_t>(kc_step * nc_step)));
    }
    SpinBarrier sync(workers);

    const std::function<void(int)> job = [&](int w) {
        const int ti = w / g.tn, tj = w % g.tn;
        int a_round = 0, b_round = 0;
        for (std::int64_t ic = 0; ic < m; ic += mc_step) {
            const std::int64_t mc = std::min(mc_step, m - ic);
            const std::int64_t pm = ceil_div(mc, ker.mr);
            for (std::int64_t pc = 0; pc < k; pc += kc_step, ++a_round) {
                const std::int64_t kc = std::min(kc_step, k - pc);
                const bool accumulate = pc > 0;  // the first KC block overwrites C
                T* ap = abuf[a_round % 2];
                {  // this worker's slice of the A panels
                    const auto [p0, p1] = share(pm, w, workers);
                    if (p1 > p0)
                        ker.pack_a(a + (ic + p0 * ker.mr) * k + pc, k, std::min(mc, p1 * ker.mr) - p0 * ker.mr, kc,
                                   ap + p0 * ker.mr * kc);
                }
                for (std::int64_t jc = 0; jc < n; jc += nc_step, ++b_round) {
                    const std::int64_t nc = std::min(nc_step, n - jc);
                    const std::int64_t pn = ceil_div(nc, ker.nr);
                    T* bp = bbuf[b_round % 2];
                    {  // this worker's slice of the B panels
                        const auto [q0, q1] = share(pn, w, workers);
                        if (q1 > q0)
                            ker.pack_b(b + pc * n + jc + q0 * ker.nr, n, kc, std::min(nc, q1 * ker.nr) - q0 * ker.nr,
                                       bp + q0 * ker.nr * kc);
                    }
                    // Everything this block needs is packed. The buffers packed
                    // next round are the other pair, last read two rounds ago,
                    // before every thread arrived here.
                    sync.arrive_and_wait();
                    const auto [r0, r1] = share(pm, ti, g.tm);
                    const auto [s0, s1] = share(pn, tj, g.tn);
                    for (std::int64_t ir = r0 * ker.mr; ir < std::min(mc, r1 * ker.mr); ir += ker.mr) {
                        const int mr = static_cast<int>(std::min<std::int64_t>(ker.mr, mc - ir));
                        const T* apanel = ap + ir * kc;
                        T* crow = c + (ic + ir) * n + jc;
                        for (std::int64_t jr = s0 * ker.nr; jr < std::min(nc, s1 * ker.nr); jr += ker.nr) {
                            const int nr = static_cast<int>(std::min<std::int64_t>(ker.nr, nc - jr));
                            ker.run(kc, apanel, bp + jr * kc, crow + jr, n, accumulate, mr, nr);
                        }
                    }
                }
            }
        }
    };
    sh.pool.run(workers, job);
}

}  // namespace

void k05_threads(const GemmProblem& p) {
    if (p.type == DType::f64)
        run_threads<double>(p);
    else
        run_threads<float>(p);
}

}  // namespace rigel::cpu
