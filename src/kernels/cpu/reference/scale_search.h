// Scale searches used by the K-quant reference quantisers: given a small group of values, pick a
// scale (and for the affine types a min) and the integer levels that minimise a weighted error.
// They follow ggml's make_qx_quants / make_q3_quants / make_qkx2_quants step for step (same
// candidate scales, same float arithmetic order) so that quantised files match ggml's bytes.
#pragma once

#include <cstdint>

namespace pagoda::kernels::cpu::reference {

// Symmetric levels l in [-nmax, nmax): x ≈ scale * l, stored as L = l + nmax. Weighting:
// `weights` if non-null, else x² (rmse_type 1 in ggml; the only mode the reference uses).
// Tries the amax-derived scale and 18 perturbations of it, keeps the least-squares best.
// Returns the scale (0 for an all-zero group).
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, const float* weights);

// Q3_K's variant: symmetric levels in [-nmax, nmax) weighted by x², refined by up to five rounds
// of coordinate descent on the levels. L = l + nmax. Returns the scale.
float make_q3_quants(int n, int nmax, const float* x, int8_t* L);

// Affine levels L in [0, nmax]: x ≈ scale * L - the_min, with the_min >= 0 (the group minimum is
// clamped to <= 0). Tries nstep + 1 scales from (nmax + rmin) to (nmax + rmin + nstep * rdelta)
// over the range, each with a weighted least-squares fit of scale and min, and keeps the one with
// the smallest weighted error (absolute if use_mad, else squared). Laux: scratch of n levels.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad);

}  // namespace pagoda::kernels::cpu::reference
