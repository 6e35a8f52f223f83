// pagoda::Engine: the public serving API. Requests go in with add_request; their outputs come
// back as a stream of RequestOutput deltas (new tokens, text, finish reason, usage, timings);
// abort() cancels at any point. The step loop runs on its own thread; every method here is
// thread-safe. The server and the CLI use only this header (and sampling_params.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pagoda/sampling_params.h"
#include "pagoda/status.h"

namespace pagoda {

// Speculative decoding inside continuous batching: each step a decoding request may verify
// several proposed tokens in the same batched forward pass as everyone's decodes and prefill
// chunks; greedy outputs are identical to no speculation, sampled ones have the same
// distribution (rejection sampling). See docs/design-notes.md.
struct SpeculativeConfig {
  // "" = off; "ngram" = prompt lookup (the continuation of the latest earlier match of the
  // output's last ngram_min..ngram_max tokens in the prompt and output; no second model);
  // "draft" = a smaller model with the same vocabulary (`model`) drafts autoregressively;
  // "self" = the target's own weights re-encoded as `self_draft_dtype` at load draft for it (no
  // second file; e.g. a Q8_0 or F16 model drafting with its Q4_0 copy).
  std::string method;
  // method "draft": a GGUF file or Hugging Face model directory. Its KV cache shares the
  // target's block ids (the KV memory budget is split between the two by bytes per block).
  std::string model;
  std::string self_draft_dtype = "q4_0";  // method "self": q4_0 | q4_1 | q5_0 | q8_0 | ...
  int32_t num_speculative_tokens = 4;     // most drafts per request per step, 1..64
  int32_t ngram_min = 1;
  int32_t ngram_max = 4;
  // No drafts in a step whose running requests have more than this many tokens to compute
  // (large batches gain nothing from speculation); 0 = never off.
  int32_t disable_batch_tokens = 8;
  bool adaptive = true;  // k per request from its recent acceptance (see scheduler.h)
};

// A LoRA adapter to serve: a PEFT directory (adapter_config.json + adapter_model.safetensors)
// or a llama.cpp GGUF LoRA file, selected by requests as GenerateRequest::lora_name.
struct LoraAdapterSpec {
  std::string name;
  std::string path;
};

struct EngineConfig {
  std::string model_path;   // GGUF file or Hugging Face model directory
  int32_t block_size = 16;  // tokens per KV block
  // KV cache memory: kv_cache_bytes, or (0) kv_cache_fraction of MemAvailable at startup; never
  // more blocks than max_num_seqs sequences of max_model_len tokens can use.
  uint64_t kv_cache_bytes = 0;
  double kv_cache_fraction = 0.25;
  // f16 | bf16 | q8_0 | f32. q8_0 (34 bytes per 32 values, ~half of f16) needs head_dim % 32 == 0
  // (Engine::create fails otherwise); attention reads bf16/q8_0 caches like llama.cpp does.
  std::string kv_cache_dtype = "f16";
  // Attention with the flash-style online softmax (one walk over each sequence's KV blocks, a
  // running max and sum) instead of the exact softmax, whose logits match llama.cpp's default
  // attention bit for bit in the kernels' arithmetic. Same speed here; see docs/design-notes.md.
  bool flash_attention = false;
  int32_t max_num_seqs = 64;             // running requests per step
  int32_t max_num_batched_tokens = 512;  // tokens computed per step (prefill chunks + decodes)
  int32_t max_model_len = 0;             // 0: the model's context length
  // A max_model_len above the model's context length is lowered to it (true) or refused (false).
  // `pagoda run` sizes max_model_len from its prompt before the model is loaded.
  bool clamp_max_model_len = false;
  int32_t max_queue = 1024;  // waiting requests before add_request refuses
  bool enable_prefix_caching = true;
  // A model whose every layer attends through a sliding window (phi3, Mistral-style) gives the
  // KV blocks behind the window back to the pool while a request runs, so it holds about
  // window / block_size + 2 blocks (docs/design/sliding-window-kv.md). Off: every block is kept
  // (the same outputs; for comparison). Never with a draft model (its catch-up reads the past).
  bool release_blocks_outside_window = true;
  bool enable_chunked_prefill = true;
  int32_t num_threads = 0;  // 0: all cores
  // Ranks the model is split across by tensor parallelism (pagoda/parallel.h): 1, or the size of
  // the mpirun job this process is rank 0 of (the other ranks call run_parallel_worker).
  int32_t tensor_parallel_size = 1;
  // Consecutive stages the layers are split into (pipeline parallelism), one per rank of the job;
  // 1: none. Not combined with tensor_parallel_size yet.
  int32_t pipeline_parallel_size = 1;
  // MoE layers under tensor parallelism: false (vLLM's default) splits every expert's width across
  // the ranks like a dense FFN; true (--expert-parallel) gives each rank whole experts by index.
  // No effect on dense models or without tensor parallelism.
  bool expert_parallel = false;
  // One dummy forward pass of the largest step before the first request (see
  // ModelRunner::warm_up), so the first requests' TTFT carries no one-time costs.
  bool warm_up = true;
  std::string scheduling_policy = "fcfs";  // fcfs | priority (GenerateRequest::priority)
  std::string served_model_name;           // ModelInfo::id; "" = the model file's stem
  // A Jinja chat template (the text) used instead of the model's own; create() fails if it does
  // not parse. "" = the model's template.
  std::string chat_template;
  SpeculativeConfig speculative;
  // LoRA adapters loaded at startup; more may be loaded and unloaded at runtime
  // (Engine::load_lora_adapter). At most max_loras at a time, each of rank <= max_lora_rank.
  std::vector<LoraAdapterSpec> lora_adapters;
  int32_t max_loras = 8;
  int32_t max_lora_rank = 64;
};

struct StopConditions {
  int32_t max_tokens = 16;                // generated tokens (after the prompt), >= 1
  int32_t min_tokens = 0;                 // EOS / stop_token_ids do not stop before this many
  std::vector<std::string> stop_strings;  // matched across token boundaries; never streamed
  std::vector<int32_t> stop_token_ids;
  bool ignore_eos = false;
  bool include_stop_str_in_output = false;  // also streams a matched stop string / stop token
};

// Beam search (vLLM's use_beam_search / best_of / length_penalty / early_stopping): the request
// keeps up to beam_width live beams, forked sequences sharing KV blocks copy-on-write; each step
// the 2 x beam_width best continuations by cumulative logprob (log_softmax of the raw logits)
// are taken across beams. A finished hypothesis ranks by cumulative logprob / (L **
// length_penalty), L = its generated tokens, a final EOS included. Output: the n best
// hypotheses as samples 0..n-1 (n <= beam_width), each delivered as one finished output.
// Requires greedy sampling params (temperature 0, no penalties, bias, logprobs or structured
// outputs), no stop strings and min_tokens 0 (Engine::add_request refuses others by name).
// Design: docs/design/beam-search.md.
struct BeamSearchParams {
  enum class EarlyStopping { kFalse, kTrue, kNever };  // as transformers' BeamSearchScorer
  int32_t beam_width = 1;                              // 1..kMaxBeamWidth
  float length_penalty = 1.0f;
  EarlyStopping early_stopping = EarlyStopping::kFalse;
  static constexpr int32_t kMaxBeamWidth = 10;  // 2 x width top logprobs per beam (<= 20)
};

struct GenerateRequest {
  std::string request_id;              // unique among live requests
  std::vector<int32_t> prompt_tokens;  // non-empty, ids < vocab
  SamplingParams sampling;
  StopConditions stop;
  int32_t priority = 0;    // lower runs first (with the priority policy)
  std::string cache_salt;  // separates prefix-cache namespaces
  // Samples per prompt (1..max_num_seqs). They share the prompt's KV blocks; their outputs all
  // go to the one callback, told apart by RequestOutput::index (0..n-1). Seeded sampling keys
  // each sample's RNG by (seed, index).
  int32_t n = 1;
  bool skip_special_tokens = true;  // control tokens (EOS, <|im_end|>, ...) produce no text
  // The loaded LoRA adapter to run the request with ("" = the base model); not_found if unknown.
  std::string lora_name;
  std::optional<BeamSearchParams> beam_search;  // set: beam search (n <= beam_width)
};

enum class FinishReason { kNone, kStop, kLength, kAbort, kError };

// "stop", "length", "abort", "error" (the OpenAI finish_reason values and the metrics' label);
// "" for kNone.
constexpr std::string_view to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
    case FinishReason::kNone:
      break;
  }
  return "";
}

