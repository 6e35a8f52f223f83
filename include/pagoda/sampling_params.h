// SamplingParams: how one request turns logits into tokens (the OpenAI/vLLM fields), and
// TokenLogprobs: what sampling reports of one drawn token. TokenLogprobs is the one logprob
// representation from the sampler through the runner's step output and the engine's events to
// RequestOutput.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pagoda {

// A constraint on the output text, enforced token by token (src/structured): OpenAI's
// response_format, vLLM's structured_outputs / guided_* and llama.cpp's grammar / json_schema.
struct StructuredOutputs {
  enum class Kind {
    kNone,
    kJsonSchema,  // spec: the JSON Schema as JSON text
    kJsonObject,  // any JSON object
    kRegex,       // spec: the pattern (full match)
    kGrammar,     // spec: a GBNF grammar (llama.cpp syntax), start rule `root`
    kChoice,      // choices: the output is exactly one of them
    kToolCalls,   // spec: JSON {"format", "tools", "mode", ...} (structured/tool_call_grammar.h)
  };
  Kind kind = Kind::kNone;
  std::string spec;
  std::vector<std::string> choices;
  // Lazy activation. When `trigger` is set the output is free text until the trigger appears in
  // it; the constraint then applies to the text after the trigger (leading whitespace allowed):
  // to the end of the output, or, with repeat_trigger, until the constraint's text is complete,
  // after which the output is free again until the next trigger. The first is a schema after a
  // reasoning model's "</think>"; the second tool calls the model may or may not make
  // (tool_choice auto: trigger "<tool_call>", kind kToolCalls with mode "auto").
  std::string trigger;
  bool repeat_trigger = false;

  bool empty() const { return kind == Kind::kNone; }
  bool operator==(const StructuredOutputs&) const = default;
};

// Embedding requests: the request computes its prompt and, instead of sampling, returns one
// vector pooled from the model's final hidden states (after the final norm), L2-normalised
// (RequestOutput::embedding). kLast: the last prompt position; kMean: the mean over every prompt
// position; kCls: position 0 (encoders' [CLS]). kRank (cross-encoders: ModelInfo::num_labels >
// 0): position 0 through the model's classifier head (pooler dense + tanh, then the classifier),
// its num_labels raw scores instead of a normalised vector. Rides in SamplingParams so that it
// reaches the runner with the request's other per-request options (ScheduledRequest::sampling).
enum class PoolingType { kNone, kLast, kMean, kCls, kRank };

struct SamplingParams {
  float temperature = 1.0f;         // 0 = greedy
  int32_t top_k = 0;                // 0 or -1 = disabled
  float top_p = 1.0f;               // 1 = disabled
  float min_p = 0.0f;               // 0 = disabled
  float repetition_penalty = 1.0f;  // 1 = disabled; applies to prompt and output tokens
  float presence_penalty = 0.0f;    // applies to output tokens
  float frequency_penalty = 0.0f;   // applies to output tokens
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> added logit
  std::optional<uint64_t> seed;                       // deterministic sampling when set
  int32_t logprobs = -1;  // -1: none; k >= 0: sampled token's logprob + top k
  // -1: none; k >= 0: every prompt token after the first gets its logprob given the tokens
  // before it, plus the k most likely tokens there (vLLM's prompt_logprobs; RequestOutput::
  // prompt_logprobs). Costs a logits row per prompt position, only for requests that ask; such
  // a request computes its whole prompt (no prefix-cache hit skips a position).
  int32_t prompt_logprobs = -1;
  // Tokens whose text would leave the constraint's language are masked before sampling; EOS is
  // allowed only where the constraint may end. Engine::add_request compiles it (invalid_argument
  // names an unsupported schema keyword or a syntax error).
  StructuredOutputs structured;
  // kNone: a generation request. Otherwise an embedding request (see PoolingType): n must be 1,
  // and it never samples (no tokens, finish_reason kStop once its prompt is computed).
  PoolingType pooling = PoolingType::kNone;
  // Encoders: prompt positions from here on have token type (segment) 1, the others 0 (BERT's
  // sentence pairs: [CLS] query [SEP] document [SEP], the document part from its first token).
  // 0: one segment.
  int32_t second_segment_start = 0;

  bool is_greedy() const { return temperature <= 0.0f; }
};

// One sampled token with its log-probability under the model's distribution (after the
// request's logits processing) and, when SamplingParams::logprobs = k > 0, the k most likely
// tokens (id, logprob), descending.
struct TokenLogprobs {
  int32_t token = 0;
  float logprob = 0;
  std::vector<std::pair<int32_t, float>> top;
  int32_t rank = 0;  // 1 + the number of tokens with a higher logit (vLLM's rank); 0 = unknown
};

}  // namespace pagoda
