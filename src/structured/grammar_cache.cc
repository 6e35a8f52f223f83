#include "structured/grammar_cache.h"

#include "structured/gbnf.h"
#include "structured/json_schema.h"
#include "structured/tool_call_grammar.h"

namespace pagoda::structured {

namespace {

Result<Grammar> build_constraint_grammar(const StructuredOutputs& spec) {
  using Kind = StructuredOutputs::Kind;
  switch (spec.kind) {
    case Kind::kJsonSchema:
      return compile_json_schema(spec.spec);
    case Kind::kJsonObject:
      return json_object_grammar();
    case Kind::kRegex:
      return regex_grammar(spec.spec);
    case Kind::kGrammar:
      return parse_gbnf(spec.spec);
    case Kind::kChoice:
      return choice_grammar(spec.choices);
    case Kind::kToolCalls:
      return tool_call_grammar(spec.spec);
    case Kind::kNone:
      break;
  }
  return invalid_argument("structured output: no constraint given");
}

}  // namespace

Result<Grammar> build_grammar(const StructuredOutputs& spec) {
  PAGODA_ASSIGN_OR_RETURN(Grammar grammar, build_constraint_grammar(spec));
  if (spec.trigger.empty() || spec.repeat_trigger) return grammar;
  // After a trigger (a reasoning model's "</think>"), the answer may start after whitespace.
  GrammarBuilder b;
  const Symbol body = b.embed(grammar);
  const int32_t start = b.add_rule("after_trigger");
  b.add_alternative(start, {b.lexeme("[ \\t\\n\\r]{0,16}"), body});
  return std::move(b).build(start);
}

GrammarCache::GrammarCache(std::shared_ptr<const TokenTable> tokens, size_t capacity)
    : tokens_(std::move(tokens)), capacity_(std::max<size_t>(capacity, 1)) {}

GrammarCache::~GrammarCache() {
  std::deque<Job> cancelled;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    cancelled.swap(jobs_);
  }
  jobs_cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  for (Job& job : cancelled)
    job.promise.set_value(make_status(StatusCode::kCancelled,
                                      "structured output: the grammar "
                                      "cache shut down before compiling"));
}

std::string GrammarCache::key(const StructuredOutputs& spec) {
  std::string k = std::to_string(static_cast<int>(spec.kind));
  k += ':';
  k += spec.spec;
  for (const std::string& c : spec.choices) {
    k += '\0';
    k += std::to_string(c.size());
    k += ':';
    k += c;
  }
  if (!spec.trigger.empty()) {
    k += '\0';
    k += spec.repeat_trigger ? "repeat:" : "once:";
    k += spec.trigger;
  }
  return k;
}

size_t GrammarCache::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

CompileResult GrammarCache::compile(const Grammar& grammar) const {
  PAGODA_ASSIGN_OR_RETURN(std::shared_ptr<CompiledGrammar> compiled,
                          CompiledGrammar::compile(grammar, tokens_));
  return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

std::pair<std::promise<CompileResult>, uint64_t> GrammarCache::insert_pending(
    const std::string& key) {
  std::promise<CompileResult> promise;
  const uint64_t serial = next_serial_++;
  lru_.push_front(Entry{key, serial, promise.get_future().share()});
  index_.emplace(key, lru_.begin());
  while (lru_.size() > capacity_) {
    // An evicted compile under way still completes its futures; only the cache forgets it.
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  return {std::move(promise), serial};
}

void GrammarCache::settle(const std::string& key, uint64_t serial,
                          std::promise<CompileResult>& promise, CompileResult result) {
  if (!result.ok()) {
    std::lock_guard lock(mutex_);
    const auto it = index_.find(key);
    if (it != index_.end() && it->second->serial == serial) {
      lru_.erase(it->second);
      index_.erase(it);
    }
  }
  promise.set_value(std::move(result));
}

CompileResult GrammarCache::get(const StructuredOutputs& spec) {
  const std::string k = key(spec);
  std::unique_lock lock(mutex_);
  if (const auto it = index_.find(k); it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    std::shared_future<CompileResult> result = it->second->result;
    lock.unlock();
    return result.get();  // waits while another thread compiles it
  }
  auto [promise, serial] = insert_pending(k);
  lock.unlock();
  // Compile outside the lock: other requests' lookups go on meanwhile.
  Result<Grammar> grammar = build_grammar(spec);
  CompileResult result = grammar.ok() ? compile(*grammar) : CompileResult(grammar.status());
  settle(k, serial, promise, result);
  return result;
}

Result<std::shared_future<CompileResult>> GrammarCache::compile_async(
    const StructuredOutputs& spec) {
  std::string k = key(spec);
  {
    std::lock_guard lock(mutex_);
    if (const auto it = index_.find(k); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->result;
    }
  }
  // Checked outside the lock (a schema's keywords, a regex's syntax): a refusal queues nothing.
  PAGODA_ASSIGN_OR_RETURN(Grammar grammar, build_grammar(spec));
  std::lock_guard lock(mutex_);
  if (const auto it = index_.find(k); it != index_.end()) {  // queued meanwhile by another thread
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->result;
  }
  auto [promise, serial] = insert_pending(k);
  std::shared_future<CompileResult> result = lru_.front().result;
  if (stopping_) {
    promise.set_value(make_status(StatusCode::kCancelled,
                                  "structured output: the grammar cache "
                                  "is shutting down"));
    return result;
  }
  jobs_.push_back(Job{std::move(k), serial, std::move(grammar), std::move(promise)});
  if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  jobs_cv_.notify_one();
  return result;
}

void GrammarCache::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    jobs_cv_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;  // the destructor cancels what is left
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    CompileResult result = compile(job.grammar);
    settle(job.key, job.serial, job.promise, std::move(result));
    lock.lock();
  }
}

}  // namespace pagoda::structured