struct RequestUsage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens served from the prefix cache
};

struct RequestTimings {
  double queue_seconds = 0;  // arrival -> first scheduled
  double ttft_seconds = 0;   // arrival -> first token
  double e2e_seconds = 0;    // arrival -> finish
  double mean_tpot_seconds = 0;
};

// One delta of one sample. Every sample ends with exactly one output with finished set, so a
// request with n samples sees n finished outputs; after the last one its callback is never
// called again (and the request_id may be reused).
struct RequestOutput {
  std::string request_id;
  int32_t index = 0;  // which of the request's n samples
  std::vector<int32_t> new_token_ids;
  std::string text_delta;               // complete UTF-8 only; never a prefix of a stop string
  std::vector<TokenLogprobs> logprobs;  // one per new token when requested
  // SamplingParams::prompt_logprobs >= 0: on each sample's first output, one entry per prompt
  // token after the first (entry i: prompt token i + 1 given tokens 0..i); empty otherwise.
  std::vector<TokenLogprobs> prompt_logprobs;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  std::string stop_reason;               // the stop string that ended it, if any
  std::optional<int32_t> stop_token_id;  // the EOS / stop_token_ids entry that ended it, if any
  std::string error;                     // finish_reason == kError
  // finish_reason == kError: what failed. kInvalidArgument: the request itself (its grammar
  // cannot be compiled); kInternal (the default): the engine.
  StatusCode error_code = StatusCode::kInternal;
  // Embedding requests (SamplingParams::pooling): the pooled, L2-normalised hidden state
  // [ModelInfo::hidden_size], on the finished output only; rank pooling: the classifier's
  // [ModelInfo::num_labels] raw scores.
  std::vector<float> embedding;
  RequestUsage usage;      // on finished outputs (per sample: prompt counted in each)
  RequestTimings timings;  // on finished outputs
  // Beam search: the hypothesis' cumulative logprob and its ranking score (cumulative logprob /
  // length ** length_penalty), on the finished output of each beam.
  std::optional<double> beam_cumulative_logprob;
  std::optional<double> beam_score;
};

