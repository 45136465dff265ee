// `rigel train check`: each of rigel's own training kernels, and then a few
// whole training steps on the device backend against the reference backend
// (src/cuda/train/train_kernels.cuh) run once on the device on fresh random
// bf16 inputs, its outputs poisoned first, and every output element compared
// with the float64 reference (src/train/gpt2_reference.hpp, optimizer.hpp)
// computed from the same bytes, each within its own allowance (derived at
// the top of src/cuda/train/layer_check.cu). Plain C++; a build without CUDA
// throws (the CLI says "skipped" first).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace rigel::train {

struct LayerCheck {
    std::string kernel{};       // "layernorm_forward"
    std::string shape{};        // "N 256 x C 768"
    bool pass = false;
    double err_max_scaled = 0;  // max over the checked elements of |device - reference| / allowance
    std::string worst{};        // where, "out[17, 301]"; or the failure's reason
    std::int64_t checked = 0;   // elements compared
};

std::vector<LayerCheck> check_layers(std::uint64_t seed);

}  // namespace rigel::train
