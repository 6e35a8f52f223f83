// ProgressBar: progress of a long job (synth, quantize) on stderr. On a terminal: one line
// redrawn at most ~10 times a second ("[#####.....] 12/201 blk.3.ffn_up.weight 1.1/2.2 GiB
// 350 MiB/s ETA 0:03"). Otherwise (a pipe, a log file): a plain line every 10 seconds, so short
// jobs print nothing and long ones leave a trace. Not thread-safe: call from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace pagoda::cli {

class ProgressBar {
 public:
  // `label`: what is happening ("quantize"); `out`: where to draw (stderr).
  explicit ProgressBar(std::string label, std::FILE* out = stderr);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // item_index is 0-based; bytes_done <= bytes_total.
  void update(size_t item_index, size_t num_items, std::string_view item_name, uint64_t bytes_done,
              uint64_t bytes_total);
  // Clears the terminal line (no-op otherwise). Called by the destructor too.
  void finish();

  // Seconds since construction.
  double elapsed_seconds() const;

 private:
  std::string render(size_t item_index, size_t num_items, std::string_view item_name,
                     uint64_t bytes_done, uint64_t bytes_total, int width) const;

  std::string label_;
  std::FILE* out_;
  bool tty_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// "1.23 GiB", "512 B".
std::string human_bytes(uint64_t n);
// "1:02:03" or "2:03".
std::string human_duration(double seconds);

}  // namespace pagoda::cli