// A snapshot; counters (_total, num_steps, sums) only grow.
struct EngineStats {
  int32_t num_running = 0;    // sequences holding KV blocks (a sample of n > 1 counts once each)
  int32_t num_waiting = 0;    // queued or preempted
  double kv_cache_usage = 0;  // fraction of blocks in use
  int64_t num_blocks = 0;     // usable KV blocks
  int32_t block_size = 0;
  // KV cache bytes one token takes over all layers (a block's bytes / block_size); for an MLA
  // model (deepseek2, which caches the latent and the rope key) also the bytes the equivalent
  // multi-head cache would take (every head's key and value, same dtype), else 0.
  double kv_bytes_per_token = 0;
  double kv_bytes_per_token_mha = 0;
  int64_t num_used_blocks = 0;
  int64_t peak_used_blocks = 0;      // the most blocks in use at once (after a step's scheduling)
  int64_t num_live_tokens = 0;       // tokens whose KV the running sequences hold (shared once)
  int64_t prefix_cache_queries = 0;  // tokens looked up
  int64_t prefix_cache_hits = 0;     // tokens found
  int64_t num_preemptions = 0;
  int64_t prompt_tokens_total = 0;      // prompt tokens of requests that produced a token
  int64_t prompt_tokens_computed = 0;   // prompt positions the model ran (no cache hits,
                                        // preemption recomputes included)
  int64_t generation_tokens_total = 0;  // sampled tokens
  int64_t requests_finished_total = 0;  // samples finished, any reason
  int64_t num_steps = 0;                // forward passes
  // Sums over steps (after each): mean blocks in use = sum_used_blocks / num_steps; KV fill
  // ratio = sum_live_tokens / (sum_used_blocks * block_size).
  int64_t sum_used_blocks = 0;
  int64_t sum_live_tokens = 0;
  // Speculative decoding (vLLM's vllm:spec_decode_* counters): verified draft runs (one per
  // request per step), drafted tokens, accepted tokens, and per draft position i the runs whose
  // i-th draft was accepted. Acceptance rate = accepted / draft tokens; mean accepted length
  // (tokens per verifying step) = 1 + accepted / drafts.
  int64_t spec_decode_num_drafts = 0;
  int64_t spec_decode_num_draft_tokens = 0;
  int64_t spec_decode_num_accepted_tokens = 0;
  std::vector<int64_t> spec_decode_num_accepted_tokens_per_pos;
  bool loop_alive = true;  // false if the step loop died (the engine then refuses requests)
};

