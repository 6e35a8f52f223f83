// Test helper: reproducible Gaussian data.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace pagoda::kernels {

// n values from N(0, scale²), the same for the same seed.
inline std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, scale);
  std::vector<float> v(n);
  for (auto& x : v)
    x = g(rng);
  return v;
}

}  // namespace pagoda::kernels
