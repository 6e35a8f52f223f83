#include "server/http_session.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include <fmt/format.h>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>

#include "server/http_framing.h"
#include "server/router.h"
#include "server/server_state.h"

namespace pagoda::server {

namespace net = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {

constexpr std::size_t kReadChunk = 16 * 1024;
constexpr std::size_t kMaxPipelined = 64 * 1024;  // unparsed bytes held while answering
constexpr std::chrono::milliseconds kLingerTimeout{1000};

}  // namespace

HttpSession::HttpSession(net::ip::tcp::socket socket, ServerState& state, Router& router)
    : executor_(socket.get_executor()),
      socket_(std::move(socket)),
      read_timer_(executor_),
      write_timer_(executor_),
      state_(state),
      router_(router),
      in_(static_cast<std::size_t>(state.config().max_header_bytes) + kMaxPipelined + kReadChunk),
      read_buf_(kReadChunk) {}

HttpSession::~HttpSession() {
  if (session_id_ != 0) {
    state_.remove_session(session_id_);
    state_.metrics().connection_closed();
  }
}

void HttpSession::start(bool reject) {
  session_id_ = state_.add_session(shared_from_this());
  state_.metrics().connection_opened();
  net::dispatch(executor_, [self = shared_from_this(), reject] {
    error_code ec;
    self->socket_.set_option(net::ip::tcp::no_delay(true), ec);
    if (reject) {
      self->phase_ = Phase::kHandling;
      self->close_after_response_ = true;
      self->state_.metrics().count_rejection(Rejection::kConnections);
      self->respond_error(
          unavailable("Too many connections", self->state_.config().retry_after_seconds));
      self->do_read();
      return;
    }
    self->next_request();
  });
}

void HttpSession::drain() {
  net::post(executor_, [self = shared_from_this()] {
    self->draining_ = true;
    if (self->phase_ == Phase::kReading && !self->request_started_) {
      self->close_now();
    }
  });
}

// ---- reading ------------------------------------------------------------------------------

void HttpSession::next_request() {
  if (closed_) return;
  phase_ = Phase::kReading;
  parser_.emplace();
  parser_->header_limit(state_.config().max_header_bytes);
  parser_->body_limit(boost::none);  // set after the header is checked (chunked bodies)
  header_checked_ = false;
  request_started_ = in_.size() > 0;
  head_ = RequestHead();
  error_shape_ = ErrorShape::kOpenAI;
  head_only_ = false;
  cors_allow_origin_.clear();
  response_done_ = false;
  streaming_ = false;
  listener_.reset();
  if (draining_ && !request_started_) {
    close_now();
    return;
  }
  arm_read_timer(state_.config().keep_alive_timeout);
  parse_input();
  do_read();
}

void HttpSession::do_read() {
  if (reading_ || closed_ || peer_closed_) return;
  const std::size_t room = in_.max_size() - in_.size();
  if (room == 0) return;  // pipelined input backs up; resumes after this response
  reading_ = true;
  socket_.async_read_some(net::buffer(read_buf_.data(), std::min(room, read_buf_.size())),
                          net::bind_executor(executor_, [self = shared_from_this()](
                                                            const error_code& ec, std::size_t n) {
                            self->on_read(ec, n);
                          }));
}

void HttpSession::on_read(const error_code& ec, std::size_t n) {
  reading_ = false;
  if (closed_) return;
  if (ec) {
    on_peer_closed(AbortCause::kClientDisconnect);
    return;
  }
  // Fits: in_ only shrank since the read asked for at most its room.
  net::buffer_copy(in_.prepare(n), net::buffer(read_buf_.data(), n));
  in_.commit(n);
  switch (phase_) {
    case Phase::kReading:
      request_started_ = true;
      parse_input();
      break;
    case Phase::kClosing:
      in_.consume(in_.size());
      break;
    case Phase::kHandling:
      break;  // held for the next request (do_read stops when the buffer is full)
    case Phase::kClosed:
      return;
  }
  do_read();
}

void HttpSession::parse_input() {
  while (phase_ == Phase::kReading && !closed_) {
    if (header_checked_ && parser_->is_done()) break;
    if (in_.size() == 0) return;
    error_code ec;
    const std::size_t used = parser_->put(in_.data(), ec);
    in_.consume(used);
    if (ec == http::error::need_more) {
      if (!header_checked_ && parser_->is_header_done()) on_header();
      if (used == 0) return;
      continue;
    }
    if (ec) {
      if (ec == http::error::header_limit) {
        fail_request(headers_too_large(state_.config().max_header_bytes));
      } else if (ec == http::error::body_limit) {
        fail_request(payload_too_large(state_.config().max_body_bytes));
      } else {
        fail_request(bad_request("Malformed HTTP request: " + ec.message()));
      }
      return;
    }
    if (!header_checked_ && parser_->is_header_done()) {
      on_header();
      if (phase_ != Phase::kReading) return;
    }
    if (parser_->is_done()) {
      on_request_complete();
      return;
    }
  }
}

void HttpSession::on_header() {
  header_checked_ = true;
  const auto& h = parser_->get();
  http10_ = h.version() < 11;
  keep_alive_ = h.keep_alive();
  if (auto err = check_framing(*parser_)) {
    fail_request(*err);
    return;
  }
  head_.method = std::string(h.method_string());
  head_.target = std::string(h.target());
  head_.http10 = http10_;
  // The absolute form (RFC 9112 §3.2.2): "http://host/path?q"; its authority replaces Host.
  std::string_view target = head_.target;
  const std::string scheme = ascii_lower(target.substr(0, 8));
  std::optional<std::string> authority;
  for (std::string_view prefix : {"http://", "https://"}) {
    if (scheme.compare(0, prefix.size(), prefix) == 0) {
      target.remove_prefix(prefix.size());
      const size_t end = target.find_first_of("/?");
      authority = std::string(target.substr(0, end));
      target = end == std::string_view::npos ? std::string_view() : target.substr(end);
      break;
    }
  }
  std::string path(target.substr(0, target.find('?')));
  if (authority && path.empty()) path = "/";
  head_.path = std::move(path);
  error_shape_ = error_shape_for_path(head_.path);
  size_t hosts = 0;
  for (const auto& f : h) {
    if (f.name() != http::field::host) continue;
    if (++hosts > 1) {
      fail_request(bad_request("The request has more than one Host header"));
      return;
    }
    head_.host = std::string(f.value());
  }
  if (authority) head_.host = std::move(authority);
  if (auto it = h.find(http::field::origin); it != h.end()) head_.origin = std::string(it->value());
  if (auto it = h.find(http::field::content_type); it != h.end()) {
    head_.content_type = std::string(it->value());
  }
  head_.preflight =
      head_.method == "OPTIONS" && h.find(http::field::access_control_request_method) != h.end();
  if (auto it = h.find(http::field::authorization); it != h.end()) {
    head_.authorization = std::string(it->value());
  }
  if (auto it = h.find("x-api-key"); it != h.end()) head_.x_api_key = std::string(it->value());
  if (auto it = h.find(http::field::if_none_match); it != h.end()) {
    head_.if_none_match = std::string(it->value());
  }
  if (auto cl = parser_->content_length()) head_.content_length = *cl;
  head_.chunked = parser_->chunked();
  head_only_ = head_.method == "HEAD";
  if (auto err = router_.check_header(head_)) {
    fail_request(*err);
    return;
  }
  cors_allow_origin_ = head_.cors_allow_origin;
  // Expect (RFC 9110 §10.1.1): the header passed every check, so the body is wanted.
  if (auto it = h.find(http::field::expect); it != h.end()) {
    if (ascii_lower(it->value()) != "100-continue") {
      ApiError e = bad_request("Only 'Expect: 100-continue' is supported");
      e.status = 417;
      e.code = "expectation_failed";
      fail_request(e);
      return;
    }
    const bool body_follows = head_.chunked || (head_.content_length && *head_.content_length > 0);
    if (!http10_ && body_follows && !parser_->is_done()) {
      queue_write("HTTP/1.1 100 Continue\r\n\r\n");
    }
  }
  parser_->body_limit(state_.config().max_body_bytes);
  arm_read_timer(state_.config().read_timeout);
}

void HttpSession::on_request_complete() {
  read_timer_.cancel();
  ++read_generation_;  // a read-timer callback already queued is stale now
  phase_ = Phase::kHandling;
  HttpRequest req;
  req.head = std::move(head_);
  req.body = parser_->release().body();
  parser_.reset();
  router_.handle(shared_from_this(), std::move(req));
  do_read();  // keep a read pending: a closed socket aborts the request
}

void HttpSession::fail_request(const ApiError& error) {
  read_timer_.cancel();
  phase_ = Phase::kHandling;
  close_after_response_ = true;  // the rest of the request is unread
  if (error.status == 401) {
    state_.metrics().count_rejection(Rejection::kUnauthorized);
  } else if (error.status < 500) {
    state_.metrics().count_rejection(Rejection::kInvalid);
  }
  respond_error(error);
}

void HttpSession::arm_read_timer(std::chrono::milliseconds timeout) {
  const uint64_t gen = ++read_generation_;
  read_timer_.expires_after(timeout);
  read_timer_.async_wait(
      net::bind_executor(executor_, [self = shared_from_this(), gen](const error_code& ec) {
        if (ec || self->closed_ || gen != self->read_generation_) return;
        if (self->phase_ == Phase::kReading) {
          if (self->request_started_) {
            ApiError e = bad_request("Timed out reading the request");
            e.status = 408;
            self->fail_request(e);
          } else {
            self->close_now();
          }
        } else if (self->phase_ == Phase::kClosing) {
          self->close_now();
        }
      }));
}

void HttpSession::on_peer_closed(AbortCause cause) {
  if (closed_) return;
  peer_closed_ = true;
  if (listener_) {
    auto l = std::move(listener_);
    l->on_connection_lost(cause);
  }
  close_now();
}

// ---- writing ------------------------------------------------------------------------------

std::string HttpSession::header_block(
    int status, const std::string& content_type, uint64_t content_length, bool chunked,
    const std::vector<std::pair<std::string, std::string>>& extra) {
  const bool close = close_after_response_ || !keep_alive_ || draining_ ||
                     state_.phase() == ServerPhase::kDraining || (streaming_ && http10_);
  if (close) close_after_response_ = true;
  std::string h =
      fmt::format("HTTP/1.1 {} {}\r\nServer: pagoda\r\n", status, reason_phrase(status));
  if (!cors_allow_origin_.empty()) {
    h += fmt::format("Access-Control-Allow-Origin: {}\r\nVary: Origin\r\n", cors_allow_origin_);
  }
  if (!content_type.empty()) h += fmt::format("Content-Type: {}\r\n", content_type);
  if (chunked) {
    h += "Transfer-Encoding: chunked\r\n";
  } else if (!streaming_ && status != 204 && status != 304) {
    h += fmt::format("Content-Length: {}\r\n", content_length);
  }
  h += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
  for (const auto& [k, v] : extra)
    h += fmt::format("{}: {}\r\n", k, v);
  h += "\r\n";
  return h;
}

void HttpSession::respond(HttpResponse r) {
  if (closed_ || peer_closed_ || phase_ != Phase::kHandling || response_done_ || streaming_) {
    return;
  }
  state_.metrics().count_http_response(r.status);
  std::string data = header_block(r.status, r.content_type, r.body.size(), false, r.headers);
  if (!head_only_) data += r.body;  // HEAD: the GET's headers, no body
  listener_.reset();
  response_done_ = true;
  queue_write(std::move(data));
}

void HttpSession::respond_error(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.body = e.body(error_shape_);
  if (e.retry_after_seconds > 0)
    r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_seconds));
  if (e.status == 405) r.headers.emplace_back("Allow", "GET, HEAD, POST, OPTIONS");
  respond(std::move(r));
}

