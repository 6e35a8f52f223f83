// Instruction-set selection for the CPU kernels. The best path the CPU supports is chosen once,
// on first use; PAGODA_ISA=amx|avx512|avx2|portable|scalar forces one (an unsupported or unknown
// value falls back to the best available, with a warning). Every path computes the same numbers as
// the scalar reference (bit for bit for matmul; see kernels/cpu/reference/vec_dot_ref.cc), so the
// choice only changes speed.
//   scalar: the reference (any CPU).
//   portable: Highway's static target for the build (NEON on AArch64, where it is the best path;
//           Highway's scalar target on baseline x86-64, a test path there): int8 dots for the
//           Q4_0/Q8_0/Q4_K/Q5_K/Q6_K matmuls, the reference for the rest (cpu/portable/).
//   avx2:   x86-64 AVX2 + FMA + F16C (Haswell, Zen 1+).
//   avx512: AVX-512 F/BW/VL + VNNI (Ice Lake, Sapphire Rapids, Zen 4+): int8 dots with vpdpbusd.
//   amx:    avx512 (+ VBMI) plus AMX-INT8 tile multiplies for the Q4_0/Q8_0/Q4_K/Q5_K/Q6_K GEMMs
//           (prefill, batched decode; Sapphire Rapids+), where the OS grants the tile state
//           (Linux 5.16+).
#pragma once

#include <string_view>
#include <vector>

namespace pagoda::kernels {

enum class Isa { kScalar, kPortable, kAvx2, kAvx512, kAmx };

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

// Ends the calling thread's kernel worker threads (its OpenMP team; a later kernel call from this
// thread starts them again). For a thread that hands the computing over to another one, as the
// caller that loads a model and runs the warm-up hands it to the engine's step thread: while a
// second team's idle workers exist, libgomp counts more threads than cores and cuts every worker's
// spin at the end of a parallel region from ~300,000 iterations to 100, so each of a decode step's
// ~150 regions ended in a futex sleep and wake-up (TinyLlama Q4_0, one request on 2 cores: 275
// context switches per step, TPOT 29 ms; with the loader's team released, 2 per step, 21.5 ms).
// Returns false if the runtime refused (this thread is inside a parallel region).
bool release_worker_threads();

}  // namespace pagoda::kernels
