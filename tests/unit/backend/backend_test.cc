// Backend seam: everything device-shaped goes through the Backend the model is built on. A
// RecordingBackend wraps the CPU backend and counts what reaches it: a model loaded on it places
// its weights once, its KV storage is allocated as kKvCache and copies blocks through it, every
// forward pass runs through execute(); and its logits are the CPU backend's bit for bit. A
// backend that leaves the weights where they are (place_weights returns null) gives the same
// bits too (the kernels read the file mapping's layout).
#include "backend/backend.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "backend/kv_storage.h"
#include "diagnostics/sequence_session.h"
#include "loader/model_loader.h"
#include "test_support.h"

namespace pagoda::backend {
namespace {

class RecordingBackend final : public Backend {
 public:
  explicit RecordingBackend(bool place) : place_(place) {}
  std::string_view name() const override { return "recording"; }
  Result<std::unique_ptr<DeviceBuffer>> allocate(uint64_t bytes, MemoryKind kind) override {
    ++(kind == MemoryKind::kKvCache ? kv_allocations : weight_allocations);
    return cpu_backend().allocate(bytes, kind);
  }
  void copy(uint8_t* dst, const uint8_t* src, uint64_t bytes) override {
    ++copies;
    cpu_backend().copy(dst, src, bytes);
  }
  std::unique_ptr<DeviceBuffer> place_weights(
      std::span<kernels::WeightView* const> views) override {
    ++placements;
    num_views = views.size();
    return place_ ? cpu_backend().place_weights(views) : nullptr;
  }
  void execute(const std::function<void()>& pass) override {
    ++executions;
    cpu_backend().execute(pass);
  }

  int kv_allocations = 0, weight_allocations = 0, copies = 0, placements = 0, executions = 0;
  size_t num_views = 0;

 private:
  bool place_;
};

std::vector<float> logits_of(model::Model& m, const std::vector<int32_t>& tokens) {
  auto session = diagnostics::SequenceSession::create(m, 64);
  EXPECT_TRUE(session.ok()) << session.status().to_string();
  std::vector<float> all, logits;
  const size_t half = tokens.size() / 2;
  // Two feeds: a prompt chunk, then the rest attending to it.
  EXPECT_TRUE(session->feed(std::span(tokens).first(half), true, logits).ok());
  all = logits;
  EXPECT_TRUE(session->feed(std::span(tokens).subspan(half), true, logits).ok());
  all.insert(all.end(), logits.begin(), logits.end());
  return all;
}

class BackendSeamTest : public ::testing::TestWithParam<bool> {};

TEST_P(BackendSeamTest, ModelRunsThroughItsBackendWithTheCpuBits) {
  const auto path = testing::fixture("models/llama-Q4_0.gguf");
  PAGODA_REQUIRE_FIXTURE(path);
  auto reference = loader::load_model(path.string());
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  EXPECT_EQ(&reference->model->backend(), &cpu_backend());

  RecordingBackend recording(/*place=*/GetParam());
  auto loaded = loader::load_model(path.string(), recording);
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  model::Model& m = *loaded->model;
  EXPECT_EQ(&m.backend(), &recording);
  EXPECT_EQ(recording.placements, 1);
  // Every layer's q, k, v, o, gate, up, down and the output matrix.
  EXPECT_EQ(recording.num_views, static_cast<size_t>(m.config().num_layers) * 7 + 1);
  EXPECT_EQ(recording.weight_allocations, 0);  // the CPU backend's own allocation is not seen
  EXPECT_EQ(recording.kv_allocations, 0);

  const std::vector<int32_t> tokens = {1, 450, 7483, 310, 3444, 338, 263, 2107, 29892, 322};
  const std::vector<float> want = logits_of(*reference->model, tokens);
  const int before = recording.executions;
  const std::vector<float> got = logits_of(m, tokens);
  EXPECT_EQ(recording.kv_allocations, 1);
  EXPECT_EQ(recording.executions - before, 2);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
      << "logits differ from the CPU backend's";
}

INSTANTIATE_TEST_SUITE_P(PlacedOrMapped, BackendSeamTest, ::testing::Bool());

TEST(KvStorageTest, AllocatesAndCopiesBlocksThroughItsBackend) {
  RecordingBackend recording(true);
  const KvLayout layout{3, 2, 32};
  auto kv = KvStorage::create(recording, layout, 4, 8, tensor::DType::kF16);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  EXPECT_EQ(recording.kv_allocations, 1);
  ASSERT_EQ(kv->layers().size(), 3u);
  const uint64_t block = 2 * 8 * 32 * sizeof(uint16_t);  // heads x slots x head_dim f16
  EXPECT_EQ(*KvStorage::bytes_per_block(layout, 8, tensor::DType::kF16), 2 * 3 * block);
  for (const kernels::KvLayerView& l : kv->layers()) {
    std::memset(static_cast<uint8_t*>(l.k) + block, 0x5A, block);  // block 1
    std::memset(static_cast<uint8_t*>(l.v) + 3 * block, 0, block);
  }
  kv->copy_block(1, 3);
  EXPECT_EQ(recording.copies, 2 * 3);  // K and V of every layer
  for (const kernels::KvLayerView& l : kv->layers()) {
    const auto* k = static_cast<const uint8_t*>(l.k);
    EXPECT_EQ(std::memcmp(k + block, k + 3 * block, block), 0);
  }
}

}  // namespace
}  // namespace pagoda::backend
