// Scale searches for the K-quant reference quantisers (see scale_search.h). Written for exact
// agreement with ggml: every accumulation is a float, in index order, with the same operand
// order, and rounding uses nearest_int (ties to even).
#include "kernels/cpu/reference/scale_search.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/reference/quant_helpers.h"

namespace pagoda::kernels::cpu::reference {
namespace {

constexpr float kGroupMaxEps = 1e-15f;  // below this amax a group counts as all zero

int clamp_level(int l, int lo, int hi) {
  return std::max(lo, std::min(hi, l));
}

// Largest-magnitude value with its sign, and that magnitude.
void signed_amax(int n, const float* x, float* max, float* amax) {
  *max = 0;
  *amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > *amax) {
      *amax = ax;
      *max = x[i];
    }
  }
}

}  // namespace

float make_qx_quants(int n, int nmax, const float* x, int8_t* L, const float* weights) {
  float max, amax;
  signed_amax(n, x, &max, &amax);
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.f;
  }
  auto weight = [&](int i) { return weights ? weights[i] : x[i] * x[i]; };
  // Levels for one candidate inverse scale; returns the weighted sums Σ w x l and Σ w l².
  auto fit = [&](float iscale, float* sumlx, float* suml2, int8_t* out) {
    *sumlx = 0;
    *suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      if (out) out[i] = static_cast<int8_t>(l + nmax);
      const float w = weight(i);
      *sumlx += w * x[i] * static_cast<float>(l);
      *suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
  };
  float sumlx, suml2;
  fit(static_cast<float>(-nmax) / max, &sumlx, &suml2, L);
  float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    fit(iscale, &sumlx, &suml2, nullptr);
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      fit(iscale, &sumlx, &suml2, L);
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
  float max, amax;
  signed_amax(n, x, &max, &amax);
  if (amax < kGroupMaxEps) {
    std::fill(L, L + n, int8_t{0});
    return 0.f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0;
  float suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_level(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * static_cast<float>(l);
    suml2 += w * static_cast<float>(l) * static_cast<float>(l);
  }
  // Coordinate descent: move one level at a time when it raises (Σwxl)² / Σwl².
  for (int round = 0; round < 5; ++round) {
    int num_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      const float li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0) {
        float sl2 = suml2 - w * li * li;
        const int new_l = clamp_level(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != L[i]) {
          const float nl = static_cast<float>(new_l);
          slx += w * x[i] * nl;
          sl2 += w * nl * nl;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++num_changed;
          }
        }
      }
    }
    if (num_changed == 0) break;
  }
  for (int i = 0; i < n; ++i)
    L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                       bool use_mad) {
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    std::fill(L, L + n, uint8_t{0});
    *the_min = -min;
    return 0.f;
  }
  auto error_of = [&](float d) { return use_mad ? std::fabs(d) : d * d; };
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax));
    best_error += weights[i] * error_of(scale * static_cast<float>(L[i]) + min - x[i]);
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_level(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = static_cast<uint8_t>(l);
      const float wl = weights[i] * static_cast<float>(l);
      sum_l += wl;
      sum_l2 += wl * static_cast<float>(l);
      sum_xl += wl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        cur_error +=
            weights[i] * error_of(this_scale * static_cast<float>(Laux[i]) + this_min - x[i]);
      }
      if (cur_error < best_error) {
        std::copy(Laux, Laux + n, L);
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

}  // namespace pagoda::kernels::cpu::reference