void HttpSession::begin_stream() {
  if (closed_ || peer_closed_ || phase_ != Phase::kHandling || response_done_ || streaming_) {
    return;
  }
  state_.metrics().count_http_response(200);
  streaming_ = true;
  stream_chunked_ = !http10_;
  queue_write(header_block(200, "text/event-stream", 0, stream_chunked_,
                           {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}}));
}

bool HttpSession::write_stream(std::string data) {
  if (!connection_open() || !streaming_) return false;
  if (data.empty()) return true;
  if (out_bytes_ + data.size() > state_.config().max_write_buffer_bytes) {
    on_peer_closed(AbortCause::kSlowReader);
    return false;
  }
  if (stream_chunked_) {
    std::string chunk = fmt::format("{:x}\r\n", data.size());
    chunk += data;
    chunk += "\r\n";
    queue_write(std::move(chunk));
  } else {
    queue_write(std::move(data));
  }
  return true;
}

void HttpSession::end_stream() {
  if (!streaming_) return;
  streaming_ = false;
  response_done_ = true;
  listener_.reset();
  if (!connection_open()) return;
  if (stream_chunked_) {
    queue_write("0\r\n\r\n");
  } else {
    close_after_response_ = true;
    if (!writing_) response_finished();
  }
}

void HttpSession::queue_write(std::string data) {
  if (closed_) return;
  out_bytes_ += data.size();
  out_.push_back(std::move(data));
  if (!writing_) do_write();
}

