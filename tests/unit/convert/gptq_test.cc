// Calibrated quantisers (convert/quantize/grid_quant.h, gptq.h, awq.h): the grid read from an
// encoded row and the levels written back reproduce ggml's reference bytes; on correlated
// calibration inputs with outlier channels, GPTQ's and AWQ's layer-output error is below
// round-to-nearest's for every type they handle (numpy checks GPTQ's exact levels:
// gptq_oracle.py).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "convert/quantize/awq.h"
#include "convert/quantize/gptq.h"
#include "convert/quantize/grid_quant.h"
#include "kernels/quant.h"

namespace pagoda::convert {
namespace {

using tensor::DType;

struct Layer {
  int64_t rows = 0, cols = 0;
  std::vector<float> w;          // [rows, cols]
  std::vector<double> h;         // [cols, cols]
  std::vector<double> mean_abs;  // [cols]
};

// Heavy-tailed weights; inputs x = z·M (correlated) with a few channels 20x larger.
Layer make_layer(int64_t rows, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::student_t_distribution<float> t4(4.0f);
  std::normal_distribution<double> n01;
  Layer l;
  l.rows = rows;
  l.cols = cols;
  l.w.resize(static_cast<size_t>(rows * cols));
  for (float& v : l.w)
    v = 0.05f * t4(rng);
  std::vector<double> mix(static_cast<size_t>(cols * cols));
  for (int64_t i = 0; i < cols; ++i) {
    for (int64_t j = 0; j < cols; ++j)
      mix[i * cols + j] = n01(rng) / std::sqrt(static_cast<double>(cols)) + (i == j ? 1.0 : 0.0);
  }
  l.h.assign(static_cast<size_t>(cols * cols), 0.0);
  l.mean_abs.assign(static_cast<size_t>(cols), 0.0);
  const int64_t tokens = 2 * cols;
  std::vector<double> z(static_cast<size_t>(cols)), x(static_cast<size_t>(cols));
  for (int64_t t = 0; t < tokens; ++t) {
    for (double& v : z)
      v = n01(rng);
    for (int64_t j = 0; j < cols; ++j) {
      double s = 0;
      for (int64_t i = 0; i < cols; ++i)
        s += z[i] * mix[i * cols + j];
      x[j] = (j % 37 == 5 ? 20.0 : 1.0) * s;
      l.mean_abs[j] += std::fabs(x[j]) / static_cast<double>(tokens);
    }
    for (int64_t i = 0; i < cols; ++i) {
      for (int64_t j = 0; j < cols; ++j)
        l.h[i * cols + j] += x[i] * x[j];
    }
  }
  return l;
}

std::vector<float> decode(DType type, const std::vector<uint8_t>& bytes, int64_t rows,
                          int64_t cols) {
  const size_t row_bytes = *tensor::row_size_bytes(type, static_cast<uint64_t>(cols));
  std::vector<float> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    kernels::dequantize_row(type, bytes.data() + r * row_bytes, out.data() + r * cols, cols);
  return out;
}

std::vector<uint8_t> rtn(DType type, const Layer& l) {
  const size_t row_bytes = *tensor::row_size_bytes(type, static_cast<uint64_t>(l.cols));
  std::vector<uint8_t> out(row_bytes * static_cast<size_t>(l.rows));
  for (int64_t r = 0; r < l.rows; ++r)
    kernels::quantize_row(type, l.w.data() + r * l.cols, out.data() + r * row_bytes, l.cols);
  return out;
}

class Calibrated : public ::testing::TestWithParam<DType> {};

TEST_P(Calibrated, GridLevelsReproduceReferenceBytes) {
  const DType type = GetParam();
  const Layer l = make_layer(4, 256, 11);
  const std::vector<uint8_t> ref = rtn(type, l);
  const std::vector<float> y = decode(type, ref, l.rows, l.cols);
  const size_t row_bytes = ref.size() / static_cast<size_t>(l.rows);
  std::vector<uint8_t> rebuilt = ref;
  for (int64_t r = 0; r < l.rows; ++r) {
    RowGrid grid;
    grid_of_row(type, ref.data() + r * row_bytes, l.cols, grid);
    std::vector<int32_t> levels(static_cast<size_t>(l.cols));
    for (int64_t i = 0; i < l.cols; ++i) {
      const int64_t g = i / grid.group;
      levels[i] = grid.level(g, y[r * l.cols + i]);
      // Every decoded value lies on the grid.
      ASSERT_NEAR(grid.value(g, levels[i]), y[r * l.cols + i],
                  1e-6 * std::fabs(grid.scale[g]) + 1e-12)
          << tensor::dtype_name(type) << " row " << r << " col " << i;
    }
    uint8_t* row = rebuilt.data() + r * row_bytes;
    std::vector<int32_t> zeros(levels.size(), grid.qmin);
    set_levels(type, zeros.data(), l.cols, row);  // scribble, then write the levels back
    set_levels(type, levels.data(), l.cols, row);
  }
  // Q8_0's -128 level is never produced by the reference, so level choice is unique here.
  EXPECT_EQ(rebuilt, ref) << tensor::dtype_name(type);
}

TEST_P(Calibrated, GptqAndAwqBeatRoundToNearestOnCalibrationInputs) {
  const DType type = GetParam();
  const Layer l = make_layer(16, 256, 7);
  const std::vector<uint8_t> base = rtn(type, l);
  const double e_rtn =
      output_error(l.w.data(), decode(type, base, l.rows, l.cols).data(), l.rows, l.cols, l.h);
  for (bool act_order : {false, true}) {
    for (bool running : {false, true}) {
      std::vector<uint8_t> q = base;
      GptqOptions options;
      options.act_order = act_order;
      options.running_grid = running;
      ASSERT_TRUE(gptq_quantize(type, l.w.data(), l.rows, l.cols, l.h, options, q.data()).ok());
      const double e =
          output_error(l.w.data(), decode(type, q, l.rows, l.cols).data(), l.rows, l.cols, l.h);
      EXPECT_LT(e, 0.9 * e_rtn) << tensor::dtype_name(type) << " act_order " << act_order
                                << " running " << running;
    }
  }
  const AwqMatrix m{type, l.w.data(), l.rows};
  const AwqScales s = awq_search({&m, 1}, l.cols, l.mean_abs, l.h);
  EXPECT_NEAR(s.error_rtn, e_rtn, 1e-9 * e_rtn);
  EXPECT_LE(s.error, s.error_rtn);
  // The outlier channels make a scale worth it at 4-6 bits.
  if (type != DType::kQ8_0) {
    EXPECT_GT(s.alpha, 0.0) << tensor::dtype_name(type);
    EXPECT_LT(s.error, 0.95 * e_rtn) << tensor::dtype_name(type);
  }
  // The scales returned reproduce the error reported.
  std::vector<float> deq(l.w.size());
  rtn_scaled(type, l.w.data(), l.rows, l.cols, s.s.data(), deq.data());
  EXPECT_NEAR(output_error(l.w.data(), deq.data(), l.rows, l.cols, l.h), s.error, 1e-9 * s.error);
}

TEST_P(Calibrated, AwqClipLowersTheOutputErrorItReports) {
  const DType type = GetParam();
  const Layer l = make_layer(16, 256, 9);
  // Scaled weights as AWQ leaves them: columns times s, rows divided by t.
  std::vector<float> s(static_cast<size_t>(l.cols)), t(static_cast<size_t>(l.rows));
  for (int64_t c = 0; c < l.cols; ++c)
    s[c] = static_cast<float>(std::pow(l.mean_abs[c], 0.3));
  for (int64_t r = 0; r < l.rows; ++r)
    t[r] = 0.5f + 0.1f * static_cast<float>(r);
  std::vector<float> w(l.w.size());
  for (int64_t r = 0; r < l.rows; ++r) {
    for (int64_t c = 0; c < l.cols; ++c)
      w[r * l.cols + c] = l.w[r * l.cols + c] * s[c] / t[r];
  }
  const std::vector<float> scaled = w;
  const AwqClipResult res = awq_clip(type, w.data(), l.rows, l.cols, s.data(), t.data(), l.h);
  // Recompute both errors in the original weights' space, independently of awq_clip.
  auto error_of = [&](const std::vector<float>& x) {
    std::vector<float> deq(x.size());
    rtn_scaled(type, x.data(), l.rows, l.cols, nullptr, deq.data());
    for (int64_t r = 0; r < l.rows; ++r) {
      for (int64_t c = 0; c < l.cols; ++c)
        deq[r * l.cols + c] *= t[r] / s[c];
    }
    return output_error(l.w.data(), deq.data(), l.rows, l.cols, l.h);
  };
  const double before = error_of(scaled), after = error_of(w);
  EXPECT_NEAR(res.error_before, before, 1e-3 * before) << tensor::dtype_name(type);
  EXPECT_NEAR(res.error, after, 1e-3 * after) << tensor::dtype_name(type);
  EXPECT_LE(res.error, res.error_before);
  // Clipping only shrinks: every weight stays within its unclipped value's magnitude and sign.
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_LE(std::fabs(w[i]), std::fabs(scaled[i]));
    ASSERT_GE(w[i] * scaled[i], 0.0f);
  }
  // Heavy-tailed weights at <= 6 bits: clipping the largest pays on some rows.
  if (type != DType::kQ8_0) {
    EXPECT_GT(res.rows_clipped, 0) << tensor::dtype_name(type);
    EXPECT_LT(res.error, res.error_before) << tensor::dtype_name(type);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, Calibrated,
                         ::testing::Values(DType::kQ4_0, DType::kQ5_0, DType::kQ8_0, DType::kQ2_K,
                                           DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K),
                         [](const auto& p) { return std::string(tensor::dtype_name(p.param)); });

TEST(Gptq, SingularHessianIsAnError) {
  // A Hessian with a negative diagonal is not positive definite whatever the damping.
  std::vector<double> h(32 * 32, 0.0);
  for (int i = 0; i < 32; ++i)
    h[i * 32 + i] = i == 3 ? -1e6 : 1.0;
  std::vector<float> w(32, 0.1f);
  std::vector<uint8_t> q(18);
  kernels::quantize_row(DType::kQ4_0, w.data(), q.data(), 32);
  const Status st = gptq_quantize(DType::kQ4_0, w.data(), 1, 32, h, GptqOptions{}, q.data());
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("positive definite"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace pagoda::convert
