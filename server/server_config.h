// ServerConfig: everything `pagoda serve` decides about HTTP (address, auth, limits, timeouts,
// admission) as opposed to the engine (EngineConfig). Defaults are production-safe: every limit
// is finite, every wait has a timeout.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pagoda/output_parser.h"
#include "pagoda/sampling_params.h"

namespace pagoda::server {

enum class PrefixCacheIsolation { kNone, kApiKey, kSalt };

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8000;  // 0: an ephemeral port (logged as "listening on http://host:port")
  int32_t io_threads = 2;

  // Bearer tokens: one of them is required on every route but GET/HEAD /health and /metrics;
  // empty = no auth. (--api-key, repeatable; PAGODA_API_KEY, comma-separated.)
  std::vector<std::string> api_keys;

  // Browser-origin defences (DNS rebinding, CSRF). allowed_hosts: the Host header (or the
  // authority of an absolute-form target) must be one of these names; empty = the defaults
  // (localhost, *.localhost, 127.0.0.1, ::1, the bound address, and any IP literal when bound to
  // a wildcard address); "*" allows all. allowed_origins: a request carrying an Origin header is
  // refused (403) unless the origin is listed, "*" is listed, or it is same-origin (its
  // host:port is the Host header); listed origins get CORS headers and preflights answered.
  std::vector<std::string> allowed_hosts;
  std::vector<std::string> allowed_origins;

  // Prefix-cache tenant isolation: kNone shares cached prefixes between all requests (a
  // request's own cache_salt still separates it); kApiKey seeds each API key's hash chain with
  // a secret of its own, so requests made with different keys never share blocks (and
  // cache_salt still separates within a key); kSalt shares only between requests that send the
  // same cache_salt (unsalted requests get a fresh salt each, i.e. never share).
  PrefixCacheIsolation prefix_cache_isolation = PrefixCacheIsolation::kNone;

  // Admission. max_queue is the engine's waiting-queue bound (429 beyond it); a request that
  // has produced no token within queue_timeout is aborted with 429 (0 = no timeout).
  std::chrono::milliseconds queue_timeout{0};
  // SIGTERM: running requests get this long to finish, then are aborted.
  std::chrono::milliseconds drain_timeout{30000};
  int32_t retry_after_seconds = 1;  // the Retry-After header of 429 / 503
  // Rank 0 of a parallel job (mpirun): a SIGTERM or SIGINT is mpirun's word that another rank
  // died (it signals every survivor, then SIGKILLs them 1 s later) or that the job is stopping,
  // which ends the workers too, so no running request can finish and draining would hang. When
  // non-zero, the first such signal turns /health (and every new request) into 503 at once,
  // closes the connections, and the process exits with this code after signal_exit_grace.
  int32_t signal_exit_code = 0;
  std::chrono::milliseconds signal_exit_grace{300};

  // Request size limits (bytes). A Content-Length over max_body_bytes is refused (413) before
  // the body is read; chunked bodies are cut off at the limit.
  uint64_t max_body_bytes = 16ull << 20;
  uint32_t max_header_bytes = 64u << 10;  // request line + headers (431 beyond)
  uint32_t max_uri_bytes = 8u << 10;      // request target (414 beyond)
  int32_t max_connections = 4096;         // beyond: 503 and close

  // Timeouts. keep_alive: a connection must deliver the next request's header within this;
  // read: the body within this after the header; write: each write (a client that stops
  // reading is cut off).
  std::chrono::milliseconds keep_alive_timeout{30000};
  std::chrono::milliseconds read_timeout{60000};
  std::chrono::milliseconds write_timeout{30000};
  // Per-connection bytes queued for a client that reads slower than we generate; beyond it
  // the request is aborted and the connection closed.
  uint64_t max_write_buffer_bytes = 4ull << 20;

  // Request caps (400 beyond, naming the field).
  int32_t max_n = 16;
  int32_t max_logprobs = 20;
  int32_t max_stop_strings = 64;
  int32_t max_stop_string_bytes = 1024;
  int32_t max_stop_token_ids = 256;
  int32_t max_logit_bias = 1024;
  int32_t max_batch_prompts = 64;  // prompts in one /v1/completions request
  int32_t max_json_depth = 64;
  int32_t max_embedding_inputs = 2048;  // items of one /v1/embeddings `input` (OpenAI's cap)

  // /v1/embeddings: the pooling of a decoder model's final hidden states (--pooling last|mean);
  // nullopt = the model's own (encoders), and a decoder then serves no embeddings.
  std::optional<PoolingType> pooling;

  // The Responses API's store of responses (store: true): entries, bytes, time to live.
  size_t response_store_max_entries = 10000;
  size_t response_store_max_bytes = 256ull << 20;
  std::chrono::seconds response_store_ttl{3600};

  // How chat outputs are split into content / reasoning_content / tool_calls: the tool-call
  // format (nullopt: detected from the model's chat template, detect_tool_call_format) and the
  // reasoning format (--reasoning-parser; none by default).
  std::optional<ToolCallFormat> tool_call_format;
  ReasoningFormat reasoning_format = ReasoningFormat::kNone;
};

}  // namespace pagoda::server
