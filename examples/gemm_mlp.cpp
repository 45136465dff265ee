// A program that calls rigel's GEMM library (include/rigel/gemm.hpp): the
// MLP block of a GPT-2 layer, forward and backward, at 1024 tokens.
//
//   forward   H   = gelu(X W1^T + b1)     up-projection, aux keeps X W1^T + b1
//             Y   = H W2^T + b2 + X       down-projection with the residual as C
//   backward  dPre = (dY W2) * gelu'(pre), db1 = column sums of dPre   (dgelu_bgrad)
//             dW1 = dPre^T X               the weight gradient, layout TN
//             dX  = dPre W1 + dY           the input gradient, layout NN, residual as C
//
// Built with the CUDA half of rigel (`example_gemm_mlp` in build/<preset>/examples/); it checks one
// output element of each product against a float64 sum on the host and exits 0 when all agree,
// 1 when one does not, 77 without a GPU.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "rigel/gemm.hpp"

namespace {

using rigel::gemm::Epilogue;
using rigel::gemm::Op;
using rigel::gemm::Type;
using Bf16 = __nv_bfloat16;

constexpr int kTokens = 1024, kModel = 768, kHidden = 3072;

void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "example_gemm_mlp: %s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

// A device matrix of bf16 with its host copy (as floats) for the checks.
struct Matrix {
    int rows, cols;
    std::vector<float> host;
    Bf16* dev = nullptr;
    Matrix(int r, int c, std::mt19937& rng, float scale) : rows(r), cols(c), host(static_cast<size_t>(r) * c) {
        std::uniform_real_distribution<float> u(-scale, scale);
        std::vector<Bf16> bits(host.size());
        for (size_t i = 0; i < host.size(); ++i) {
            bits[i] = __float2bfloat16_rn(u(rng));
            host[i] = __bfloat162float(bits[i]);
        }
        check(cudaMalloc(&dev, bits.size() * sizeof(Bf16)), "cudaMalloc");
        check(cudaMemcpy(dev, bits.data(), bits.size() * sizeof(Bf16), cudaMemcpyHostToDevice), "upload");
    }
    Matrix(int r, int c) : rows(r), cols(c), host(static_cast<size_t>(r) * c) {
        check(cudaMalloc(&dev, host.size() * sizeof(Bf16)), "cudaMalloc");
    }
    ~Matrix() { cudaFree(dev); }
    void download() {
        std::vector<Bf16> bits(host.size());
        check(cudaMemcpy(bits.data(), dev, bits.size() * sizeof(Bf16), cudaMemcpyDeviceToHost), "download");
        for (size_t i = 0; i < host.size(); ++i) host[i] = __bfloat162float(bits[i]);
    }
    float at(int r, int c) const { return host[static_cast<size_t>(r) * cols + c]; }
};

double gelu(double x) { return 0.5 * x * (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
double gelu_grad(double x) {
    const double t = std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * 0.7978845608028654 * (1 + 3 * 0.044715 * x * x);
}

int failures = 0;
void expect(const char* what, double got, double want) {
    const double tol = 0.02 * std::fabs(want) + 0.02;  // bf16 output, bf16 intermediate inputs
    const bool ok = std::fabs(got - want) <= tol;
    std::printf("%-36s got %10.5f  float64 %10.5f  %s\n", what, got, want, ok ? "ok" : "MISMATCH");
    failures += ok ? 0 : 1;
}

}  // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::puts("example_gemm_mlp: skipped: no CUDA device");
        return 77;
    }
    std::mt19937 rng(2026);
    Matrix x(kTokens, kModel, rng, 1.0f), w1(kHidden, kModel, rng, 0.05f), b1(1, kHidden, rng, 0.1f);
    Matrix w2(kModel, kHidden, rng, 0.05f), b2(1, kModel, rng, 0.1f), dy(kTokens, kModel, rng, 1.0f);
    Matrix h(kTokens, kHidden), pre(kTokens, kHidden), y(kTokens, kModel), dpre(kTokens, kHidden);
    Matrix dw1(kHidden, kModel), dx(kTokens, kModel);
    float* db1 = nullptr;
    check(cudaMalloc(&db1, kHidden * sizeof(float)), "cudaMalloc");

