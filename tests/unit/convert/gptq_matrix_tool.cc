// Helper of gptq_oracle.py (not a test by itself): GPTQ of one matrix by convert::gptq_quantize.
//   gptq_matrix_tool TYPE ROWS COLS ACT_ORDER RUNNING W.f32 H.f64 OUT_RTN OUT_GPTQ
// reads W [rows, cols] f32 and H [cols, cols] f64 (little-endian, row-major), writes the
// reference round-to-nearest encoding (whose scales are the static grid) and GPTQ's encoding.
//   gptq_matrix_tool clip TYPE ROWS COLS W.f32 H.f64 OUT_CLIPPED.f32
// runs AWQ's clipping search (convert::awq_clip, no scales) and writes the clipped weights.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "convert/quantize/awq.h"
#include "convert/quantize/gptq.h"
#include "kernels/quant.h"

namespace {

template <class T>
bool read_all(const char* path, std::vector<T>& v) {
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  return static_cast<bool>(f);
}

template <class T>
bool write_all(const char* path, const std::vector<T>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()),
          static_cast<std::streamsize>(v.size() * sizeof(T)));
  return static_cast<bool>(f);
}

int run_clip(char** argv) {
  using namespace pagoda;
  const auto type = tensor::dtype_from_name(argv[2]);
  const int64_t rows = std::atoll(argv[3]), cols = std::atoll(argv[4]);
  if (!type || rows <= 0 || cols <= 0) return 2;
  std::vector<float> w(static_cast<size_t>(rows * cols));
  std::vector<double> h(static_cast<size_t>(cols * cols));
  if (!read_all(argv[5], w) || !read_all(argv[6], h)) return 3;
  const convert::AwqClipResult r =
      convert::awq_clip(*type, w.data(), rows, cols, nullptr, nullptr, h);
  std::printf("%lld rows clipped, error %.6g (before %.6g)\n",
              static_cast<long long>(r.rows_clipped), r.error, r.error_before);
  return write_all(argv[7], w) ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace pagoda;
  if (argc == 8 && std::string(argv[1]) == "clip") return run_clip(argv);
  if (argc != 10) {
    std::fprintf(stderr, "usage: %s TYPE ROWS COLS ACT_ORDER RUNNING W H OUT_RTN OUT_GPTQ\n",
                 argv[0]);
    return 2;
  }
  const auto type = tensor::dtype_from_name(argv[1]);
  const int64_t rows = std::atoll(argv[2]), cols = std::atoll(argv[3]);
  if (!type || rows <= 0 || cols <= 0) return 2;
  std::vector<float> w(static_cast<size_t>(rows * cols));
  std::vector<double> h(static_cast<size_t>(cols * cols));
  if (!read_all(argv[6], w) || !read_all(argv[7], h)) return 3;
  const size_t row_bytes = *tensor::row_size_bytes(*type, static_cast<uint64_t>(cols));
  std::vector<uint8_t> enc(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    kernels::quantize_row(*type, w.data() + r * cols, enc.data() + r * row_bytes, cols);
  if (!write_all(argv[8], enc)) return 3;
  convert::GptqOptions options;
  options.act_order = std::atoi(argv[4]) != 0;
  options.running_grid = std::atoi(argv[5]) != 0;
  const Status st = convert::gptq_quantize(*type, w.data(), rows, cols, h, options, enc.data());
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  return write_all(argv[9], enc) ? 0 : 3;
}
