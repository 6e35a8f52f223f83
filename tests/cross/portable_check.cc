// The portable kernel table's matmuls (Q4_0, Q8_0, Q4_K, Q5_K, Q6_K) against the scalar reference,
// bit for bit, as a standalone program (no test framework): scripts/check-neon.sh cross-compiles it
// with the kernel sources it needs for AArch64, where the portable table is NEON code, and runs it
// under qemu-aarch64. The x86 build runs the same comparison in kernels_test's every-ISA cases.
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/block_layouts.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "tensor/dtype.h"
#include "tensor/float16.h"

namespace {

using pagoda::kernels::WeightView;
using pagoda::tensor::DType;
namespace cpu = pagoda::kernels::cpu;

// Random blocks of `t`: random level and scale bytes, f16 super-scales of either sign.
std::vector<uint8_t> random_weight(DType t, int64_t rows, int64_t cols, std::mt19937& rng) {
  struct Form {
    size_t bytes, elements;
    std::vector<size_t> f16_at;  // offsets of the block's f16 scales
  };
  const Form f = t == DType::kQ4_0   ? Form{sizeof(cpu::BlockQ4_0), 32, {0}}
                 : t == DType::kQ8_0 ? Form{sizeof(cpu::BlockQ8_0), 32, {0}}
                 : t == DType::kQ4_K ? Form{sizeof(cpu::BlockQ4_K), 256, {0, 2}}
                 : t == DType::kQ5_K ? Form{sizeof(cpu::BlockQ5_K), 256, {0, 2}}
                                     : Form{sizeof(cpu::BlockQ6_K), 256, {208}};
  std::vector<uint8_t> w(static_cast<size_t>(rows * cols) / f.elements * f.bytes);
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (size_t b = 0; b < w.size() / f.bytes; ++b) {
    uint8_t* blk = w.data() + b * f.bytes;
    for (size_t j = 0; j < f.bytes; ++j)
      blk[j] = static_cast<uint8_t>(rng());
    for (size_t at : f.f16_at) {
      const uint16_t d = pagoda::tensor::fp32_to_fp16(scale(rng));
      std::memcpy(blk + at, &d, 2);
    }
  }
  return w;
}

int check(DType t, int64_t rows, int64_t cols, int64_t m, std::mt19937& rng) {
  const std::vector<uint8_t> bytes = random_weight(t, rows, cols, rng);
  const size_t row_bytes = bytes.size() / static_cast<size_t>(rows);
  const WeightView w{t, rows, cols, row_bytes, bytes.data()};
  const cpu::ActLayout l = cpu::act_layout(cpu::act_type_for(t), cols);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> x(static_cast<size_t>(m * cols));
  for (auto& v : x)
    v = g(rng);
  std::vector<uint8_t> acts(static_cast<size_t>(m) * l.row_bytes + 64);
  uint8_t* a = acts.data() + (64 - reinterpret_cast<uintptr_t>(acts.data()) % 64) % 64;
  cpu::reference::quantize_acts(l, x.data(), m, a);
  const std::string_view type = pagoda::tensor::dtype_name(t);
  const auto type_len = static_cast<int>(type.size());
  const cpu::MatmulRowsFn fn = cpu::portable_kernels()->matmul_rows(t);
  if (fn == nullptr) {
    std::printf("portable table has no %.*s matmul\n", type_len, type.data());
    return 1;
  }
  std::vector<float> y(static_cast<size_t>(m * rows));
  fn(w, l, a, m, nullptr, y.data(), rows, 0, rows);
  int bad = 0;
  for (int64_t i = 0; i < m; ++i) {
    const cpu::ActRow row = cpu::act_row(l, a + static_cast<size_t>(i) * l.row_bytes);
    for (int64_t r = 0; r < rows; ++r) {
      const float want = cpu::reference::vec_dot(t, w.row(r), row, cols);
      const float got = y[static_cast<size_t>(i * rows + r)];
      if (std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(want) && bad++ < 5) {
        std::printf("%.*s %lldx%lld token %lld row %lld: %.9g, reference %.9g\n", type_len,
                    type.data(), static_cast<long long>(rows), static_cast<long long>(cols),
                    static_cast<long long>(i), static_cast<long long>(r), got, want);
      }
    }
  }
  return bad;
}

}  // namespace

int main() {
  std::mt19937 rng(2026);
  int bad = 0, cases = 0;
  for (DType t : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const bool k = t == DType::kQ4_K || t == DType::kQ5_K || t == DType::kQ6_K;
    for (int64_t cols : {k ? 256 : 32, k ? 512 : 256, k ? 2304 : 2080}) {
      for (int64_t m : {1, 3}) {
        bad += check(t, 7, cols, m, rng);
        ++cases;
      }
    }
  }
  std::printf("portable_check: %d cases, %d mismatches\n", cases, bad);
  return bad == 0 ? 0 : 1;
}
