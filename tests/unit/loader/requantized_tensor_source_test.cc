// RequantizedTensorSource (self-speculation's draft weights) on a real model file: projections
// become Q4_0, embeddings and norms stay as they were, and every converted weight is within Q4_0's
// error bound of the original: per block of 32 the step is d = max|x| / 8 (stored as f16, hence
// the 0.5% slack), values round to the nearest multiple of d, and the one end of [-8d, 7d] that
// is clamped is off by d.
#include "loader/requantized_tensor_source.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "format/gguf_file.h"
#include "kernels/quant.h"
#include "loader/gguf_tensor_source.h"
#include "test_support.h"

namespace pagoda::loader {
namespace {

TEST(RequantizedTensorSource, ProjectionsBecomeQ4_0WithinItsErrorBound) {
  const std::string path = pagoda::testing::fixture("models/llama-Q8_0.gguf").string();
  PAGODA_REQUIRE_FIXTURE(path);
  auto open = [&]() {
    auto file = format::GgufFile::open(path);
    EXPECT_TRUE(file.ok());
    return make_gguf_tensor_source(std::shared_ptr<const format::GgufFile>(std::move(*file)));
  };
  const std::unique_ptr<model::TensorSource> plain = open();
  RequantizedTensorSource q4(open(), tensor::DType::kQ4_0);
  EXPECT_EQ(q4.num_tensors(), plain->num_tensors());
  int converted = 0;
  for (const char* name : {"blk.0.attn_q.weight", "blk.0.ffn_down.weight", "blk.1.attn_v.weight",
                           "output.weight", "token_embd.weight", "blk.0.attn_norm.weight"}) {
    const model::TensorRef* a = plain->find(name);
    const model::TensorRef* b = q4.find(name);
    if (a == nullptr) {
      EXPECT_EQ(b, nullptr) << name;
      continue;
    }
    ASSERT_NE(b, nullptr) << name;
    EXPECT_EQ(b, q4.find(name)) << name << ": converted once";
    const std::string n = name;
    if (n == "token_embd.weight" || a->n_dims != 2) {
      EXPECT_EQ(b->dtype, a->dtype) << name;
      ASSERT_EQ(b->size_bytes, a->size_bytes) << name;
      EXPECT_EQ(std::memcmp(b->data, a->data, a->size_bytes), 0) << name;
      continue;
    }
    ASSERT_EQ(b->dtype, tensor::DType::kQ4_0) << name;
    ++converted;
    const int64_t cols = a->dims[0], rows = a->dims[1];
    EXPECT_EQ(b->dims[0], cols);
    EXPECT_EQ(b->dims[1], rows);
    const uint64_t ra = *tensor::row_size_bytes(a->dtype, static_cast<uint64_t>(cols));
    const uint64_t rb = *tensor::row_size_bytes(b->dtype, static_cast<uint64_t>(cols));
    EXPECT_EQ(b->size_bytes, rb * static_cast<uint64_t>(rows));
    std::vector<float> x(static_cast<size_t>(cols)), y(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; r += 7) {
      kernels::dequantize_row(a->dtype, a->data + static_cast<uint64_t>(r) * ra, x.data(), cols);
      kernels::dequantize_row(b->dtype, b->data + static_cast<uint64_t>(r) * rb, y.data(), cols);
      for (int64_t blk = 0; blk < cols; blk += 32) {
        float amax = 0;
        for (int64_t i = blk; i < blk + 32; ++i)
          amax = std::max(amax, std::fabs(x[static_cast<size_t>(i)]));
        for (int64_t i = blk; i < blk + 32; ++i) {
          ASSERT_LE(std::fabs(x[static_cast<size_t>(i)] - y[static_cast<size_t>(i)]),
                    amax / 8 * 1.005f + 1e-7f)
              << name << " row " << r << " col " << i;
        }
      }
    }
  }
  EXPECT_GE(converted, 3);
}

TEST(RequantizedTensorSource, ConvertsOnlyToNarrowerTypesAndWholeBlocks) {
  model::TensorRef ref;
  ref.name = "blk.0.attn_q.weight";
  ref.n_dims = 2;
  ref.dims[0] = 64;
  ref.dims[1] = 4;
  ref.dtype = tensor::DType::kF16;
  EXPECT_TRUE(RequantizedTensorSource::converts(ref, tensor::DType::kQ4_0));
  ref.dtype = tensor::DType::kQ4_0;
  EXPECT_FALSE(RequantizedTensorSource::converts(ref, tensor::DType::kQ4_0));
  ref.dtype = tensor::DType::kQ4_K;  // 4.5 bits: Q4_0 is not narrower
  EXPECT_FALSE(RequantizedTensorSource::converts(ref, tensor::DType::kQ4_0));
  ref.dtype = tensor::DType::kF32;
  ref.dims[0] = 48;  // rows are not whole Q4_0 blocks
  EXPECT_FALSE(RequantizedTensorSource::converts(ref, tensor::DType::kQ4_0));
  ref.dims[0] = 64;
  ref.name = "blk.0.attn_norm.weight";
  ref.n_dims = 1;
  EXPECT_FALSE(RequantizedTensorSource::converts(ref, tensor::DType::kQ4_0));
}

}  // namespace
}  // namespace pagoda::loader
