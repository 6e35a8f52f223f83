// fuzz_http: the first byte picks the input's path: 0 chat body, 1 completion body (both through
// parse_generation_request: any input must give a spec or an ApiError, never a crash, a hang or
// an allocation beyond the limits), 2 raw HTTP bytes through Beast's request parser fed in
// pieces with the server's header/body limits, then the server's framing check (check_framing)
// against an independent reading of the raw header, 3 a request built from Transfer-Encoding /
// Content-Length field combinations (codings, duplicates, order, case, whitespace, HTTP/1.0)
// followed by a second, smuggled request: whatever the parser and check_framing accept must be
// framed unambiguously (issue 40: "Transfer-Encoding: identity" made the body the next request).
#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/fake_engine.h"
#include "server/http_framing.h"
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

namespace http = boost::beast::http;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// An independent reading of the raw header block: does any field line name Transfer-Encoding
// or Content-Length (case-insensitive, exactly as written before the colon)?
struct RawFraming {
  bool te = false;
  bool cl = false;
};

RawFraming scan_header(std::string_view raw) {
  RawFraming f;
  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string_view::npos) return f;
  size_t pos = raw.find("\r\n");
  while (pos != std::string_view::npos && pos < end) {
    const size_t next = raw.find("\r\n", pos + 2);
    const std::string_view line = raw.substr(pos + 2, next - pos - 2);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      const std::string name = lower(line.substr(0, colon));
      if (name == "transfer-encoding") f.te = true;
      if (name == "content-length") f.cl = true;
    }
    pos = next;
  }
  return f;
}

// Feeds `data` in pieces of varying size; on the header, runs check_framing. Returns false when
// the parser or the check refused the request.
bool parse_and_check(const uint8_t* data, size_t size,
                     http::request_parser<http::string_body>& parser, bool& checked) {
  parser.header_limit(4096);
  parser.body_limit(8192);
  checked = false;
  size_t off = 0;
  boost::beast::flat_buffer buf(16384);
  while (off < size && !parser.is_done()) {
    const size_t n = std::min<size_t>(1 + (data[off] % 64), size - off);
    if (buf.size() + n > buf.max_size()) return false;
    auto mb = buf.prepare(n);
    std::memcpy(mb.data(), data + off, n);
    buf.commit(n);
    off += n;
    for (;;) {
      boost::beast::error_code ec;
      const size_t used = parser.put(buf.data(), ec);
      buf.consume(used);
      if (!checked && parser.is_header_done()) {
        checked = true;
        if (auto err = pagoda::server::check_framing(parser)) {
          if (err->status != 400 && err->status != 501) __builtin_trap();
          return false;
        }
      }
      if (ec == http::error::need_more) break;
      if (ec) return false;
      if (parser.is_done() || used == 0) break;
    }
  }
  return true;
}

// What was accepted is framed unambiguously: a Transfer-Encoding field means exactly chunked
// and no Content-Length; without one the parser is not chunked.
void check_accepted(std::string_view raw, const http::request_parser<http::string_body>& parser) {
  const RawFraming f = scan_header(raw);
  if (f.te) {
    if (!parser.chunked() || f.cl) __builtin_trap();
    if (parser.get().version() < 11) __builtin_trap();
  } else if (parser.chunked()) {
    __builtin_trap();
  }
}

void fuzz_http_parser(const uint8_t* data, size_t size) {
  http::request_parser<http::string_body> parser;
  bool checked = false;
  if (!parse_and_check(data, size, parser, checked) || !checked) return;
  check_accepted(std::string_view(reinterpret_cast<const char*>(data), size), parser);
}

// A request from Transfer-Encoding / Content-Length pieces chosen by the input's bytes, then a
// body and a second request that must never be taken for this one's continuation.
void fuzz_framing_combinations(const uint8_t* data, size_t size) {
  static constexpr std::string_view kFields[] = {"Transfer-Encoding: chunked",
                                                 "Transfer-Encoding: identity",
                                                 "Transfer-Encoding: Chunked",
                                                 "Transfer-Encoding: chunked, identity",
                                                 "Transfer-Encoding: identity, chunked",
                                                 "Transfer-Encoding: gzip, chunked",
                                                 "Transfer-Encoding: xchunked",
                                                 "Transfer-Encoding: chunked,",
                                                 "Transfer-Encoding: ,chunked",
                                                 "Transfer-Encoding: ",
                                                 "Transfer-Encoding:\tchunked",
                                                 "transfer-encoding: CHUNKED",
                                                 "Transfer-Encoding: chunked ",
                                                 "Transfer-Encoding : chunked",
                                                 "Transfer-Encoding: chunked;q=1",
                                                 "Transfer_Encoding: chunked",
                                                 "Content-Length: 0",
                                                 "Content-Length: 5",
                                                 "Content-Length: 5, 5",
                                                 "Content-Length: 6",
                                                 "Content-Length: +5",
                                                 "Content-Length: 05",
                                                 "Content-Length: -1",
                                                 "Content-Length:",
                                                 "content-length: 5",
                                                 "Content-Length: 99999999999999999999",
                                                 "TE: chunked",
                                                 "Connection: close"};
  static constexpr std::string_view kBodies[] = {
      "",      "hello", "5\r\nhello\r\n0\r\n\r\n", "0\r\n\r\n", "5;ext=1\r\nhello\r\n0\r\n\r\n",
      "zz\r\n"};
  if (size < 2) return;
  std::string raw =
      (data[0] & 1) ? "POST / HTTP/1.0\r\nHost: x\r\n" : "POST / HTTP/1.1\r\nHost: x\r\n";
  const size_t num_fields = 1 + data[1] % 4;
  size_t i = 2;
  for (size_t k = 0; k < num_fields && i < size; ++k, ++i) {
    raw += kFields[data[i] % std::size(kFields)];
    raw += "\r\n";
  }
  raw += "\r\n";
  raw += kBodies[i < size ? data[i++] % std::size(kBodies) : 0];
  raw += "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";
  const auto* bytes = reinterpret_cast<const uint8_t*>(raw.data());
  http::request_parser<http::string_body> parser;
  bool checked = false;
  if (!parse_and_check(bytes, raw.size(), parser, checked) || !checked) return;
  check_accepted(raw, parser);
  // The accepted request's body never swallowed, nor was, the smuggled request line.
  if (parser.is_done() && parser.get().body().find("GET /smuggled") != std::string::npos) {
    __builtin_trap();
  }
  if (parser.get().target() != "/") __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1 << 16)) return 0;
  const std::string rest(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 4) {
    case 0:
      fuzz_body(rest, pagoda::server::Endpoint::kChat);
      break;
    case 1:
      fuzz_body(rest, pagoda::server::Endpoint::kCompletion);
      break;
    case 2:
      fuzz_http_parser(data + 1, size - 1);
      break;
    default:
      fuzz_framing_combinations(data + 1, size - 1);
      break;
  }
  return 0;
}