    using rigel::gemm::Desc;
    using rigel::gemm::Plan;
    // Plans are built once per shape; a training loop keeps them and calls run() every step.
    Plan up(Desc{.m = kTokens, .n = kHidden, .k = kModel, .b_op = Op::t, .epilogue = Epilogue::bias_gelu_aux});
    Plan down(Desc{.m = kTokens, .n = kModel, .k = kHidden, .b_op = Op::t, .epilogue = Epilogue::bias});
    Plan back_act(Desc{.m = kTokens, .n = kHidden, .k = kModel, .epilogue = Epilogue::dgelu_bgrad});
    Plan back_w1(Desc{.m = kHidden, .n = kModel, .k = kTokens, .a_op = Op::t});
    Plan back_x(Desc{.m = kTokens, .n = kModel, .k = kHidden});
    up.run({.a = x.dev, .b = w1.dev, .d = h.dev, .bias = b1.dev, .aux = pre.dev});
    down.run({.a = h.dev, .b = w2.dev, .d = y.dev, .c = x.dev, .bias = b2.dev, .beta = 1.0f});
    back_act.run({.a = dy.dev, .b = w2.dev, .d = dpre.dev, .aux = pre.dev, .bgrad = db1});
    back_w1.run({.a = dpre.dev, .b = x.dev, .d = dw1.dev});
    back_x.run({.a = dpre.dev, .b = w1.dev, .d = dx.dev, .c = dy.dev, .beta = 1.0f});
    check(cudaDeviceSynchronize(), "the block's GEMMs");
    for (Matrix* m : {&h, &pre, &y, &dpre, &dw1, &dx}) m->download();
    std::vector<float> db1_host(kHidden);
    check(cudaMemcpy(db1_host.data(), db1, kHidden * sizeof(float), cudaMemcpyDeviceToHost), "download");
    std::printf("dispatcher: up %s; dW1 %s\n", up.choice().why.c_str(), back_w1.choice().why.c_str());

    // One element of each product, from the device's own (bf16) inputs to it.
    const int r = 517, c = 1234 % kModel, j = 2049;
    double s = b1.at(0, j);
    for (int k = 0; k < kModel; ++k) s += static_cast<double>(x.at(r, k)) * w1.at(j, k);
    expect("pre[517, 2049] = X W1^T + b1", pre.at(r, j), s);
    expect("H[517, 2049] = gelu(pre)", h.at(r, j), gelu(s));
    s = b2.at(0, c) + x.at(r, c);
    for (int k = 0; k < kHidden; ++k) s += static_cast<double>(h.at(r, k)) * w2.at(c, k);
    expect("Y[517, c] = H W2^T + b2 + X", y.at(r, c), s);
    s = 0;
    for (int k = 0; k < kModel; ++k) s += static_cast<double>(dy.at(r, k)) * w2.at(k, j);
    expect("dPre[517, 2049] = (dY W2) gelu'(pre)", dpre.at(r, j), s * gelu_grad(pre.at(r, j)));
    s = 0;
    for (int t = 0; t < kTokens; ++t) s += static_cast<double>(dpre.at(t, j));
    expect("db1[2049] = sum over tokens of dPre", db1_host[j], s);
    s = 0;
    for (int t = 0; t < kTokens; ++t) s += static_cast<double>(dpre.at(t, j)) * x.at(t, c);
    expect("dW1[2049, c] = dPre^T X", dw1.at(j, c), s);
    s = dy.at(r, c);
    for (int k = 0; k < kHidden; ++k) s += static_cast<double>(dpre.at(r, k)) * w1.at(k, c);
    expect("dX[517, c] = dPre W1 + dY", dx.at(r, c), s);
    cudaFree(db1);
    return failures == 0 ? 0 : 1;
}
