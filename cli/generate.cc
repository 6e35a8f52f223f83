#include "cli/generate.h"

#include <algorithm>
#include <span>

#include "sampling/sampler.h"
#include "tokenizer/detokenizer.h"

namespace pagoda::cli {

Result<GenerateResult> generate(loader::LoadedModel& loaded, runner::SequenceSession& session,
                                const std::vector<int32_t>& input, const SamplingParams& params,
                                int32_t max_new,
                                const std::function<void(const std::string&)>& on_text) {
  const int32_t vocab = loaded.model->config().vocab_size;
  PAGODA_RETURN_IF_ERROR(sampling::validate(params, vocab));
  if (input.empty()) return invalid_argument("nothing to generate from: the input has no tokens");
  if (session.num_tokens() + static_cast<int64_t>(input.size()) > session.capacity()) {
    return out_of_range("the input ({} tokens) does not fit the context ({} of {} used)",
                        input.size(), session.num_tokens(), session.capacity());
  }
  sampling::Sampler sampler(params, vocab, input);
  // The prompt's last tokens give the detokenizer its context: after a real prompt the first
  // generated token keeps its leading space ("Once" + " upon").
  const size_t context = std::min<size_t>(input.size(), 4);
  tokenizer::IncrementalDetokenizer detok(
      *loaded.tokenizer, /*skip_special=*/true,
      std::span<const int32_t>(input).subspan(input.size() - context));
  GenerateResult result;
  std::vector<float> logits;
  PAGODA_RETURN_IF_ERROR(session.feed(input, /*all_logits=*/false, logits));
  for (int32_t i = 0; i < max_new; ++i) {
    const int32_t token = sampler.sample(logits).token;
    if (loaded.tokenizer->is_end_of_generation(token)) {
      result.hit_eog = true;
      break;
    }
    result.tokens.push_back(token);
    std::string delta = detok.push(token);
    if (!delta.empty()) on_text(delta);
    if (session.num_tokens() >= session.capacity() || i + 1 == max_new) break;
    const int32_t one[1] = {token};
    PAGODA_RETURN_IF_ERROR(session.feed(one, /*all_logits=*/false, logits));
  }
  std::string tail = detok.finish();
  if (!tail.empty()) on_text(tail);
  return result;
}

void add_sampling_options(CLI::App* cmd, SamplingParams& p, int64_t& seed) {
  cmd->add_option("--temp,--temperature", p.temperature, "Sampling temperature (0 = greedy)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", p.top_k, "Keep the k most likely tokens (0 = off)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--top-p", p.top_p, "Nucleus sampling mass (1 = off)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-p", p.min_p, "Drop tokens below min_p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repeat-penalty", p.repetition_penalty, "Repetition penalty (1 = off)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--presence-penalty", p.presence_penalty, "Presence penalty")
      ->check(CLI::Range(-2.0, 2.0));
  cmd->add_option("--frequency-penalty", p.frequency_penalty, "Frequency penalty")
      ->check(CLI::Range(-2.0, 2.0));
  cmd->add_option("--seed", seed, "Random seed (-1 = random)")
      ->check(CLI::Range(int64_t{-1}, INT64_MAX));
}

}  // namespace pagoda::cli
