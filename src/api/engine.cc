// pagoda::Engine::create: loads the model, sizes the KV cache, builds the ModelRunner and the
// EngineCore, and answers the tokenizer / chat-template / model-info queries. Request validation
// happens here (sampling ranges against the vocab) and in EngineCore (ids, stops, the
// scheduler's context and cache limits).
#include "pagoda/engine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "api/kv_cache_sizing.h"
#include "api/parallel_backend.h"
#include "base/log.h"
#include "engine/engine_core.h"
#include "kernels/isa.h"
#include "kernels/quant.h"
#include "loader/lora_loader.h"
#include "loader/model_loader.h"
#include "pagoda/parallel.h"
#include "runner/draft_model_proposer.h"
#include "runner/model_runner.h"
#include "sampling/sampler.h"
#include "structured/grammar_cache.h"
#include "structured/token_table.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/utf8.h"

namespace pagoda {
namespace {

class EngineImpl final : public Engine {
 public:
  static Result<std::unique_ptr<Engine>> create(const EngineConfig& config);
  ~EngineImpl() override { shutdown(); }

  const ModelInfo& model_info() const override { return info_; }

  std::vector<int32_t> tokenize(const std::string& text, bool add_special,
                                bool parse_special) const override {
    tokenizer::EncodeOptions options;
    options.add_special = add_special;
    options.parse_special = parse_special;
    return loaded_.tokenizer->encode(text, options);
  }

  // The inverse of tokenize(): leading control tokens (BOS) produce no text and do not take the
  // first token's leading-space strip, so detokenize(tokenize(s, true, _)) == s for SPM vocabs.
  std::string detokenize(const std::vector<int32_t>& ids) const override {
    const tokenizer::Tokenizer& t = *loaded_.tokenizer;
    size_t first = 0;
    while (first < ids.size() && t.is_control(ids[first]))
      ++first;
    const std::vector<int32_t> rest(ids.begin() + static_cast<std::ptrdiff_t>(first), ids.end());
    return tokenizer::utf8::sanitize(t.decode(rest, false));
  }

  // detokenize({id}) without the UTF-8 sanitising: a byte token stays its byte.
  std::string token_bytes(int32_t id) const override {
    const tokenizer::Tokenizer& t = *loaded_.tokenizer;
    if (t.is_control(id)) return "";
    return t.decode({id}, false);
  }

  Result<std::string> apply_chat_template(const std::string& messages_json,
                                          const std::string& tools_json,
                                          bool add_generation_prompt) const override;

