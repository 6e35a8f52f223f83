#include "router/upstream_client.h"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace pagoda::router {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr uint32_t kMaxResponseHeaderBytes = 64 * 1024;
constexpr size_t kReadPiece = 16 * 1024;

asio::awaitable<bool> connect(beast::tcp_stream& stream, const UpstreamUrl& url,
                              std::chrono::milliseconds timeout) {
  // A numeric address needs no resolver: asio's runs getaddrinfo on a thread of its own, and
  // that hand-off (a futex wake and two context switches per request) was most of the router's
  // CPU per proxied request.
  beast::error_code aec;
  const asio::ip::address address = asio::ip::make_address(url.host, aec);
  if (!aec) {
    stream.expires_after(timeout);
    auto [cec] = co_await stream.async_connect(tcp::endpoint(address, url.port), kTuple);
    co_return !cec;
  }
  tcp::resolver resolver(stream.get_executor());
  auto [rec, results] = co_await resolver.async_resolve(url.host, std::to_string(url.port), kTuple);
  if (rec) co_return false;
  stream.expires_after(timeout);
  auto [cec, ep] = co_await stream.async_connect(results, kTuple);
  (void)ep;
  co_return !cec;
}

}  // namespace

UpstreamExchange::UpstreamExchange(asio::any_io_executor executor) : stream_(std::move(executor)) {
  parser_.header_limit(kMaxResponseHeaderBytes);
  parser_.body_limit(boost::none);  // streamed through, never held
}

asio::awaitable<UpstreamExchange::Failure> UpstreamExchange::open(
    const UpstreamUrl& url, std::string_view method, std::string_view target,
    const std::string& body, const std::string& api_key, std::chrono::milliseconds connect_timeout,
    std::chrono::milliseconds header_timeout) {
  if (!co_await connect(stream_, url, connect_timeout)) co_return Failure::kConnect;
  http::request<http::string_body> req;
  req.method_string(method);
  req.target(upstream_path(url, target));
  req.version(11);
  req.set(http::field::host, url.authority());
  req.set(http::field::user_agent, "pagoda-router");
  req.set(http::field::content_type, "application/json");
  if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
  req.keep_alive(false);
  if (method != "GET") {
    req.body() = body;
    req.prepare_payload();
  }
  stream_.expires_after(connect_timeout);
  auto [wec, wn] = co_await http::async_write(stream_, req, kTuple);
  (void)wn;
  if (wec) co_return Failure::kConnect;
  stream_.expires_after(header_timeout);
  auto [hec, hn] = co_await http::async_read_header(stream_, buffer_, parser_, kTuple);
  (void)hn;
  if (hec == beast::error::timeout) co_return Failure::kTimeout;
  if (hec) co_return Failure::kConnect;
  co_return Failure::kNone;
}

std::string UpstreamExchange::header(std::string_view name) const {
  auto it = parser_.get().find(beast::string_view(name.data(), name.size()));
  if (it == parser_.get().end()) return "";
  return std::string(it->value());
}

std::optional<uint64_t> UpstreamExchange::content_length() const {
  auto n = parser_.content_length();
  if (!n) return std::nullopt;
  return *n;
}

asio::awaitable<bool> UpstreamExchange::read_some(std::string& out,
                                                  std::chrono::milliseconds idle_timeout) {
  out.clear();
  if (parser_.is_done()) co_return true;
  if (!piece_) piece_ = std::make_unique_for_overwrite<char[]>(kReadPiece);
  auto& body = parser_.get().body();
  body.data = piece_.get();
  body.size = kReadPiece;
  stream_.expires_after(idle_timeout);
  auto [ec, n] = co_await http::async_read_some(stream_, buffer_, parser_, kTuple);
  (void)n;
  out.assign(piece_.get(), kReadPiece - body.size);
  body.data = nullptr;
  body.size = 0;
  if (ec == http::error::need_buffer) ec = {};
  co_return !ec;
}

void UpstreamExchange::close() {
  beast::error_code ec;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
  stream_.close();
}

asio::awaitable<std::optional<SimpleResponse>> simple_get(asio::any_io_executor executor,
                                                          const UpstreamUrl& url, std::string path,
                                                          std::string api_key,
                                                          std::chrono::milliseconds timeout,
                                                          uint64_t max_body_bytes) {
  beast::tcp_stream stream(executor);
  if (!co_await connect(stream, url, timeout)) co_return std::nullopt;
  http::request<http::empty_body> req{http::verb::get, upstream_path(url, path), 11};
  req.set(http::field::host, url.authority());
  req.set(http::field::user_agent, "pagoda-router");
  if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
  req.keep_alive(false);
  stream.expires_after(timeout);
  auto [wec, wn] = co_await http::async_write(stream, req, kTuple);
  (void)wn;
  if (wec) co_return std::nullopt;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(kMaxResponseHeaderBytes);
  parser.body_limit(max_body_bytes);
  auto [rec, rn] = co_await http::async_read(stream, buffer, parser, kTuple);
  (void)rn;
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  if (rec) co_return std::nullopt;
  co_return SimpleResponse{static_cast<int>(parser.get().result_int()),
                           std::move(parser.get().body())};
}

}  // namespace pagoda::router
