// The saved log-probabilities of a perplexity run (`pagoda perplexity --save-logits FILE`), the
// base that `--kl-divergence-base FILE` compares a quantised model with. Every scored position's
// full log-softmax row is kept as IEEE f16 (2 bytes per vocab entry; |error| <= 2^-11 relative,
// ample for KL divergences down to ~1e-5), with the token ids and window settings that produced
// it so a comparison on another text or other settings is refused. Little-endian layout:
//
//   char[8]  magic "PGDLOGP1"
//   u32      n_vocab, n_ctx, stride, reserved (0)
//   u64      num_tokens;  i32 tokens[num_tokens]   (the tokenized text, BOS included)
//   u64      num_rows;    f16 rows[num_rows][n_vocab]   (scored positions in run order)
//
// The reader checks every count against the file size before touching the data (the file is
// untrusted input); rows are decoded from the mapping on demand.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"

namespace pagoda::diagnostics {

struct LogProbHeader {
  uint32_t n_vocab = 0;
  uint32_t n_ctx = 0;
  uint32_t stride = 0;
};

class LogProbReader {
 public:
  // Validates `bytes` (kept by the caller for the reader's lifetime).
  static Result<LogProbReader> parse(std::span<const uint8_t> bytes);
  static Result<LogProbReader> open(const std::string& path);

  const LogProbHeader& header() const { return header_; }
  uint64_t num_rows() const { return num_rows_; }
  std::span<const uint8_t> token_bytes() const { return tokens_; }
  int32_t token(uint64_t i) const;  // precondition: i < num_tokens()
  uint64_t num_tokens() const { return tokens_.size() / 4; }
  // out[0..n_vocab) = row i. precondition: i < num_rows(), out.size() == n_vocab.
  void row(uint64_t i, std::span<float> out) const;

 private:
  std::shared_ptr<MappedFile> file_;
  LogProbHeader header_;
  std::span<const uint8_t> tokens_;
  std::span<const uint8_t> rows_;
  uint64_t num_rows_ = 0;
};

class LogProbWriter {
 public:
  // Creates `path` and writes the header and tokens; exactly num_rows rows must follow.
  static Result<LogProbWriter> create(const std::string& path, const LogProbHeader& header,
                                      std::span<const int32_t> tokens, uint64_t num_rows);
  LogProbWriter(LogProbWriter&&) noexcept;
  LogProbWriter& operator=(LogProbWriter&&) noexcept;
  ~LogProbWriter();

  // Appends one log-softmax row of n_vocab values.
  Status add_row(std::span<const float> log_probs);
  // Flushes and closes; an error if fewer rows than announced were added.
  Status finish();

 private:
  LogProbWriter() = default;
  std::FILE* file_ = nullptr;
  std::string path_;
  uint32_t n_vocab_ = 0;
  uint64_t rows_left_ = 0;
  std::vector<uint16_t> buffer_;
};

}  // namespace pagoda::diagnostics