  Status add_request(GenerateRequest request, OutputCallback on_output) override {
    PAGODA_RETURN_IF_ERROR(sampling::validate(request.sampling, info_.vocab_size));
    if (info_.is_encoder && request.sampling.pooling == PoolingType::kNone) {
      return invalid_argument("model '{}' is an encoder ({}): it serves embeddings only", info_.id,
                              info_.architecture);
    }
    if (request.sampling.pooling == PoolingType::kRank && info_.num_labels <= 0) {
      return invalid_argument("model '{}' has no classifier head: it cannot score (rerank)",
                              info_.id);
    }
    if (request.sampling.second_segment_start != 0 &&
        (!info_.is_encoder || request.sampling.second_segment_start < 0 ||
         static_cast<size_t>(request.sampling.second_segment_start) >=
             request.prompt_tokens.size())) {
      return invalid_argument(
          "second_segment_start {} needs an encoder and must fall inside the {}-token prompt",
          request.sampling.second_segment_start, request.prompt_tokens.size());
    }
    if (request.sampling.pooling != PoolingType::kNone && !request.sampling.structured.empty()) {
      return invalid_argument("an embedding request cannot have a structured-output constraint");
    }
    if (request.sampling.pooling != PoolingType::kNone && model_parallel_) {
      // Pipeline stages send back logits, not the last stage's hidden states.
      return unimplemented("embedding requests with tensor or pipeline parallelism: not yet");
    }
    engine::SamplingGate gate;
    if (!request.sampling.structured.empty()) {
      // The constraint is checked here (every keyword: a constraint we cannot enforce is refused
      // with the reason) and compiled in the background while the prompt is computed: the
      // request's first sample waits for it, the runner then finds it cached.
      PAGODA_ASSIGN_OR_RETURN(std::shared_future<structured::CompileResult> compiled,
                              grammars_->compile_async(request.sampling.structured));
      if (compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        if (!compiled.get().ok()) return compiled.get().status();
      } else {
        gate = [compiled]() -> std::optional<Status> {
          if (compiled.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
            return std::nullopt;
          return compiled.get().status();
        };
      }
    }
    if (request.lora_name.empty()) {
      return core_->add_request(std::move(request), std::move(on_output), std::move(gate));
    }
    // The adapter is held until every sample has finished (unload waits for that).
    PAGODA_ASSIGN_OR_RETURN(const uint32_t lora_id, loras_->acquire(request.lora_name));
    auto remaining = std::make_shared<int32_t>(std::max(1, request.n));
    std::shared_ptr<runner::LoraRegistry> loras = loras_;
    OutputCallback wrapped = [loras, lora_id, remaining,
                              inner = std::move(on_output)](RequestOutput out) {
      // Released before the last output is delivered: whoever sees it may unload at once.
      if (out.finished && --*remaining == 0) loras->release(lora_id);
      inner(std::move(out));
    };
    Status st =
        core_->add_request(std::move(request), std::move(wrapped), std::move(gate), lora_id);
    if (!st.ok()) loras_->release(lora_id);
    return st;
  }
  Status load_lora_adapter(const std::string& name, const std::string& path) override {
    if (name.empty() || name.size() > 256) {
      return invalid_argument("lora_name must be 1 to 256 characters");
    }
    if (name == info_.id) {
      return invalid_argument("lora_name \"{}\" is the base model's name", name);
    }
    if (loras_->contains(name)) {
      return invalid_argument("LoRA adapter \"{}\" is already loaded", name);
    }
    if (model_parallel_) {
      // The adapters' A/B are not sharded across ranks (the workers would add nothing).
      return unimplemented("LoRA adapters with tensor or pipeline parallelism: not yet");
    }
    PAGODA_ASSIGN_OR_RETURN(
        std::unique_ptr<model::LoraAdapter> adapter,
        loader::load_lora_adapter(path, name, loaded_.model->config(), max_lora_rank_));
    return loras_->add(std::move(adapter), path).take_status();
  }
  Status unload_lora_adapter(const std::string& name) override { return loras_->remove(name); }
  std::vector<LoraAdapterInfo> lora_adapters() const override {
    std::vector<LoraAdapterInfo> out;
    for (const runner::LoraRegistry::Entry& e : loras_->list())
      out.push_back(LoraAdapterInfo{e.name, e.path, e.rank});
    return out;
  }
  void abort(const std::string& request_id) override { core_->abort(request_id); }
  EngineStats stats() const override {
    EngineStats s = core_->stats();
    s.kv_bytes_per_token = kv_bytes_per_token_;
    s.kv_bytes_per_token_mha = kv_bytes_per_token_mha_;
    return s;
  }
  void stop_accepting() override { core_->stop_accepting(); }
  bool wait_idle(std::chrono::milliseconds timeout) override { return core_->wait_idle(timeout); }
  void shutdown() override {
    if (core_) core_->shutdown();
  }

 private:
  EngineImpl() = default;

  // Declaration order = destruction order reversed: the core (its thread, the runner) goes
  // before the model and tokenizer it uses.
  loader::LoadedModel loaded_;
  loader::LoadedModel draft_;  // speculative method "draft" (before core_: outlives the runner)
  ModelInfo info_;
  std::unique_ptr<tokenizer::ChatTemplate> chat_template_;
  Status chat_template_status_;
  std::shared_ptr<structured::GrammarCache> grammars_;
  std::shared_ptr<runner::LoraRegistry> loras_;
  int32_t max_lora_rank_ = 0;
  bool model_parallel_ = false;        // tensor or pipeline parallel size > 1
  double kv_bytes_per_token_ = 0;      // the cache's (EngineStats)
  double kv_bytes_per_token_mha_ = 0;  // MLA models: the equivalent MHA cache's
  std::unique_ptr<engine::EngineCore> core_;
};

Result<engine::SchedulingPolicy> parse_policy(const std::string& name) {
  if (name == "fcfs" || name.empty()) return engine::SchedulingPolicy::kFcfs;
  if (name == "priority") return engine::SchedulingPolicy::kPriority;
  return invalid_argument("scheduling_policy must be fcfs or priority, got '{}'", name);
}

std::string token_text(const tokenizer::Tokenizer& t, std::optional<int32_t> id) {
  if (!id || *id < 0 || *id >= t.num_tokens()) return "";
  return t.vocab().tokens[static_cast<size_t>(*id)];
}

// A draft model must tokenize as the target does: same vocabulary size and the same token
// strings (ids are exchanged as drafts).
Status check_same_vocabulary(const loader::LoadedModel& target, const loader::LoadedModel& draft) {
  const int32_t t = target.model->config().vocab_size, d = draft.model->config().vocab_size;
  if (t != d) {
    return invalid_argument(
        "speculative model {}: its vocabulary has {} tokens, the target's {} (a draft model must "
        "use the target's tokenizer)",
        draft.path, d, t);
  }
  const auto& a = target.tokenizer->vocab().tokens;
  const auto& b = draft.tokenizer->vocab().tokens;
  if (a.size() != b.size()) {
    return invalid_argument("speculative model {}: its tokenizer has {} tokens, the target's {}",
                            draft.path, b.size(), a.size());
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) {
      return invalid_argument(
          "speculative model {}: token {} is '{}' in its vocabulary and '{}' in the target's (a "
          "draft model must use the target's tokenizer)",
          draft.path, i, b[i], a[i]);
    }
  }
  return Status();
}

Result<std::unique_ptr<Engine>> EngineImpl::create(const EngineConfig& config) {
  if (config.block_size < 1 || config.block_size > 1024) {
    return invalid_argument("block_size must be in [1, 1024], got {}", config.block_size);
  }
  if (config.num_threads < 0) {
    return invalid_argument("num_threads must be >= 0, got {}", config.num_threads);
  }
  if (config.max_model_len < 0) {
    return invalid_argument("max_model_len must be >= 0, got {}", config.max_model_len);
  }
  if (config.max_queue < 0) {
    return invalid_argument("max_queue must be >= 0, got {}", config.max_queue);
  }
  const SpeculativeConfig& spec = config.speculative;
  if (!spec.method.empty() && spec.method != "ngram" && spec.method != "draft" &&
      spec.method != "self") {
    return invalid_argument("speculative method must be \"\" (off), ngram, draft or self, got '{}'",
                            spec.method);
  }
  std::optional<tensor::DType> self_draft_dtype;
  if (spec.method == "self") {
    self_draft_dtype = tensor::dtype_from_name(spec.self_draft_dtype);
    if (!self_draft_dtype || !kernels::can_quantize(*self_draft_dtype)) {
      return invalid_argument(
          "speculative self_draft_dtype must be a type weights can be quantized to (q4_0, q8_0, "
          "...), got '{}'",
          spec.self_draft_dtype);
    }
  }
  if ((spec.method == "draft") != !spec.model.empty()) {
    return invalid_argument(
        "speculative model (a draft model path) is required by method draft and only by it");
  }
  if (spec.disable_batch_tokens < 0) {
    return invalid_argument("speculative disable_batch_tokens must be >= 0, got {}",
                            spec.disable_batch_tokens);
  }
  PAGODA_ASSIGN_OR_RETURN(const tensor::DType kv_dtype,
                          api::parse_kv_cache_dtype(config.kv_cache_dtype));
  PAGODA_ASSIGN_OR_RETURN(const engine::SchedulingPolicy policy,
                          parse_policy(config.scheduling_policy));
  if (config.kv_cache_bytes == 0) {
    // Validate the fraction before the (slow) model load.
    PAGODA_RETURN_IF_ERROR(api::kv_cache_budget(0, config.kv_cache_fraction, 1).take_status());
  }
  PAGODA_RETURN_IF_ERROR(
      check_parallel_sizes(config.tensor_parallel_size, config.pipeline_parallel_size));
  if (parallel_rank() != 0) {
    return failed_precondition(
        "rank {} of the job is a worker (run_parallel_worker), not an engine", parallel_rank());
  }
  if (config.num_threads > 0) kernels::set_num_threads(config.num_threads);

  std::unique_ptr<EngineImpl> e(new EngineImpl());
  PAGODA_ASSIGN_OR_RETURN(
      e->loaded_,
      loader::load_model(config.model_path, api::model_backend(config.tensor_parallel_size,
                                                               config.pipeline_parallel_size,
                                                               config.expert_parallel)));
  const model::ModelConfig& mc = e->loaded_.model->config();
  if (mc.encoder && (config.tensor_parallel_size > 1 || config.pipeline_parallel_size > 1)) {
    return unimplemented("encoder models with tensor or pipeline parallelism: not yet");
  }
  const tokenizer::Tokenizer& tok = *e->loaded_.tokenizer;

  PAGODA_ASSIGN_OR_RETURN(const int32_t max_model_len,
                          api::resolve_max_model_len(
                              config.max_model_len, config.clamp_max_model_len, mc.context_length));
  e->loaded_.model->set_served_context(max_model_len);

  // KV cache: the byte budget -> blocks (block 0 is the null block), capped at what
  // max_num_seqs sequences of max_model_len tokens can use.
  uint64_t mem_available = 0;
  if (config.kv_cache_bytes == 0) {
    PAGODA_ASSIGN_OR_RETURN(mem_available, api::read_mem_available());
  }
  PAGODA_ASSIGN_OR_RETURN(
      const uint64_t budget,
      api::kv_cache_budget(config.kv_cache_bytes, config.kv_cache_fraction, mem_available));
  uint64_t target_budget = budget;
  if (spec.method == "draft") {
    auto draft = loader::load_model(spec.model);
    if (!draft.ok()) return draft.status().with_context("speculative model");
    e->draft_ = std::move(draft).value();
    PAGODA_RETURN_IF_ERROR(check_same_vocabulary(e->loaded_, e->draft_));
  } else if (spec.method == "self") {
    const auto start = std::chrono::steady_clock::now();
    auto draft = loader::load_requantized_model(config.model_path, *self_draft_dtype);
    if (!draft.ok()) return draft.status().with_context("speculative self-draft");
    e->draft_.model = std::move(draft).value();
    e->draft_.path = config.model_path;
    PAGODA_LOG_INFO(
        "self-draft: the model's weight matrices as {} in {:.0f} ms",
        tensor::dtype_name(*self_draft_dtype),
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  if (e->draft_.model) e->draft_.model->set_served_context(max_model_len);
  // Blocks behind a window every layer uses are released (the draft model's catch-up may read
  // positions behind the target's window: not with one). A hybrid model (local and global
  // layers) keeps two KV groups instead: a table each, the local layers' released behind the
  // window, the two groups' layers sharing arrays (model::kv_layout).
  const bool release_window =
      config.release_blocks_outside_window && !mc.encoder && !e->draft_.model;
  const int32_t hybrid_window = release_window ? mc.hybrid_sliding_window() : 0;
  const bool kv_groups = hybrid_window > 0;
  if (e->draft_.model) {
    // One block id = a target block and a draft block: split the budget by their sizes.
    PAGODA_ASSIGN_OR_RETURN(
        const uint64_t target_block,
        backend::KvStorage::bytes_per_block(model::kv_layout(mc), config.block_size, kv_dtype));
    PAGODA_ASSIGN_OR_RETURN(const uint64_t draft_block,
                            runner::DraftModelProposer::bytes_per_block(
                                e->draft_.model->config(), config.block_size, kv_dtype));
    target_budget =
        static_cast<uint64_t>(static_cast<double>(budget) * static_cast<double>(target_block) /
                              static_cast<double>(target_block + draft_block));
  }
  PAGODA_ASSIGN_OR_RETURN(int64_t num_blocks,
                          runner::ModelRunner::blocks_for_memory(
                              mc, target_budget, config.block_size, kv_dtype, kv_groups));
  int64_t blocks_per_seq = (max_model_len + config.block_size - 1) / config.block_size;
  if (kv_groups) {  // the local group's table holds at most its window's blocks
    const int64_t span = int64_t{hybrid_window} - 1 + config.max_num_batched_tokens;
    blocks_per_seq +=
        std::min<int64_t>(blocks_per_seq, (span + config.block_size - 1) / config.block_size + 1);
  }
  const int64_t cap = std::max<int32_t>(config.max_num_seqs, 1) * blocks_per_seq + 1;
  const bool capped = num_blocks > cap;
  num_blocks = std::min<int64_t>({num_blocks, cap, INT32_MAX});
  if (num_blocks - 1 < blocks_per_seq) {
    return resource_exhausted(
        "the KV cache budget ({} bytes) holds {} blocks of {} tokens, fewer than one sequence of "
        "max_model_len {} needs ({}); raise kv_cache_bytes / kv_cache_fraction or lower "
        "max_model_len",
        budget, std::max<int64_t>(num_blocks - 1, 0), config.block_size, max_model_len,
        blocks_per_seq);
  }
  runner::RunnerConfig rc;
  rc.num_blocks = num_blocks;
  rc.block_size = config.block_size;
  rc.kv_dtype = kv_dtype;
  rc.flash_attention = config.flash_attention;
  rc.kv_groups = kv_groups;
  e->grammars_ = std::make_shared<structured::GrammarCache>(
      structured::TokenTable::create(*e->loaded_.tokenizer, mc.vocab_size));
  rc.grammars = e->grammars_;
  if (config.max_loras < 0 || config.max_loras > 1024) {
    return invalid_argument("max_loras must be in [0, 1024], got {}", config.max_loras);
  }
  if (config.max_lora_rank < 1 || config.max_lora_rank > 65536) {
    return invalid_argument("max_lora_rank must be in [1, 65536], got {}", config.max_lora_rank);
  }
  e->max_lora_rank_ = config.max_lora_rank;
  e->model_parallel_ = config.tensor_parallel_size > 1 || config.pipeline_parallel_size > 1;
  e->loras_ = std::make_shared<runner::LoraRegistry>(config.max_loras);
  rc.loras = e->loras_;
  rc.pace_drafts = spec.adaptive;  // adaptive speculation stops drafting where it does not pay
  if (spec.method == "ngram") {
    rc.ngram = runner::NgramConfig{spec.ngram_min, spec.ngram_max, spec.num_speculative_tokens};
  }
  if (e->draft_.model) {
    rc.draft_model = e->draft_.model.get();
    rc.num_speculative_tokens = spec.num_speculative_tokens;
    rc.max_num_seqs = std::max<int32_t>(config.max_num_seqs, 1);
  }
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<runner::ModelRunner> runner,
                          runner::ModelRunner::create(*e->loaded_.model, rc));
  if (config.warm_up) {
    const auto start = std::chrono::steady_clock::now();
    auto warm = runner->warm_up(std::min(config.max_num_batched_tokens, max_model_len),
                                config.max_num_seqs);
    if (!warm.ok()) return warm.status().with_context("warm-up forward pass");
    PAGODA_LOG_INFO(
        "warm-up: one step of {} tokens in {:.0f} ms", *warm,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count());
  }
  PAGODA_ASSIGN_OR_RETURN(const uint64_t block_bytes,
                          backend::KvStorage::bytes_per_block(model::kv_layout(mc, kv_groups),
                                                              config.block_size, kv_dtype));
  e->kv_bytes_per_token_ =
      static_cast<double>(block_bytes) / static_cast<double>(config.block_size);
  std::string per_token = fmt::format("{:.0f} bytes per token", e->kv_bytes_per_token_);
  if (kv_groups) {
    per_token += fmt::format(
        " per layer group: the global layers' blocks, plus the local layers' within their {}-token "
        "window",
        hybrid_window);
  }
  if (mc.mla()) {
    e->kv_bytes_per_token_mha_ = model::mha_kv_bytes_per_token(mc, kv_dtype);
    per_token += fmt::format(" as the MLA latent, vs {:.0f} for the equivalent MHA cache, {:.1f}x",
                             e->kv_bytes_per_token_mha_,
                             e->kv_bytes_per_token_mha_ / e->kv_bytes_per_token_);
    // Under TP the latent is replicated (every rank caches whole rows), while an MHA cache
    // would split by head: both figures are this rank's (mc is the shard's config).
    if (config.tensor_parallel_size > 1) {
      per_token +=
          fmt::format("; per rank of {}: the latent replicated on every rank, the MHA heads split",
                      config.tensor_parallel_size);
    }
  }
  PAGODA_LOG_INFO("KV cache: {} blocks of {} tokens = {} tokens ({:.1f} MiB, {}, {}){}",
                  num_blocks - 1, config.block_size, (num_blocks - 1) * config.block_size,
                  static_cast<double>(block_bytes) * static_cast<double>(num_blocks) / (1 << 20),
                  tensor::dtype_name(kv_dtype), per_token,
                  capped ? " (capped at max_num_seqs x max_model_len)" : "");
  if (parallel_size() > 1) {
    std::fprintf(stderr, "pagoda: rank 0/%d: %.1f MiB of weights, %.1f MiB of KV cache\n",
                 parallel_size(), static_cast<double>(e->loaded_.model->weight_bytes()) / (1 << 20),
                 static_cast<double>(runner->storage().total_bytes()) / (1 << 20));
  }

  engine::EngineCoreConfig cc;
  cc.scheduler.max_num_seqs = config.max_num_seqs;
  cc.scheduler.max_num_batched_tokens = config.max_num_batched_tokens;
  cc.scheduler.max_model_len = max_model_len;
  // An encoder attends bidirectionally within the step that computes a sequence (no KV cache):
  // its prompt is computed whole, and nothing is shared through the prefix cache.
  cc.scheduler.enable_chunked_prefill = config.enable_chunked_prefill && !mc.encoder;
  cc.scheduler.policy = policy;
  cc.scheduler.max_num_waiting = config.max_queue;
  cc.scheduler.kv.num_blocks = static_cast<int32_t>(num_blocks);
  cc.scheduler.kv.block_size = config.block_size;
  cc.scheduler.kv.enable_prefix_caching = config.enable_prefix_caching && !mc.encoder;
  if (release_window) cc.scheduler.kv.sliding_window = mc.uniform_sliding_window();
  if (kv_groups) cc.scheduler.kv.group_windows = {0, hybrid_window};
  if (!spec.method.empty()) {
    cc.scheduler.speculative.num_speculative_tokens = spec.num_speculative_tokens;
    cc.scheduler.speculative.disable_batch_tokens = spec.disable_batch_tokens;
    cc.scheduler.speculative.adaptive = spec.adaptive;
  }
  cc.vocab_size = mc.vocab_size;
  for (int32_t id = 0; id < std::min(tok.num_tokens(), mc.vocab_size); ++id) {
    if (tok.is_end_of_generation(id)) cc.eos_token_ids.push_back(id);
  }
  // From here on the step thread computes; this thread's workers (from packing the weights and
  // the warm-up) would otherwise share the cores with the step thread's (see isa.h).
  if (!kernels::release_worker_threads()) PAGODA_LOG_WARN("could not release the loader's threads");
  PAGODA_ASSIGN_OR_RETURN(e->core_, engine::EngineCore::create(cc, std::move(runner), tok));

  ModelInfo& info = e->info_;
  info.id = config.served_model_name.empty()
                ? std::filesystem::path(config.model_path).stem().string()
                : config.served_model_name;
  info.architecture = mc.arch;
  info.context_length = max_model_len;
  info.vocab_size = mc.vocab_size;
  info.hidden_size = mc.hidden_dim;
  info.is_encoder = mc.encoder;
  info.num_labels = mc.num_labels;
  switch (mc.pooling_type) {  // GGUF {arch}.pooling_type, as llama.cpp numbers it
    case 1:
      info.default_pooling = PoolingType::kMean;
      break;
    case 2:
      info.default_pooling = PoolingType::kCls;
      break;
    case 3:
      info.default_pooling = PoolingType::kLast;
      break;
    case 4:
      info.default_pooling = PoolingType::kRank;
      break;
    default:
      info.default_pooling = mc.encoder ? PoolingType::kCls : PoolingType::kNone;
  }
  info.chat_template =
      config.chat_template.empty() ? e->loaded_.chat_template : config.chat_template;
  info.bos_token = token_text(tok, tok.vocab().bos_id);
  info.eos_token = token_text(tok, tok.vocab().eos_id);
  if (info.chat_template.empty()) {
    e->chat_template_status_ = failed_precondition("the model has no chat template");
  } else {
    auto parsed = tokenizer::ChatTemplate::parse(info.chat_template);
    if (parsed.ok()) {
      e->chat_template_ = std::move(parsed).value();
    } else if (!config.chat_template.empty()) {
      return parsed.status().with_context("the chat template given in EngineConfig");
    } else {
      e->chat_template_status_ = parsed.status().with_context("the model's chat template");
      PAGODA_LOG_WARN("{}", e->chat_template_status_.message());
    }
  }
  for (const LoraAdapterSpec& adapter : config.lora_adapters) {
    PAGODA_RETURN_IF_ERROR(e->load_lora_adapter(adapter.name, adapter.path)
                               .with_context(fmt::format("LoRA adapter {}", adapter.name)));
  }
  return std::unique_ptr<Engine>(std::move(e));
}

Result<std::string> EngineImpl::apply_chat_template(const std::string& messages_json,
                                                    const std::string& tools_json,
                                                    bool add_generation_prompt) const {
  if (!chat_template_) return chat_template_status_;
  const auto messages = nlohmann::ordered_json::parse(messages_json, nullptr, false);
  if (messages.is_discarded()) return invalid_argument("messages is not valid JSON");
  if (!messages.is_array()) return invalid_argument("messages must be an array");
  nlohmann::ordered_json tools;
  if (!tools_json.empty()) {
    tools = nlohmann::ordered_json::parse(tools_json, nullptr, false);
    if (tools.is_discarded()) return invalid_argument("tools is not valid JSON");
    if (!tools.is_null() && !tools.is_array()) return invalid_argument("tools must be an array");
  }
  tokenizer::ChatTemplateInputs in;
  in.messages = &messages;
  in.tools = tools.is_null() ? nullptr : &tools;
  in.add_generation_prompt = add_generation_prompt;
  in.bos_token = info_.bos_token;
  in.eos_token = info_.eos_token;
  return chat_template_->render(in);
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::create(const EngineConfig& config) {
  return EngineImpl::create(config);
}

}  // namespace pagoda