void HttpSession::do_write() {
  if (out_.empty()) {
    writing_ = false;
    if (response_done_ && !streaming_) response_finished();
    return;
  }
  writing_ = true;
  in_flight_.clear();
  std::vector<net::const_buffer> buffers;
  while (!out_.empty() && in_flight_.size() < 64) {
    in_flight_.push_back(std::move(out_.front()));
    out_.pop_front();
  }
  buffers.reserve(in_flight_.size());
  for (const std::string& s : in_flight_)
    buffers.emplace_back(s.data(), s.size());
  const uint64_t gen = ++write_generation_;
  write_timer_.expires_after(state_.config().write_timeout);
  write_timer_.async_wait(
      net::bind_executor(executor_, [self = shared_from_this(), gen](const error_code& ec) {
        if (ec || self->closed_ || !self->writing_ || gen != self->write_generation_) return;
        self->on_peer_closed(AbortCause::kSlowReader);
      }));
  net::async_write(
      socket_, buffers,
      net::bind_executor(executor_, [self = shared_from_this()](const error_code& ec, std::size_t) {
        self->on_write(ec);
      }));
}

void HttpSession::on_write(const error_code& ec) {
  write_timer_.cancel();
  for (const std::string& s : in_flight_)
    out_bytes_ -= s.size();
  in_flight_.clear();
  writing_ = false;
  if (closed_) return;
  if (ec) {
    on_peer_closed(AbortCause::kClientDisconnect);
    return;
  }
  do_write();
}

void HttpSession::response_finished() {
  if (closed_ || writing_ || !out_.empty()) return;
  if (close_after_response_ || !keep_alive_ || draining_ ||
      state_.phase() == ServerPhase::kDraining) {
    lingering_close();
    return;
  }
  next_request();
}

void HttpSession::lingering_close() {
  if (closed_) return;
  phase_ = Phase::kClosing;
  in_.consume(in_.size());
  error_code ec;
  socket_.shutdown(net::ip::tcp::socket::shutdown_send, ec);
  if (ec) {
    close_now();
    return;
  }
  arm_read_timer(kLingerTimeout);
  do_read();
}

void HttpSession::close_now() {
  if (closed_) return;
  closed_ = true;
  phase_ = Phase::kClosed;
  listener_.reset();
  error_code ec;
  read_timer_.cancel();
  write_timer_.cancel();
  socket_.shutdown(net::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  out_.clear();
}

}  // namespace pagoda::server
