// Attention's float64 reference and verification gate (reference.hpp).
//
// The allowances, per query row i of a head (u = 2^-24, fp32's unit roundoff;
// ub = 2^-8, bf16's; acc(n) = max(2 n u, 16 u), the ladder's bound on an fp32
// sum of n terms in any order; w_ij = P_ij, the exact softmax weights):
//   score error   e_ij = acc(D) scale sum_d |q_id k_jd| + 2u |s_ij|
//   E_i           = max_j e_ij + 4u max_j |s_ij - m_i| + 8u, the largest error
//                   of an exponent (the fp32 argument s - m, log2 e folded in,
//                   and the exponential's own few ulps): each P_ij is off by a
//                   factor within exp(+-E_i) before normalization
//   O_id          off by at most 2 E_i W_id (a common shift of all exponents
//                   cancels in the normalization; what remains is at most twice
//                   the largest), + ub W_id (P rounded to bf16 for the P V
//                   product) + acc(S) (W_id + |o_id|) (the fp32 sums of P V and
//                   of l), W_id = sum_j P_ij |v_jd|; then bf16's rounding:
//                   (1 + ub) before + ub |o_id| + 2^-134
//   lse_i         E_i + acc(S) (l's relative error) + 4u (|lse_i| + 1)
// The backward pass reads the device's O and lse, so their allowances enter it:
//   rho_i         = E_i + lse allowance + ub: P's relative error as recomputed
//                   from lse and rounded to bf16 for the dV product
//   Dl_i = dO_i . o_i   off by sum_d |dO_id| (O allowance) + acc(D) sum_d |dO_id o_id|
//   dS_ij         off by rho_i P_ij |dP_ij - Dl_i| + P_ij (acc(D) sum_d |dO_id v_jd|
//                   + Dl_i's error) + ub |dS_ij| (rounded to bf16 for the dQ and
//                   dK products) + 4u P_ij |dP_ij - Dl_i|
//   dQ_id         scale sum_j (dS error) |k_jd| + acc(S) scale sum_j |dS_ij k_jd| + 2u |dQ|
//   dK_jd         scale sum_i (dS error) |q_id| + acc(S) scale sum_i |dS_ij q_id| + 2u |dK|
//   dV_jd         sum_i rho_i P_ij |dO_id| + acc(S) sum_i P_ij |dO_id|
// each then through bf16's rounding as O is.
#include "attention/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

#include "core/formats.hpp"
#include "core/recipe.hpp"
#include "core/host_threads.hpp"

namespace rigel::attention {
namespace {

constexpr double kU = 0x1p-24;
constexpr double kUb = 0x1p-8;
constexpr double kEtaBf16 = 0x1p-134;

double acc(std::int64_t n) { return std::max(2.0 * static_cast<double>(n) * kU, 16 * kU); }

double rounded_allowance(double before, double value) { return before * (1 + kUb) + kUb * std::fabs(value) + kEtaBf16; }

// Element (b, s, h, d) of a tensor stored with token stride ld.
struct Layout {
    std::int64_t seq, heads, dim, ld;
    std::int64_t at(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t d) const {
        return (b * seq + s) * ld + h * dim + d;
    }
};

// One head's inputs as doubles, [S][D].
struct Head {
    std::vector<double> q, k, v, dout;
};

Head decode_head(const Desc& d, const Inputs& in, std::int64_t b, std::int64_t h, bool backward) {
    const std::int64_t S = d.seq, D = d.head_dim;
    Head out;
    const auto take = [&](const std::vector<std::uint16_t>& src, std::int64_t ld, std::vector<double>& dst) {
        const Layout l{S, d.heads, D, ld};
        dst.resize(static_cast<std::size_t>(S * D));
        for (std::int64_t s = 0; s < S; ++s)
            for (std::int64_t x = 0; x < D; ++x)
                dst[static_cast<std::size_t>(s * D + x)] = bf16_to_f32(src[static_cast<std::size_t>(l.at(b, s, h, x))]);
    };
    take(in.q, d.ldq, out.q);
    take(in.k, d.ldk, out.k);
    take(in.v, d.ldv, out.v);
    if (backward) take(in.dout, d.ldo, out.dout);
    return out;
}

// Sums a thread accumulates for the key rows being checked: [key][d].
struct KeySums {
    std::vector<double> dk, dk_err, dk_mag, dv, dv_err, dv_mag;
    explicit KeySums(std::size_t n) : dk(n), dk_err(n), dk_mag(n), dv(n), dv_err(n), dv_mag(n) {}
    void add(const KeySums& o) {
        for (std::size_t i = 0; i < dk.size(); ++i) {
            dk[i] += o.dk[i], dk_err[i] += o.dk_err[i], dk_mag[i] += o.dk_mag[i];
            dv[i] += o.dv[i], dv_err[i] += o.dv_err[i], dv_mag[i] += o.dv_mag[i];
        }
    }
};

// Query row i of a head through the forward (and backward) pass: its O, lse
// and dQ with allowances into out (if the row is checked: slot >= 0), and its
// share of dK and dV for the checked key rows.
struct RowPass {
    const Desc& d;
    const Head& head;
    const std::vector<std::int64_t>& rows;  // the checked rows
    bool backward;

