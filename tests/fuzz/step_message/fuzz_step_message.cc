// libFuzzer target: decode_step on arbitrary bytes (what a tensor-parallel worker receives from
// rank 0). Whatever decodes must re-encode to the same bytes, and every span of the decoded
// batch must lie inside the message's own arrays (ASan sees a read that escapes).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "model/step_message.h"

namespace {
volatile int64_t g_sink = 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda::model;
  auto msg = decode_step(std::span<const uint8_t>(data, size));
  if (!msg.ok()) return 0;
  const ForwardBatch& b = msg->batch;
  for (int32_t t : b.tokens)
    g_sink = g_sink + t;
  for (const SequenceSlice& s : b.sequences) {
    for (int32_t id : s.block_table)
      g_sink = g_sink + id;
    for (int32_t id : s.sliding_block_table)
      g_sink = g_sink + id;
  }
  for (const KvBlockCopy& c : b.block_copies)
    g_sink = g_sink + c.src + c.dst;
  const std::vector<uint8_t> again = encode_step(msg->op, msg->kv, b);
  if (again.size() != size) std::abort();
  for (size_t i = 0; i < size; ++i) {
    if (again[i] != data[i]) std::abort();
  }
  return 0;
}
