// ProgressBar: progress of a long job (synth, quantize, perplexity, run-batch) on stderr. On a
// terminal: one line redrawn at most ~10 times a second. Otherwise (a pipe, a log file): a plain
// line every 10 seconds, so short jobs print nothing and long ones leave a trace. Two units:
//   bytes (the default):  "quantize [#####...]  50% 12/201 1.1 GiB/2.2 GiB 350 MiB/s ETA 0:03
//                          blk.3.ffn_up.weight" (item counter, then bytes)
//   a counted noun:       "perplexity [#####...]  50% 42/84 windows 3.1 windows/s ETA 0:13"
// Not thread-safe: call from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace pagoda::cli {

class ProgressBar {
 public:
  // `label`: what is happening ("quantize"). `unit`: empty for bytes, else the plural noun of
  // what `done`/`total` count ("windows", "lines"). `out`: where to draw (stderr).
  explicit ProgressBar(std::string label, std::string unit = {}, std::FILE* out = stderr);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Byte progress: item_index is 0-based; bytes_done <= bytes_total.
  void update(size_t item_index, size_t num_items, std::string_view item_name, uint64_t bytes_done,
              uint64_t bytes_total);
  // Counted progress (a bar made with a unit): done of total, `note` printed last ("3 errors").
  // `force` draws now (the final state) regardless of the redraw interval.
  void update_count(uint64_t done, uint64_t total, std::string_view note = {}, bool force = false);
  // Clears the terminal line (no-op otherwise). Called by the destructor too.
  void finish();

  // Seconds since construction.
  double elapsed_seconds() const;

  // The line update() would draw, `width` columns wide (0: not a terminal, no bar, no cut).
  // Public for tests.
  std::string render(size_t item_index, size_t num_items, std::string_view item_name, uint64_t done,
                     uint64_t total, int width) const;

 private:
  void draw(size_t item_index, size_t num_items, std::string_view item_name, uint64_t done,
            uint64_t total, bool force);

  std::string label_;
  std::string unit_;
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