    void run(std::int64_t i, std::int64_t slot, HeadReference& out, KeySums& keys, std::vector<double>& s,
             std::vector<double>& a, std::vector<double>& p, std::vector<double>& ds, std::vector<double>& ds_err) const {
        const std::int64_t S = d.seq, D = d.head_dim;
        const double scale = d.scale;
        const std::int64_t last = d.causal ? i : S - 1;  // keys 0 .. last
        const double* q = &head.q[static_cast<std::size_t>(i * D)];
        double m = -std::numeric_limits<double>::infinity(), e_max = 0;
        for (std::int64_t j = 0; j <= last; ++j) {
            const double* k = &head.k[static_cast<std::size_t>(j * D)];
            double dot = 0, mag = 0;
            for (std::int64_t x = 0; x < D; ++x) {
                dot += q[x] * k[x];
                mag += std::fabs(q[x] * k[x]);
            }
            s[j] = scale * dot;
            a[j] = scale * mag;
            m = std::max(m, s[j]);
            e_max = std::max(e_max, acc(D) * a[j] + 2 * kU * std::fabs(s[j]));
        }
        double l = 0, spread = 0;
        for (std::int64_t j = 0; j <= last; ++j) {
            l += std::exp(s[j] - m);
            spread = std::max(spread, std::fabs(s[j] - m));
        }
        const double lse = m + std::log(l);
        const double E = e_max + 4 * kU * spread + 8 * kU;
        for (std::int64_t j = 0; j <= last; ++j) p[j] = std::exp(s[j] - lse);
        const double lse_allowed = E + acc(S) + 4 * kU * (std::fabs(lse) + 1);

        std::vector<double> o(static_cast<std::size_t>(D), 0.0), o_allowed(static_cast<std::size_t>(D));
        for (std::int64_t x = 0; x < D; ++x) {
            double sum = 0, w = 0;
            for (std::int64_t j = 0; j <= last; ++j) {
                const double v = head.v[static_cast<std::size_t>(j * D + x)];
                sum += p[j] * v;
                w += p[j] * std::fabs(v);
            }
            o[x] = sum;
            const double before = (2 * E + kUb + acc(S)) * w + acc(S) * std::fabs(sum);
            o_allowed[x] = rounded_allowance(before, sum);
        }
        if (slot >= 0) {
            out.lse[static_cast<std::size_t>(slot)] = lse;
            out.lse_allowed[static_cast<std::size_t>(slot)] = lse_allowed;
            for (std::int64_t x = 0; x < D; ++x) {
                out.o[static_cast<std::size_t>(slot * D + x)] = o[x];
                out.o_allowed[static_cast<std::size_t>(slot * D + x)] = o_allowed[x];
            }
        }
        if (!backward) return;

        const double* dout = &head.dout[static_cast<std::size_t>(i * D)];
        double dl = 0, dl_err = 0;
        for (std::int64_t x = 0; x < D; ++x) {
            dl += dout[x] * o[x];
            dl_err += std::fabs(dout[x]) * o_allowed[x] + acc(D) * std::fabs(dout[x] * o[x]);
        }
        const double rho = E + lse_allowed + kUb;
        for (std::int64_t j = 0; j <= last; ++j) {
            const double* v = &head.v[static_cast<std::size_t>(j * D)];
            double dp = 0, mag = 0;
            for (std::int64_t x = 0; x < D; ++x) {
                dp += dout[x] * v[x];
                mag += std::fabs(dout[x] * v[x]);
            }
            const double g = dp - dl;
            ds[j] = p[j] * g;
            ds_err[j] = (rho + 4 * kU) * p[j] * std::fabs(g) + p[j] * (acc(D) * mag + dl_err) + kUb * std::fabs(ds[j]);
        }
        if (slot >= 0) {
            for (std::int64_t x = 0; x < D; ++x) {
                double sum = 0, err = 0, mag = 0;
                for (std::int64_t j = 0; j <= last; ++j) {
                    const double k = head.k[static_cast<std::size_t>(j * D + x)];
                    sum += ds[j] * k;
                    err += ds_err[j] * std::fabs(k);
                    mag += std::fabs(ds[j] * k);
                }
                const double dq = scale * sum;
                const std::size_t at = static_cast<std::size_t>(slot * D + x);
                out.dq[at] = dq;
                out.dq_allowed[at] = rounded_allowance(scale * err + acc(S) * scale * mag + 2 * kU * std::fabs(dq), dq);
            }
        }
        // This query row's share of dK and dV for every checked key row it sees.
        for (std::size_t r = 0; r < rows.size(); ++r) {
            const std::int64_t j = rows[r];
            if (j > last) continue;
            for (std::int64_t x = 0; x < D; ++x) {
                const std::size_t at = r * static_cast<std::size_t>(D) + static_cast<std::size_t>(x);
                keys.dk[at] += scale * ds[j] * q[x];
                keys.dk_err[at] += scale * ds_err[j] * std::fabs(q[x]);
                keys.dk_mag[at] += scale * std::fabs(ds[j] * q[x]);
                keys.dv[at] += p[j] * dout[x];
                keys.dv_err[at] += rho * p[j] * std::fabs(dout[x]);
                keys.dv_mag[at] += p[j] * std::fabs(dout[x]);
            }
        }
    }
};

int thread_count(int threads) {
    if (threads > 0) return threads;
    return default_host_threads();
}

std::vector<std::int64_t> pick(std::int64_t n, std::int64_t limit, Rng& rng) {
    std::vector<std::int64_t> out;
    if (n <= limit) {
        for (std::int64_t i = 0; i < n; ++i) out.push_back(i);
        return out;
    }
    out = {0, n - 1};
    while (static_cast<std::int64_t>(out.size()) < limit) {
        const auto i = static_cast<std::int64_t>(rng.next() % static_cast<std::uint64_t>(n));
        if (std::find(out.begin(), out.end(), i) == out.end()) out.push_back(i);
    }
    std::sort(out.begin(), out.end());
    return out;
}

bool is_poison(std::uint16_t bits) { return bits == kPoisonBf16; }
bool is_poison(float f) {
    std::uint32_t w = 0;
    std::memcpy(&w, &f, sizeof w);
    return w == 0xFFFFFFFFu;
}

}  // namespace

Sizes sizes(const Desc& desc) {
    const Desc d = with_defaults(desc);
    const std::int64_t tokens = d.batch * d.seq;
    return {tokens * d.ldq, tokens * d.ldk, tokens * d.ldv, tokens * d.ldo, d.batch * d.heads * d.seq};
}

Inputs random_inputs(const Desc& desc, std::uint64_t seed, double spread) {
    const Desc d = with_defaults(desc);
    if (const std::string why = check(d); !why.empty()) throw std::invalid_argument(why);
    const Sizes n = sizes(d);
    Inputs in;
    const auto fill = [&](std::vector<std::uint16_t>& t, std::int64_t count, std::int64_t ld, std::uint64_t stream,
                          bool normal) {
        t.assign(static_cast<std::size_t>(count), kPoisonBf16);
        Rng rng(seed * 0x9E3779B97F4A7C15ull + stream);
        const Layout l{d.seq, d.heads, d.head_dim, ld};
        for (std::int64_t b = 0; b < d.batch; ++b)
            for (std::int64_t s = 0; s < d.seq; ++s)
                for (std::int64_t h = 0; h < d.heads; ++h)
                    for (std::int64_t x = 0; x < d.head_dim; ++x) {
                        const double v = normal ? spread * rng.normal() : rng.uniform(-1.0, 1.0);
                        t[static_cast<std::size_t>(l.at(b, s, h, x))] = f32_to_bf16(static_cast<float>(v));
                    }
    };
    fill(in.q, n.q, d.ldq, 1, true);
    fill(in.k, n.k, d.ldk, 2, true);
    fill(in.v, n.v, d.ldv, 3, false);
    fill(in.dout, n.o, d.ldo, 4, false);
    return in;
}

HeadReference reference_head(const Desc& desc, const Inputs& in, std::int64_t b, std::int64_t h,
                             const std::vector<std::int64_t>& rows, bool backward, int threads) {
    const Desc d = with_defaults(desc);
    const std::int64_t S = d.seq, D = d.head_dim;
    const Head head = decode_head(d, in, b, h, backward);
    HeadReference out;
    const std::size_t n = rows.size() * static_cast<std::size_t>(D);
    out.o.assign(n, 0), out.o_allowed.assign(n, 0), out.lse.assign(rows.size(), 0), out.lse_allowed.assign(rows.size(), 0);
    if (backward) {
        out.dq.assign(n, 0), out.dq_allowed.assign(n, 0);
        out.dk.assign(n, 0), out.dk_allowed.assign(n, 0), out.dv.assign(n, 0), out.dv_allowed.assign(n, 0);
    }
    // slot[i]: where query row i's results go (-1: not checked).
    std::vector<std::int64_t> slot(static_cast<std::size_t>(S), -1);
    for (std::size_t r = 0; r < rows.size(); ++r) slot[static_cast<std::size_t>(rows[r])] = static_cast<std::int64_t>(r);
    // The backward pass needs every query row (dK, dV sum over them); the
    // forward only the checked ones.
    std::vector<std::int64_t> todo;
    for (std::int64_t i = 0; i < S; ++i)
        if (backward || slot[static_cast<std::size_t>(i)] >= 0) todo.push_back(i);

    const RowPass pass{d, head, rows, backward};
    const int workers = std::min<int>(thread_count(threads), static_cast<int>(todo.size()));
    std::vector<KeySums> sums(static_cast<std::size_t>(workers), KeySums(backward ? n : 0));
    std::vector<std::thread> pool;
    for (int w = 0; w < workers; ++w)
        pool.emplace_back([&, w] {
            std::vector<double> s(static_cast<std::size_t>(S)), a(s.size()), p(s.size()), ds(s.size()), ds_err(s.size());
            for (std::size_t t = static_cast<std::size_t>(w); t < todo.size(); t += static_cast<std::size_t>(workers)) {
                const std::int64_t i = todo[t];
                pass.run(i, slot[static_cast<std::size_t>(i)], out, sums[static_cast<std::size_t>(w)], s, a, p, ds, ds_err);
            }
        });
    for (auto& t : pool) t.join();
    if (!backward) return out;
    KeySums total(n);
    for (const KeySums& k : sums) total.add(k);
    for (std::size_t at = 0; at < n; ++at) {
        out.dk[at] = total.dk[at];
        out.dk_allowed[at] =
            rounded_allowance(total.dk_err[at] + acc(S) * total.dk_mag[at] + 2 * kU * std::fabs(total.dk[at]), total.dk[at]);
        out.dv[at] = total.dv[at];
        out.dv_allowed[at] =
            rounded_allowance(total.dv_err[at] + acc(S) * total.dv_mag[at] + 2 * kU * std::fabs(total.dv[at]), total.dv[at]);
    }
    return out;
}

Verdict verify(const Desc& desc, const Inputs& in, const Outputs& out, std::uint64_t seed, const VerifyOptions& opt) {
    const Desc d = with_defaults(desc);
    const std::int64_t S = d.seq, D = d.head_dim, H = d.heads, width = H * D;
    if (!out.o || !out.lse || (opt.backward && (!out.dq || !out.dk || !out.dv)))
        throw std::invalid_argument("attention verify: an output to check is missing");
    Verdict v;
    const auto fail = [&](const std::string& why) {
        if (v.reason.empty()) v.reason = why;
    };
    // Never written: every element of O and lse (and of the gradients) still holding the poison.
    const auto scan = [&](const std::uint16_t* t, std::int64_t ld, const char* name) {
        const Layout l{S, H, D, ld};
        std::int64_t left = 0;
        for (std::int64_t b = 0; b < d.batch; ++b)
            for (std::int64_t s = 0; s < S; ++s)
                for (std::int64_t x = 0; x < width; ++x) left += is_poison(t[l.at(b, s, 0, x)]);
        if (left) fail(std::to_string(left) + " element(s) of " + name + " never written");
        v.unwritten += left;
    };
    scan(out.o, d.ldo, "O");
    std::int64_t lse_left = 0;
    for (std::int64_t i = 0; i < d.batch * H * S; ++i) lse_left += is_poison(out.lse[i]);
    if (lse_left) fail(std::to_string(lse_left) + " logsumexp value(s) never written");
    v.unwritten += lse_left;
    if (opt.backward) {
        scan(out.dq, d.ldq, "dQ");
        scan(out.dk, d.ldk, "dK");
        scan(out.dv, d.ldv, "dV");
    }

    Rng rng(seed ^ 0xA77E4710Aull);
    const double cost = static_cast<double>(d.batch * H) * static_cast<double>(S) * static_cast<double>(S) *
                        static_cast<double>(D);
    std::vector<std::pair<std::int64_t, std::int64_t>> heads;
    if (cost <= opt.head_limit) {
        for (std::int64_t b = 0; b < d.batch; ++b)
            for (std::int64_t h = 0; h < H; ++h) heads.emplace_back(b, h);
    } else {
        for (std::int64_t flat : pick(d.batch * H, 4, rng)) heads.emplace_back(flat / H, flat % H);
    }
    const std::vector<std::int64_t> rows = pick(S, std::max<std::int64_t>(opt.row_limit, 2), rng);

    // One checked element: a failure (the first is the reason) and the worst
    // ratio so far; where() builds the element's name only when it is needed.
    const auto judge = [&](double got, double want, double allowed, const auto& where) {
        const double scaled = std::fabs(got - want) / allowed;
        if (!(scaled <= 1.0))
            fail(where() + " is " + std::to_string(got) + ", the reference " + std::to_string(want) + " +- " +
                 std::to_string(allowed));
        if (std::isfinite(scaled) && scaled > v.err_max_scaled) {
            v.err_max_scaled = scaled;
            v.worst = where();
        }
    };
    const auto compare = [&](const char* name, const std::uint16_t* t, std::int64_t ld, std::int64_t b, std::int64_t h,
                             const std::vector<double>& ref, const std::vector<double>& allowed) {
        const Layout l{S, H, D, ld};
        for (std::size_t r = 0; r < rows.size(); ++r) {
            const std::int64_t s = rows[r];
            for (std::int64_t x = 0; x < D; ++x) {
                const std::uint16_t bits = t[l.at(b, s, h, x)];
                if (is_poison(bits)) continue;  // counted by the scan
                const std::size_t at = r * static_cast<std::size_t>(D) + static_cast<std::size_t>(x);
                judge(bf16_to_f32(bits), ref[at], allowed[at], [&] {
                    return std::string(name) + "[b " + std::to_string(b) + ", h " + std::to_string(h) + ", s " +
                           std::to_string(s) + ", d " + std::to_string(x) + "]";
                });
            }
            // Padding of this token's row (columns H D .. ld): the kernels must leave it.
            if (h == H - 1)
                for (std::int64_t x = width; x < ld; ++x)
                    if (!is_poison(t[(b * S + s) * ld + x])) {
                        ++v.padding_written;
                        fail(std::string(name) + "'s padding written in token row " + std::to_string(b * S + s));
                    }
        }
    };
    for (const auto& [b, h] : heads) {
        std::shared_ptr<const HeadReference> kept;
        if (opt.cache) kept = opt.cache->heads[{b, h, opt.backward}];
        if (!kept) {
            kept = std::make_shared<const HeadReference>(reference_head(d, in, b, h, rows, opt.backward, opt.threads));
            if (opt.cache) opt.cache->heads[{b, h, opt.backward}] = kept;
        }
        const HeadReference& ref = *kept;
        compare("O", out.o, d.ldo, b, h, ref.o, ref.o_allowed);
        for (std::size_t r = 0; r < rows.size(); ++r) {
            const float got = out.lse[(b * H + h) * S + rows[r]];
            if (is_poison(got)) continue;
            judge(got, ref.lse[r], ref.lse_allowed[r], [&] {
                return "lse[b " + std::to_string(b) + ", h " + std::to_string(h) + ", s " + std::to_string(rows[r]) + "]";
            });
        }
        if (opt.backward) {
            compare("dQ", out.dq, d.ldq, b, h, ref.dq, ref.dq_allowed);
            compare("dK", out.dk, d.ldk, b, h, ref.dk, ref.dk_allowed);
            compare("dV", out.dv, d.ldv, b, h, ref.dv, ref.dv_allowed);
        }
    }
    v.checked_heads = static_cast<std::int64_t>(heads.size());
    v.checked_rows = static_cast<std::int64_t>(rows.size());
    v.pass = v.reason.empty();
    return v;
}

}  // namespace rigel::attention
