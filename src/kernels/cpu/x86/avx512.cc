// The avx512 kernel table: not written yet (the scalar reference runs everywhere).
#include "kernels/cpu/kernel_table.h"

namespace pagoda::kernels::cpu {
const CpuKernels* avx512_kernels() {
  return nullptr;
}
}  // namespace pagoda::kernels::cpu