struct LoraAdapterInfo {
  std::string name;
  std::string path;
  int32_t rank = 0;
};

struct ModelInfo {
  std::string id;  // served model name
  std::string architecture;
  int32_t context_length = 0;  // the max_model_len in effect (prompt + max_tokens limit)
  int32_t vocab_size = 0;
  std::string chat_template;
  std::string bos_token, eos_token;
  int32_t hidden_size = 0;  // the length of RequestOutput::embedding
  // Encoders (BERT): no generation, only embedding requests; their attention is bidirectional.
  bool is_encoder = false;
  // The pooling the model was trained for (encoders: from their config), kNone if none.
  PoolingType default_pooling = PoolingType::kNone;
  // Cross-encoders (a classifier head): the classifier's outputs per request (rank pooling);
  // 0: no classifier (rank pooling is refused).
  int32_t num_labels = 0;
};

// Receives a request's outputs on the engine thread, in order per sample; the last one of each
// sample has finished set. Must return quickly (hand the output to another thread or an
// executor) and must not call shutdown() nor destroy the engine; add_request, abort and stats
// are fine.
using OutputCallback = std::function<void(RequestOutput)>;

class Engine {
 public:
  virtual ~Engine() = default;

  // Loads the model, sizes the KV cache, starts the step loop. Logs how many blocks/tokens fit.
  static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);

  virtual const ModelInfo& model_info() const = 0;

  // Text <-> tokens with the model's tokenizer.
  virtual std::vector<int32_t> tokenize(const std::string& text, bool add_special,
                                        bool parse_special) const = 0;
  virtual std::string detokenize(const std::vector<int32_t>& ids) const = 0;
  // The raw bytes of one token as it appears in generated text (may end inside a UTF-8
  // character, unlike detokenize({id}), which replaces such bytes with U+FFFD). Logprobs' "bytes".
  virtual std::string token_bytes(int32_t id) const { return detokenize({id}); }
  // Renders the model's chat template. messages/tools are JSON text (an array / null).
  // invalid_argument for a broken template, raise_exception, or malformed messages.
  virtual Result<std::string> apply_chat_template(const std::string& messages_json,
                                                  const std::string& tools_json,
                                                  bool add_generation_prompt) const = 0;

  // Validates and queues a request. invalid_argument (bad field, prompt + max_tokens over the
  // context, token ids out of range, request_id empty or already live) names the field;
  // resource_exhausted when the waiting queue is full; failed_precondition after
  // stop_accepting()/shutdown(); unavailable if the step loop died. on_output receives every
  // delta (never called from inside add_request).
  virtual Status add_request(GenerateRequest request, OutputCallback on_output) = 0;

  // Cancels a request in any state (all its samples); its blocks are freed and a final output
  // with finish_reason kAbort is delivered for every unfinished sample (asynchronously, on the
  // engine thread, between steps). Unknown or finished ids are ignored.
  virtual void abort(const std::string& request_id) = 0;

  virtual EngineStats stats() const = 0;

  // LoRA adapters (vLLM's /v1/load_lora_adapter and /v1/unload_lora_adapter). Load: the adapter
  // is read and checked against the model (invalid_argument / unimplemented naming the field,
  // not_found for a missing path, invalid_argument for a name already loaded,
  // resource_exhausted beyond max_loras). Unload: not_found for an unknown name,
  // failed_precondition while requests using it are still running (they are never cut short;
  // unload again when they finish).
  virtual Status load_lora_adapter(const std::string& name, const std::string& path) {
    (void)name;
    (void)path;
    return unimplemented("this engine does not serve LoRA adapters");
  }
  virtual Status unload_lora_adapter(const std::string& name) {
    return not_found("LoRA adapter \"{}\" is not loaded", name);
  }
  virtual std::vector<LoraAdapterInfo> lora_adapters() const { return {}; }

  // Stops admitting requests; running ones continue. wait_idle() returns when none remain or
  // the timeout passes (returns false then).
  virtual void stop_accepting() = 0;
  virtual bool wait_idle(std::chrono::milliseconds timeout) = 0;

  // Aborts everything and stops the loop. Idempotent; also done by the destructor.
  virtual void shutdown() = 0;
};

}  // namespace pagoda
