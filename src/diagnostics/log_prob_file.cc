#include "diagnostics/log_prob_file.h"

#include <cerrno>
#include <cstring>
#include <utility>

#include "tensor/float16.h"

namespace pagoda::diagnostics {
namespace {

constexpr char kMagic[8] = {'P', 'G', 'D', 'L', 'O', 'G', 'P', '1'};
constexpr size_t kHeaderBytes = 8 + 4 * 4;
constexpr uint32_t kMaxVocab = 1u << 24;

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

Result<LogProbReader> LogProbReader::parse(std::span<const uint8_t> bytes) {
  if (bytes.size() < kHeaderBytes + 8 || std::memcmp(bytes.data(), kMagic, 8) != 0) {
    return invalid_argument("not a pagoda log-probability file (magic 'PGDLOGP1' missing)");
  }
  LogProbReader r;
  const uint8_t* p = bytes.data() + 8;
  r.header_.n_vocab = load<uint32_t>(p);
  r.header_.n_ctx = load<uint32_t>(p + 4);
  r.header_.stride = load<uint32_t>(p + 8);
  if (load<uint32_t>(p + 12) != 0) return invalid_argument("reserved header field is not 0");
  if (r.header_.n_vocab == 0 || r.header_.n_vocab > kMaxVocab) {
    return invalid_argument("n_vocab {} out of range [1, {}]", r.header_.n_vocab, kMaxVocab);
  }
  if (r.header_.n_ctx < 4 || r.header_.n_ctx > (1u << 24)) {
    return invalid_argument("n_ctx {} out of range", r.header_.n_ctx);
  }
  if (r.header_.stride >= r.header_.n_ctx) {
    return invalid_argument("stride {} must be below n_ctx {}", r.header_.stride, r.header_.n_ctx);
  }
  size_t off = kHeaderBytes;
  const uint64_t num_tokens = load<uint64_t>(bytes.data() + off);
  off += 8;
  if (num_tokens > (bytes.size() - off) / 4) {
    return invalid_argument("num_tokens {} exceeds the file size", num_tokens);
  }
  r.tokens_ = bytes.subspan(off, static_cast<size_t>(num_tokens) * 4);
  off += r.tokens_.size();
  for (uint64_t i = 0; i < num_tokens; ++i) {
    const int32_t t = r.token(i);
    if (t < 0 || static_cast<uint32_t>(t) >= r.header_.n_vocab) {
      return invalid_argument("token {} = {} out of range [0, {})", i, t, r.header_.n_vocab);
    }
  }
  if (bytes.size() - off < 8) return invalid_argument("num_rows is missing");
  r.num_rows_ = load<uint64_t>(bytes.data() + off);
  off += 8;
  const uint64_t row_bytes = uint64_t{2} * r.header_.n_vocab;
  const uint64_t left = bytes.size() - off;
  if (left % row_bytes != 0 || r.num_rows_ != left / row_bytes) {
    return invalid_argument("num_rows {} does not match the {} bytes of rows ({} per row)",
                            r.num_rows_, left, row_bytes);
  }
  r.rows_ = bytes.subspan(off);
  return r;
}

Result<LogProbReader> LogProbReader::open(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  auto r = parse(file->bytes());
  if (!r.ok()) return r.status().with_context(path);
  r->file_ = std::move(file);
  return r;
}

int32_t LogProbReader::token(uint64_t i) const {
  return load<int32_t>(tokens_.data() + static_cast<size_t>(i) * 4);
}

void LogProbReader::row(uint64_t i, std::span<float> out) const {
  const uint8_t* p = rows_.data() + static_cast<size_t>(i) * 2 * header_.n_vocab;
  for (uint32_t k = 0; k < header_.n_vocab; ++k)
    out[k] = tensor::fp16_to_fp32(load<uint16_t>(p + 2 * k));
}

Result<LogProbWriter> LogProbWriter::create(const std::string& path, const LogProbHeader& header,
                                            std::span<const int32_t> tokens, uint64_t num_rows) {
  LogProbWriter w;
  w.file_ = std::fopen(path.c_str(), "wb");
  if (w.file_ == nullptr) return io_error("cannot create {}: {}", path, std::strerror(errno));
  w.path_ = path;
  w.n_vocab_ = header.n_vocab;
  w.rows_left_ = num_rows;
  const uint32_t fields[4] = {header.n_vocab, header.n_ctx, header.stride, 0};
  const uint64_t num_tokens = tokens.size();
  bool ok = std::fwrite(kMagic, 1, 8, w.file_) == 8 && std::fwrite(fields, 4, 4, w.file_) == 4 &&
            std::fwrite(&num_tokens, 8, 1, w.file_) == 1 &&
            std::fwrite(tokens.data(), 4, tokens.size(), w.file_) == tokens.size() &&
            std::fwrite(&num_rows, 8, 1, w.file_) == 1;
  if (!ok) return io_error("cannot write {}: {}", path, std::strerror(errno));
  return w;
}

LogProbWriter::LogProbWriter(LogProbWriter&& o) noexcept {
  *this = std::move(o);
}

LogProbWriter& LogProbWriter::operator=(LogProbWriter&& o) noexcept {
  if (this != &o) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = std::exchange(o.file_, nullptr);
    path_ = std::move(o.path_);
    n_vocab_ = o.n_vocab_;
    rows_left_ = o.rows_left_;
    buffer_ = std::move(o.buffer_);
  }
  return *this;
}

LogProbWriter::~LogProbWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

Status LogProbWriter::add_row(std::span<const float> log_probs) {
  if (file_ == nullptr) return failed_precondition("{} is closed", path_);
  if (log_probs.size() != n_vocab_) {
    return invalid_argument("row of {} values, n_vocab is {}", log_probs.size(), n_vocab_);
  }
  if (rows_left_ == 0) return out_of_range("{}: more rows than announced", path_);
  buffer_.resize(n_vocab_);
  for (size_t k = 0; k < log_probs.size(); ++k)
    buffer_[k] = tensor::fp32_to_fp16(log_probs[k]);
  if (std::fwrite(buffer_.data(), 2, buffer_.size(), file_) != buffer_.size()) {
    return io_error("cannot write {}: {}", path_, std::strerror(errno));
  }
  --rows_left_;
  return Status();
}

Status LogProbWriter::finish() {
  if (file_ == nullptr) return failed_precondition("{} is closed", path_);
  const bool closed = std::fclose(std::exchange(file_, nullptr)) == 0;
  if (!closed) return io_error("cannot write {}: {}", path_, std::strerror(errno));
  if (rows_left_ != 0) return internal_error("{}: {} rows missing", path_, rows_left_);
  return Status();
}

}  // namespace pagoda::diagnostics
