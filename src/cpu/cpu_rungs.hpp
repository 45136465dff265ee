// The CPU rungs' entry points; the registry table is in cpu_rungs.cpp.
#pragma once
#include "ladder/rung.hpp"

namespace rigel::cpu {

void k01_naive(const GemmProblem& p);

}  // namespace rigel::cpu
