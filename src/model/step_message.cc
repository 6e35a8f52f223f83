#include "model/step_message.h"

#include <cstring>

#include "base/checked_math.h"

namespace pagoda::model {
namespace {

constexpr uint32_t kMagic = 0x31505450;  // "PTP1"
constexpr uint64_t kMaxCount = uint64_t{1} << 28;

class Writer {
 public:
  template <typename T>
  void put(T v) {
    const size_t at = out.size();
    out.resize(at + sizeof(T));
    std::memcpy(out.data() + at, &v, sizeof(T));
  }
  void put_array(const int32_t* p, size_t n) {
    const size_t at = out.size();
    out.resize(at + n * sizeof(int32_t));
    if (n > 0) std::memcpy(out.data() + at, p, n * sizeof(int32_t));
  }
  std::vector<uint8_t> out;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : bytes_(b) {}
  template <typename T>
  Result<T> get(const char* field) {
    if (bytes_.size() - at_ < sizeof(T)) {
      return invalid_argument("step message: truncated at {}", field);
    }
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  // n int32 values, after checking they are all there.
  Status get_array(const char* field, uint64_t n, std::vector<int32_t>& out) {
    auto bytes = checked_mul<uint64_t>(n, sizeof(int32_t));
    if (n > kMaxCount || !bytes || *bytes > bytes_.size() - at_) {
      return invalid_argument("step message: {} count {} exceeds the message", field, n);
    }
    out.resize(static_cast<size_t>(n));
    if (n > 0) std::memcpy(out.data(), bytes_.data() + at_, static_cast<size_t>(*bytes));
    at_ += static_cast<size_t>(*bytes);
    return Status();
  }
  bool done() const { return at_ == bytes_.size(); }

 private:
  std::span<const uint8_t> bytes_;
  size_t at_ = 0;
};

}  // namespace

std::vector<uint8_t> encode_step(StepOp op, const KvCacheShape& kv, const ForwardBatch& batch) {
  Writer w;
  w.put<uint32_t>(kMagic);
  w.put<uint32_t>(static_cast<uint32_t>(op));
  if (op != StepOp::kForward && op != StepOp::kReport) return std::move(w.out);
  w.put<uint64_t>(kv.id);
  w.put<int64_t>(kv.num_blocks);
  w.put<int32_t>(kv.block_size);
  w.put<uint32_t>(static_cast<uint32_t>(kv.dtype));
  w.put<uint8_t>(kv.kv_groups ? 1 : 0);
  w.put<uint8_t>(batch.flash_attention ? 1 : 0);
  w.put<uint64_t>(batch.tokens.size());
  w.put_array(batch.tokens.data(), batch.tokens.size());
  w.put<uint64_t>(batch.positions.size());
  w.put_array(batch.positions.data(), batch.positions.size());
  w.put<uint64_t>(batch.logit_rows.size());
  w.put_array(batch.logit_rows.data(), batch.logit_rows.size());
  w.put<uint64_t>(batch.sequences.size());
  for (const SequenceSlice& s : batch.sequences) {
    w.put<int32_t>(s.token_begin);
    w.put<int32_t>(s.num_tokens);
    w.put<uint64_t>(s.block_table.size());
    w.put_array(s.block_table.data(), s.block_table.size());
    w.put<uint64_t>(s.sliding_block_table.size());
    w.put_array(s.sliding_block_table.data(), s.sliding_block_table.size());
  }
  w.put<uint64_t>(batch.block_copies.size());
  for (const KvBlockCopy& c : batch.block_copies) {
    w.put<int32_t>(c.src);
    w.put<int32_t>(c.dst);
  }
  return std::move(w.out);
}

Result<StepMessage> decode_step(std::span<const uint8_t> bytes) {
  Reader r(bytes);
  StepMessage m;
  PAGODA_ASSIGN_OR_RETURN(uint32_t magic, r.get<uint32_t>("magic"));
  if (magic != kMagic) return invalid_argument("step message: bad magic {:#x}", magic);
  PAGODA_ASSIGN_OR_RETURN(uint32_t op, r.get<uint32_t>("op"));
  if (op == static_cast<uint32_t>(StepOp::kShutdown)) {
    m.op = StepOp::kShutdown;
    if (!r.done()) return invalid_argument("step message: bytes after shutdown");
    return m;
  }
  if (op != static_cast<uint32_t>(StepOp::kForward) &&
      op != static_cast<uint32_t>(StepOp::kReport)) {
    return invalid_argument("step message: unknown op {}", op);
  }
  m.op = static_cast<StepOp>(op);
  PAGODA_ASSIGN_OR_RETURN(m.kv.id, r.get<uint64_t>("kv id"));
  PAGODA_ASSIGN_OR_RETURN(m.kv.num_blocks, r.get<int64_t>("kv num_blocks"));
  PAGODA_ASSIGN_OR_RETURN(m.kv.block_size, r.get<int32_t>("kv block_size"));
  PAGODA_ASSIGN_OR_RETURN(uint32_t dtype, r.get<uint32_t>("kv dtype"));
  const tensor::DType kv_types[] = {tensor::DType::kF32, tensor::DType::kF16, tensor::DType::kBF16,
                                    tensor::DType::kQ8_0};
  bool known = false;
  for (tensor::DType t : kv_types) {
    if (static_cast<uint32_t>(t) == dtype) {
      m.kv.dtype = t;
      known = true;
    }
  }
  if (!known) return invalid_argument("step message: kv dtype {} is not a KV cache type", dtype);
  PAGODA_ASSIGN_OR_RETURN(uint8_t groups, r.get<uint8_t>("kv_groups"));
  if (groups > 1) return invalid_argument("step message: kv_groups byte {}", groups);
  m.kv.kv_groups = groups != 0;
  PAGODA_ASSIGN_OR_RETURN(uint8_t flash, r.get<uint8_t>("flash_attention"));
  if (flash > 1) return invalid_argument("step message: flash_attention byte {}", flash);
  m.batch.flash_attention = flash != 0;
  PAGODA_ASSIGN_OR_RETURN(uint64_t nt, r.get<uint64_t>("tokens count"));
  PAGODA_RETURN_IF_ERROR(r.get_array("tokens", nt, m.tokens));
  PAGODA_ASSIGN_OR_RETURN(uint64_t np, r.get<uint64_t>("positions count"));
  PAGODA_RETURN_IF_ERROR(r.get_array("positions", np, m.positions));
  PAGODA_ASSIGN_OR_RETURN(uint64_t nr, r.get<uint64_t>("logit_rows count"));
  PAGODA_RETURN_IF_ERROR(r.get_array("logit_rows", nr, m.logit_rows));
  PAGODA_ASSIGN_OR_RETURN(uint64_t ns, r.get<uint64_t>("sequences count"));
  if (ns > nt) return invalid_argument("step message: {} sequences for {} tokens", ns, nt);
  // Offsets into m.tables: each sequence's table, then its sliding-window table.
  std::vector<std::pair<size_t, size_t>> table_ranges;
  std::vector<int32_t> table;
  for (uint64_t i = 0; i < ns; ++i) {
    SequenceSlice s;
    PAGODA_ASSIGN_OR_RETURN(s.token_begin, r.get<int32_t>("sequence token_begin"));
    PAGODA_ASSIGN_OR_RETURN(s.num_tokens, r.get<int32_t>("sequence num_tokens"));
    for (const char* name : {"block_table", "sliding_block_table"}) {
      PAGODA_ASSIGN_OR_RETURN(uint64_t nb, r.get<uint64_t>(name));
      table.clear();
      PAGODA_RETURN_IF_ERROR(r.get_array(name, nb, table));
      if (m.tables.size() + table.size() > kMaxCount) {
        return invalid_argument("step message: block tables too long");
      }
      table_ranges.emplace_back(m.tables.size(), table.size());
      m.tables.insert(m.tables.end(), table.begin(), table.end());
    }
    m.sequences.push_back(s);
  }
  PAGODA_ASSIGN_OR_RETURN(uint64_t nc, r.get<uint64_t>("block_copies count"));
  std::vector<int32_t> pairs;
  auto nc2 = checked_mul<uint64_t>(nc, 2);
  if (!nc2) return invalid_argument("step message: block_copies count {} overflows", nc);
  PAGODA_RETURN_IF_ERROR(r.get_array("block_copies", *nc2, pairs));
  for (size_t i = 0; i + 1 < pairs.size(); i += 2)
    m.copies.push_back(KvBlockCopy{pairs[i], pairs[i + 1]});
  if (!r.done()) return invalid_argument("step message: trailing bytes");
  const std::span<const int32_t> tables(m.tables);
  for (size_t i = 0; i < m.sequences.size(); ++i) {
    const auto& [begin, count] = table_ranges[2 * i];
    const auto& [sliding_begin, sliding_count] = table_ranges[2 * i + 1];
    m.sequences[i].block_table = tables.subspan(begin, count);
    m.sequences[i].sliding_block_table = tables.subspan(sliding_begin, sliding_count);
  }
  m.batch.tokens = m.tokens;
  m.batch.positions = m.positions;
  m.batch.logit_rows = m.logit_rows;
  m.batch.sequences = m.sequences;
  m.batch.block_copies = m.copies;
  return m;
}

}  // namespace pagoda::model
