// kernels_for: the compiled-in ISA tables.
#include "kernels/cpu/kernel_table.h"

namespace pagoda::kernels::cpu {

const CpuKernels* kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return reference_kernels();
    case Isa::kPortable:
      return portable_kernels();
    case Isa::kAvx2:
      return avx2_kernels();
    case Isa::kAvx512:
      return avx512_kernels();
    case Isa::kAmx:
      return amx_kernels();
  }
  return nullptr;
}

}  // namespace pagoda::kernels::cpu
