// matmul and get_rows against plain loops in the test over dequantised weights: every
// dequantisable weight type, odd shapes (one row, one column block, tails), bias, misaligned
// F32 rows, and the batch-invariance contract (a row computed in a batch == computed alone, bit
// for bit), including shapes large enough to run multi-threaded.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/ops.h"
#include "kernels/quant.h"
#include "tensor/dtype.h"

namespace pagoda::kernels {
namespace {

using tensor::DType;

std::vector<float> random_vec(size_t n, uint32_t seed, float scale = 1) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, scale);
  std::vector<float> v(n);
  for (auto& x : v)
    x = g(rng);
  return v;
}

// A weight matrix in `dtype` built by quantising random values; keeps the bytes alive.
struct Weight {
  std::vector<uint8_t> bytes;
  WeightView view;
};

Weight make_weight(DType dtype, int64_t rows, int64_t cols, uint32_t seed, size_t misalign = 0) {
  const auto f = random_vec(static_cast<size_t>(rows * cols), seed, 0.5f);
  const size_t row_bytes = *tensor::row_size_bytes(dtype, static_cast<uint64_t>(cols));
  Weight w;
  w.bytes.resize(misalign + row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(dtype, f.data() + r * cols, w.bytes.data() + misalign + r * row_bytes, cols);
  }
  w.view = WeightView{dtype, rows, cols, row_bytes, w.bytes.data() + misalign};
  return w;
}

// Plain loops: y[i, r] = Σ_c x[i, c] · W[r, c] in double over the dequantised matrix.
std::vector<double> naive_matmul(const WeightView& w, const std::vector<float>& x, int64_t m,
                                 const float* bias, std::vector<double>* abs_sum) {
  std::vector<float> wr(static_cast<size_t>(w.cols));
  std::vector<double> y(static_cast<size_t>(m * w.rows));
  abs_sum->assign(y.size(), 0);
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.dtype, w.row(r), wr.data(), w.cols);
    for (int64_t i = 0; i < m; ++i) {
      double acc = bias ? bias[r] : 0.0;
      double mag = bias ? std::fabs(bias[r]) : 0.0;
      for (int64_t c = 0; c < w.cols; ++c) {
        acc += double(x[i * w.cols + c]) * wr[c];
        mag += std::fabs(double(x[i * w.cols + c]) * wr[c]);
      }
      y[i * w.rows + r] = acc;
      (*abs_sum)[i * w.rows + r] = mag;
    }
  }
  return y;
}

struct Shape {
  int64_t rows, cols, m;
};

const DType kAllTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0, DType::kQ4_1,
                           DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ2_K, DType::kQ3_K,
                           DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

class MatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulTest, MatchesNaiveLoops) {
  const DType t = GetParam();
  const int64_t bs = tensor::dtype_info(t).block_size;
  // cols in blocks; plain types also get a 1-column and an odd-width case.
  std::vector<Shape> shapes = {{1, bs, 1}, {7, 2 * bs, 3}, {33, 3 * bs, 5}, {150, 512, 2}};
  if (bs == 1) {
    shapes.push_back({5, 1, 4});
    shapes.push_back({9, 37, 2});
  }
  uint32_t seed = 1;
  for (const auto& s : shapes) {
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE(::testing::Message() << tensor::dtype_name(t) << " rows " << s.rows << " cols "
                                        << s.cols << " m " << s.m << " bias " << with_bias);
      const Weight w = make_weight(t, s.rows, s.cols, ++seed);
      const auto x = random_vec(static_cast<size_t>(s.m * s.cols), ++seed);
      const auto bias = random_vec(static_cast<size_t>(s.rows), ++seed);
      const float* b = with_bias ? bias.data() : nullptr;
      std::vector<float> y(static_cast<size_t>(s.m * s.rows), NAN);
      matmul(w.view, x.data(), s.m, y.data(), b);
      std::vector<double> mag;
      const auto expected = naive_matmul(w.view, x, s.m, b, &mag);
      for (size_t i = 0; i < y.size(); ++i) {
        // f32 rounding of the result plus slack for the accumulation order.
        ASSERT_NEAR(y[i], expected[i], 1e-6 * mag[i] + 1e-30) << "output " << i;
      }
    }
  }
}

TEST_P(MatmulTest, BatchedEqualsAloneBitForBit) {
  const DType t = GetParam();
  const int64_t bs = tensor::dtype_info(t).block_size;
  const int64_t cols = bs == 1 ? 300 : 2 * 256;
  const int64_t rows = 130, m = 4;  // 130 * 512 * 4 multiply-adds: multi-threaded
  const Weight w = make_weight(t, rows, cols, 11);
  const auto x = random_vec(static_cast<size_t>(m * cols), 12);
  const auto bias = random_vec(static_cast<size_t>(rows), 13);
  std::vector<float> batched(static_cast<size_t>(m * rows));
  matmul(w.view, x.data(), m, batched.data(), bias.data());
  for (int64_t i = 0; i < m; ++i) {
    std::vector<float> alone(static_cast<size_t>(rows));
    matmul(w.view, x.data() + i * cols, 1, alone.data(), bias.data());
    EXPECT_EQ(std::memcmp(alone.data(), batched.data() + i * rows, sizeof(float) * rows), 0)
        << "row " << i;
  }
  // And a second run gives the same bits (no thread-count dependence).
  std::vector<float> again(batched.size());
  matmul(w.view, x.data(), m, again.data(), bias.data());
  EXPECT_EQ(std::memcmp(again.data(), batched.data(), sizeof(float) * again.size()), 0);
}

INSTANTIATE_TEST_SUITE_P(Types, MatmulTest, ::testing::ValuesIn(kAllTypes),
                         [](const auto& param_info) {
                           return std::string(tensor::dtype_name(param_info.param));
                         });

TEST(MatmulTest, MisalignedF32Rows) {
  const Weight w = make_weight(DType::kF32, 4, 5, 3, /*misalign=*/2);
  const auto x = random_vec(5, 4);
  std::vector<float> y(4);
  matmul(w.view, x.data(), 1, y.data());
  std::vector<double> mag;
  const auto expected = naive_matmul(w.view, x, 1, nullptr, &mag);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], expected[i], 1e-6 * mag[i]);
}

TEST(MatmulTest, EmptyBatchWritesNothing) {
  const Weight w = make_weight(DType::kQ8_0, 3, 32, 5);
  float sentinel = 42;
  matmul(w.view, nullptr, 0, &sentinel);
  EXPECT_EQ(sentinel, 42);
}

TEST(GetRowsTest, CopiesDequantisedRows) {
  for (DType t : {DType::kF32, DType::kF16, DType::kQ4_K, DType::kQ8_0}) {
    const Weight table = make_weight(t, 10, 256, 21);
    const std::vector<int32_t> ids = {9, 0, 3, 3};
    std::vector<float> out(ids.size() * 256), expected(256);
    get_rows(table.view, ids.data(), static_cast<int64_t>(ids.size()), out.data());
    for (size_t i = 0; i < ids.size(); ++i) {
      dequantize_row(t, table.view.row(ids[i]), expected.data(), 256);
      EXPECT_EQ(std::memcmp(out.data() + i * 256, expected.data(), 256 * sizeof(float)), 0)
          << tensor::dtype_name(t) << " id " << ids[i];
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
