#include "cli/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

namespace pagoda::cli {
namespace {

constexpr auto kTtyInterval = std::chrono::milliseconds(100);
constexpr auto kLogInterval = std::chrono::seconds(10);

int terminal_width(std::FILE* out) {
  winsize ws{};
  if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40) return ws.ws_col;
  return 100;
}

}  // namespace

std::string human_bytes(uint64_t n) {
  const double v = static_cast<double>(n);
  if (n >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", v / double(uint64_t{1} << 30));
  if (n >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", v / double(uint64_t{1} << 20));
  if (n >= (uint64_t{1} << 10)) return fmt::format("{:.1f} KiB", v / double(uint64_t{1} << 10));
  return fmt::format("{} B", n);
}

std::string human_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<uint64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

ProgressBar::ProgressBar(std::string label, std::string unit, std::FILE* out)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      out_(out),
      tty_(isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  finish();
}

double ProgressBar::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string ProgressBar::render(size_t item_index, size_t num_items, std::string_view item_name,
                                uint64_t done, uint64_t total, int width) const {
  const double elapsed = elapsed_seconds();
  const double fraction =
      total > 0 ? std::min(1.0, static_cast<double>(done) / static_cast<double>(total)) : 1.0;
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  const double eta = rate > 0 && total >= done ? static_cast<double>(total - done) / rate : -1;
  const std::string stats =
      unit_.empty() ? fmt::format("{}/{} {}/{} {}/s ETA {}", item_index + 1, num_items,
                                  human_bytes(done), human_bytes(total),
                                  human_bytes(static_cast<uint64_t>(rate)), human_duration(eta))
                    : fmt::format("{}/{} {} {:.1f} {}/s ETA {}", done, total, unit_, rate, unit_,
                                  human_duration(eta));
  if (width <= 0) {
    return item_name.empty()
               ? fmt::format("{}: {:.0f}% {}", label_, fraction * 100, stats)
               : fmt::format("{}: {:.0f}% {} {}", label_, fraction * 100, stats, item_name);
  }
  constexpr int kBar = 24;
  const int filled = static_cast<int>(fraction * kBar);
  std::string line = fmt::format("{} [{}{}] {:3.0f}% {}", label_, std::string(filled, '#'),
                                 std::string(kBar - filled, '.'), fraction * 100, stats);
  // The item name (or note) goes last and is cut to fit the terminal.
  const int room = width - 1 - static_cast<int>(line.size()) - 1;
  if (room > 8 && !item_name.empty()) {
    line += ' ';
    line += item_name.size() <= static_cast<size_t>(room)
                ? std::string(item_name)
                : "..." + std::string(item_name.substr(item_name.size() - (room - 3)));
  }
  if (static_cast<int>(line.size()) > width - 1) line.resize(static_cast<size_t>(width - 1));
  return line;
}

void ProgressBar::draw(size_t item_index, size_t num_items, std::string_view item_name,
                       uint64_t done, uint64_t total, bool force) {
  const auto now = std::chrono::steady_clock::now();
  const std::chrono::milliseconds interval =
      tty_ ? std::chrono::milliseconds(kTtyInterval) : std::chrono::milliseconds(kLogInterval);
  if (!force && now - last_draw_ < interval) return;
  last_draw_ = now;
  if (tty_) {
    const std::string line =
        render(item_index, num_items, item_name, done, total, terminal_width(out_));
    std::fprintf(out_, "\r%s\033[K", line.c_str());
    drawn_ = true;
  } else {
    const std::string line = render(item_index, num_items, item_name, done, total, 0);
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void ProgressBar::update(size_t item_index, size_t num_items, std::string_view item_name,
                         uint64_t bytes_done, uint64_t bytes_total) {
  draw(item_index, num_items, item_name, bytes_done, bytes_total, /*force=*/false);
}

void ProgressBar::update_count(uint64_t done, uint64_t total, std::string_view note, bool force) {
  draw(0, 0, note, done, total, force);
}

void ProgressBar::finish() {
  if (tty_ && drawn_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  }
  drawn_ = false;
}

}  // namespace pagoda::cli
