// Weighted quantisers (convert/quantize/weighted_quant.h): the bytes decode (with the kernels'
// dequantize_row, i.e. ggml's layouts) to values as close as round-to-nearest's with equal
// weights, and closer than round-to-nearest's under the weighted error they minimise when the
// importance is uneven, as with a real importance matrix.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "convert/quantize/weighted_quant.h"
#include "kernels/quant.h"

namespace pagoda::convert {
namespace {

struct Errors {
  double rtn = 0, weighted = 0;
};

// Σ_rows Σ_i imp_i (x_i - x̂_i)² for reference RTN and the weighted quantiser.
Errors errors(tensor::DType type, const std::vector<float>& importance, int rows, uint32_t seed) {
  const int64_t n = static_cast<int64_t>(importance.size());
  std::mt19937 rng(seed);
  std::student_t_distribution<float> dist(4.0f);  // heavy tails, like trained weights
  const size_t bytes = *tensor::row_size_bytes(type, static_cast<uint64_t>(n));
  std::vector<uint8_t> q(bytes);
  std::vector<float> x(static_cast<size_t>(n)), w(x.size()), y(x.size());
  Errors e;
  for (int r = 0; r < rows; ++r) {
    for (float& v : x)
      v = 0.02f * dist(rng);
    kernels::quantize_row(type, x.data(), q.data(), n);
    kernels::dequantize_row(type, q.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      e.rtn += importance[static_cast<size_t>(i)] *
               std::pow(x[static_cast<size_t>(i)] - y[static_cast<size_t>(i)], 2);
    element_weights(x.data(), importance.data(), n, w.data());
    quantize_row_weighted(type, x.data(), w.data(), q.data(), n);
    kernels::dequantize_row(type, q.data(), y.data(), n);
    for (int64_t i = 0; i < n; ++i)
      e.weighted += importance[static_cast<size_t>(i)] *
                    std::pow(x[static_cast<size_t>(i)] - y[static_cast<size_t>(i)], 2);
  }
  return e;
}

class WeightedQuant : public ::testing::TestWithParam<tensor::DType> {};

TEST_P(WeightedQuant, EqualWeightsMatchRoundToNearest) {
  const std::vector<float> ones(512, 1.0f);
  const Errors e = errors(GetParam(), ones, 32, 1);
  // Same quality as ggml's reference within a few percent (a wrong layout would be far off).
  EXPECT_LT(e.weighted, 1.05 * e.rtn) << tensor::dtype_name(GetParam());
  EXPECT_GT(e.weighted, 0.0);
}

TEST_P(WeightedQuant, UnevenImportanceLowersWeightedError) {
  std::mt19937 rng(3);
  std::lognormal_distribution<float> imp(0.0f, 2.0f);
  std::vector<float> importance(512);
  for (float& v : importance)
    v = imp(rng);
  const Errors e = errors(GetParam(), importance, 32, 2);
  EXPECT_LT(e.weighted, 0.9 * e.rtn)
      << tensor::dtype_name(GetParam()) << " rtn " << e.rtn << " weighted " << e.weighted;
}

INSTANTIATE_TEST_SUITE_P(Types, WeightedQuant,
                         ::testing::Values(tensor::DType::kQ4_0, tensor::DType::kQ2_K,
                                           tensor::DType::kQ3_K, tensor::DType::kQ4_K,
                                           tensor::DType::kQ5_K, tensor::DType::kQ6_K));

TEST(WeightedQuant, ZeroRowEncodesZeros) {
  for (tensor::DType type : {tensor::DType::kQ4_0, tensor::DType::kQ2_K, tensor::DType::kQ3_K,
                             tensor::DType::kQ4_K, tensor::DType::kQ5_K, tensor::DType::kQ6_K}) {
    std::vector<float> x(256, 0.0f), w(256, 1.0f), y(256, 1.0f);
    std::vector<uint8_t> q(*tensor::row_size_bytes(type, 256));
    quantize_row_weighted(type, x.data(), w.data(), q.data(), 256);
    kernels::dequantize_row(type, q.data(), y.data(), 256);
    for (float v : y)
      EXPECT_EQ(v, 0.0f);
  }
}

}  // namespace
}  // namespace pagoda::convert
