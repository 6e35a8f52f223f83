// Reference rotary position embedding with ggml's exact arithmetic (rope_f32 and rope_yarn): per
// position, theta starts at float(pos) and is multiplied by theta_scale = powf(base, -2 /
// rot_dims) once per pair, in float; pair i rotates by freq_scale · theta_i / freq_factor[i]
// (YaRN: mixed with the unscaled angle by the ramp, see RopeParams), using cosf/sinf times the
// magnitude scale. Interleaved style rotates
// (x[2i], x[2i+1]); NEOX rotates (x[i], x[i + rot_dims/2]). Dims >= rot_dims are untouched.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cpu/reference/ops_ref.h"

namespace pagoda::kernels::cpu::reference {

void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
          const int32_t* positions, const RopeParams& params) {
  const int64_t num_pairs = params.rot_dims / 2;
  const float theta_scale =
      std::pow(params.theta_base, -2.0f / static_cast<float>(params.rot_dims));
  std::vector<float> cos_t(static_cast<size_t>(num_pairs));
  std::vector<float> sin_t(static_cast<size_t>(num_pairs));
  float mscale = params.attn_factor;
  if (params.ext_factor != 0.0f) mscale *= 1.0f + 0.1f * std::log(1.0f / params.freq_scale);
  for (int64_t t = 0; t < num_tokens; ++t) {
    float theta = static_cast<float>(positions[t]);
    for (int64_t i = 0; i < num_pairs; ++i) {
      const float ff = params.freq_factors.empty() ? 1.0f : params.freq_factors[i];
      const float extrap = theta / ff;
      float angle = params.freq_scale * extrap;
      if (params.ext_factor != 0.0f) {
        const float y = (static_cast<float>(i) - params.corr_dims[0]) /
                        std::max(0.001f, params.corr_dims[1] - params.corr_dims[0]);
        const float ramp_mix = (1 - std::min(1.0f, std::max(0.0f, y))) * params.ext_factor;
        angle = angle * (1 - ramp_mix) + extrap * ramp_mix;
      }
      cos_t[i] = std::cos(angle) * mscale;
      sin_t[i] = std::sin(angle) * mscale;
      theta *= theta_scale;
    }
    for (int64_t h = 0; h < num_heads; ++h) {
      float* v = x + (t * num_heads + h) * head_dim;
      for (int64_t i = 0; i < num_pairs; ++i) {
        const int64_t a = params.style == RopeStyle::kInterleaved ? 2 * i : i;
        const int64_t b = params.style == RopeStyle::kInterleaved ? 2 * i + 1 : i + num_pairs;
        const float x0 = v[a];
        const float x1 = v[b];
        v[a] = x0 * cos_t[i] - x1 * sin_t[i];
        v[b] = x0 * sin_t[i] + x1 * cos_t[i];
      }
    }
  }
}

}  // namespace pagoda::kernels::cpu::reference
