// GenerationDefaults: the sampling settings a model's authors ship with it (Hugging Face
// generation_config.json). Every field is optional: absent means "the engine's own default".
// Values are as the file gives them, range-checked when read (loader/hf/hf_checkpoint.cc);
// do_sample == false means greedy decoding whatever temperature says.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace pagoda::loader {

struct GenerationDefaults {
  std::optional<bool> do_sample;
  std::optional<float> temperature;         // >= 0
  std::optional<float> top_p;               // (0, 1]
  std::optional<float> min_p;               // [0, 1]
  std::optional<int32_t> top_k;             // >= 0 (0: off)
  std::optional<float> repetition_penalty;  // > 0
  std::optional<int32_t> max_new_tokens;    // > 0
  std::vector<int32_t> eos_token_ids;       // generation ends at any of these

  bool empty() const {
    return !do_sample && !temperature && !top_p && !min_p && !top_k && !repetition_penalty &&
           !max_new_tokens && eos_token_ids.empty();
  }
};

}  // namespace pagoda::loader
