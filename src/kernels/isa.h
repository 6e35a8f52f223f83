// Instruction-set selection for the CPU kernels. The best path the CPU supports is chosen once,
// on first use; PAGODA_ISA=avx512|avx2|scalar forces one (an unsupported or unknown value falls
// back to the best available, with a warning). Every path computes the same numbers as the scalar
// reference (bit for bit for matmul; see kernels/cpu/reference/vec_dot_ref.cc), so the choice only
// changes speed.
//   scalar: the reference (any CPU).
//   avx2:   x86-64 AVX2 + FMA + F16C (Haswell, Zen 1+).
//   avx512: AVX-512 F/BW/VL + VNNI (Ice Lake, Sapphire Rapids, Zen 4+): int8 dots with vpdpbusd.
#pragma once

#include <string_view>
#include <vector>

namespace pagoda::kernels {

enum class Isa { kScalar, kAvx2, kAvx512 };

std::string_view isa_name(Isa isa);
// True if this build has the path and this CPU can run it.
bool isa_supported(Isa isa);
// Every supported path, scalar first.
std::vector<Isa> supported_isas();
// The path the kernels use now.
Isa active_isa();
// Switches every kernel to `isa` (tests and benchmarks). precondition: isa_supported(isa); no
// kernel is running concurrently.
void set_active_isa(Isa isa);

// Threads the kernels use: PAGODA_THREADS if set to a positive integer, else all cores.
int num_threads();
// precondition: n >= 1. Not while kernels run.
void set_num_threads(int n);

}  // namespace pagoda::kernels
