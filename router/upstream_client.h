// The router's HTTP client side (Boost.Beast, C++20 coroutines): one connection per exchange to
// a backend or the fallback upstream. open() connects, writes the request and reads the response
// header; the caller then pulls the body piece by piece with read_some() as it arrives (no
// re-buffering: each piece is relayed before the next read). get() is the small bounded GET the
// health checker uses.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>

#include "router/router_config.h"

namespace pagoda::router {

class UpstreamExchange {
 public:
  enum class Failure { kNone, kConnect, kTimeout };

  explicit UpstreamExchange(boost::asio::any_io_executor executor);

  // Connects and sends `method target` with `body` (JSON) and, if non-empty, a Bearer key; then
  // reads the response header within `header_timeout`. kNone on success.
  boost::asio::awaitable<Failure> open(const UpstreamUrl& url, std::string_view method,
                                       std::string_view target, const std::string& body,
                                       const std::string& api_key,
                                       std::chrono::milliseconds connect_timeout,
                                       std::chrono::milliseconds header_timeout);

  int status() const { return static_cast<int>(parser_.get().result_int()); }
  // A response header's value ("" if absent).
  std::string header(std::string_view name) const;
  std::optional<uint64_t> content_length() const;
  bool done() const { return parser_.is_done(); }

  // Reads what has arrived of the body (waits at most `idle_timeout` for a byte) into `out`
  // (cleared first). False on a broken connection or timeout; `out` may then hold bytes read
  // before the failure. Returns true with done() once the body is complete.
  boost::asio::awaitable<bool> read_some(std::string& out, std::chrono::milliseconds idle_timeout);

  void close();

 private:
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::response_parser<boost::beast::http::buffer_body> parser_;
  std::unique_ptr<char[]> piece_;  // read_some's landing space (not zeroed per read)
};

struct SimpleResponse {
  int status = 0;
  std::string body;
};

// GET url+path within `timeout`, body capped at `max_body_bytes`; nullopt on any failure.
boost::asio::awaitable<std::optional<SimpleResponse>> simple_get(
    boost::asio::any_io_executor executor, const UpstreamUrl& url, std::string path,
    std::string api_key, std::chrono::milliseconds timeout, uint64_t max_body_bytes);

}  // namespace pagoda::router
