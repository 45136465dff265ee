// vendor_openblas and vendor_openblas_mt: OpenBLAS sgemm/dgemm, the CPU
// baseline every own CPU rung is compared with ("% vendor"), single-threaded
// and on all threads. Row-major, no transposes, C = 1 * A * B + 0 * C.
// The thread count OpenBLAS had before the call is restored afterwards, so
// that the float64 reference (also OpenBLAS) keeps all its threads.
// OpenBLAS's DYNAMIC_ARCH picks its kernel from the CPU model; on a model it
// does not know it falls back to an old generic one (see openblas_corename()).
#include "cpu/cpu_rungs.hpp"

#if RIGEL_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace rigel::cpu {

#if RIGEL_HAVE_OPENBLAS
namespace {

void gemm(const GemmProblem& p, int threads) {
    const int before = openblas_get_num_threads();
    openblas_set_num_threads(threads);
    const auto m = static_cast<blasint>(p.m), n = static_cast<blasint>(p.n), k = static_cast<blasint>(p.k);
    if (p.type == DType::f64)
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, static_cast<const double*>(p.a), k,
                    static_cast<const double*>(p.b), n, 0.0, static_cast<double*>(p.c), n);
    else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, static_cast<const float*>(p.a), k,
                    static_cast<const float*>(p.b), n, 0.0f, static_cast<float*>(p.c), n);
    openblas_set_num_threads(before);
}

}  // namespace

void vendor_openblas(const GemmProblem& p) { gemm(p, 1); }
void vendor_openblas_mt(const GemmProblem& p) { gemm(p, p.threads); }

std::string openblas_corename() { return openblas_get_corename(); }
#else
std::string openblas_corename() { return "none"; }
#endif

}  // namespace rigel::cpu
