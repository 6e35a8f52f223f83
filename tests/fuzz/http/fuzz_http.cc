// fuzz_http: the first byte picks the input's path: 0 chat body, 1 completion body (both through
// parse_generation_request: any input must give a spec or an ApiError, never a crash, a hang or
// an allocation beyond the limits), 2 raw HTTP bytes through Beast's request parser fed in
// pieces with the server's header/body limits.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/fake_engine.h"
#include "server/openai_request.h"

namespace {

void fuzz_body(const std::string& body, pagoda::server::Endpoint endpoint) {
  static pagoda::testing::FakeEngine engine;
  static const pagoda::server::ServerConfig config;
  pagoda::server::GenerationSpec spec;
  auto err = pagoda::server::parse_generation_request(body, endpoint, engine, config, spec);
  if (err) {
    if (err->status < 400 || err->status > 599 || err->body().empty()) __builtin_trap();
    return;
  }
  // A valid spec respects the caps.
  if (spec.prompts.empty() || spec.n < 1 || spec.n > config.max_n) __builtin_trap();
  for (const auto& p : spec.prompts) {
    if (p.tokens.empty()) __builtin_trap();
    if (static_cast<int64_t>(p.tokens.size()) + spec.stop.max_tokens >
        engine.model_info().context_length) {
      __builtin_trap();
    }
  }
  if (spec.stop.stop_strings.size() > static_cast<size_t>(config.max_stop_strings))
    __builtin_trap();
}

void fuzz_http_parser(const uint8_t* data, size_t size) {
  namespace http = boost::beast::http;
  http::request_parser<http::string_body> parser;
  parser.header_limit(4096);
  parser.body_limit(8192);
  // Feed in pieces of varying size, like a slow client.
  size_t off = 0;
  boost::beast::flat_buffer buf(16384);
  while (off < size && !parser.is_done()) {
    const size_t n = std::min<size_t>(1 + (data[off] % 64), size - off);
    if (buf.size() + n > buf.max_size()) return;
    auto mb = buf.prepare(n);
    std::memcpy(mb.data(), data + off, n);
    buf.commit(n);
    off += n;
    for (;;) {
      boost::beast::error_code ec;
      const size_t used = parser.put(buf.data(), ec);
      buf.consume(used);
      if (ec == http::error::need_more) break;
      if (ec) return;
      if (parser.is_done() || used == 0) break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1 << 16)) return 0;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 3) {
    case 0:
      fuzz_body(rest, pagoda::server::Endpoint::kChat);
      break;
    case 1:
      fuzz_body(rest, pagoda::server::Endpoint::kCompletion);
      break;
    default:
      fuzz_http_parser(data + 1, size - 1);
      break;
  }
  return 0;
}
