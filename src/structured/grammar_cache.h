// GrammarCache: StructuredOutputs (the public constraint) → a CompiledGrammar bound to the
// model's TokenTable, compiled once per distinct constraint and shared by every request using it
// (a bounded LRU keyed by kind + text + trigger). Thread-safe.
//
// Two ways in: get() compiles on the calling thread (or waits for a compile already under way)
// and returns the grammar; compile_async() checks the constraint on the calling thread
// (build_grammar, once, only when it is not cached) and queues the rest of the compile on the
// cache's background thread, so a request's prompt can be computed while its grammar compiles
// (the engine gates only the request's first sample on it). Failed compiles are not cached.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/status.h"
#include "pagoda/sampling_params.h"
#include "structured/compiled_grammar.h"
#include "structured/grammar.h"

namespace pagoda::structured {

// The grammar a constraint stands for (JSON Schema, json_object, regex, GBNF, choices, tool
// calls). invalid_argument names what is wrong. Cheap next to compiling it: this is where every
// schema keyword is checked, so callers use it to refuse a request before queueing a compile.
Result<Grammar> build_grammar(const StructuredOutputs& spec);

using CompileResult = Result<std::shared_ptr<const CompiledGrammar>>;

class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const TokenTable> tokens, size_t capacity = 256);
  // Joins the background thread; compiles still queued end with kCancelled.
  ~GrammarCache();
  GrammarCache(const GrammarCache&) = delete;
  GrammarCache& operator=(const GrammarCache&) = delete;

  // The compiled constraint: cached, compiled now on this thread, or (when another thread is
  // compiling it) waited for.
  CompileResult get(const StructuredOutputs& spec);

  // The compiled constraint as a future: ready at once when cached; else the spec is checked
  // here (build_grammar's error is returned, nothing is queued) and its grammar compiled on the
  // background thread (one compile at a time, in arrival order). Once the future is ready, get()
  // for the same spec returns the same answer without compiling (unless evicted meanwhile).
  Result<std::shared_future<CompileResult>> compile_async(const StructuredOutputs& spec);

  const std::shared_ptr<const TokenTable>& tokens() const { return tokens_; }
  size_t size() const;  // entries, compiles under way included

 private:
  struct Entry {
    std::string key;
    uint64_t serial = 0;  // which compile filled it (a failure removes only its own entry)
    std::shared_future<CompileResult> result;
  };
  struct Job {
    std::string key;
    uint64_t serial = 0;
    Grammar grammar;  // built by compile_async
    std::promise<CompileResult> promise;
  };

  static std::string key(const StructuredOutputs& spec);
  CompileResult compile(const Grammar& grammar) const;
  // Publishes a finished compile: a failure leaves the cache (it is not kept).
  void settle(const std::string& key, uint64_t serial, std::promise<CompileResult>& promise,
              CompileResult result);
  // Inserts a pending entry for `key` (mutex_ held): its promise and serial.
  std::pair<std::promise<CompileResult>, uint64_t> insert_pending(const std::string& key);
  void worker_loop();

  std::shared_ptr<const TokenTable> tokens_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  uint64_t next_serial_ = 1;
  // The background compiler, started by the first compile_async().
  std::condition_variable jobs_cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace pagoda::structured
