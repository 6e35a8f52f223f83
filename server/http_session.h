// HttpSession: one HTTP/1.1 connection. A single read loop feeds Beast's request parser and
// keeps reading while a request is being answered, so a client that goes away is noticed in
// every phase (queued, prefill, streaming, non-streaming) and its request aborted. Responses are
// plain (Content-Length) or streamed (SSE over chunked encoding); writes are queued and bounded
// (a client that stops reading is cut off after max_write_buffer_bytes or write_timeout).
// Every handler runs on the connection's strand; the routes call the responder methods below
// from that strand only.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "server/api_error.h"
#include "server/http_types.h"
#include "server/server_metrics.h"

namespace pagoda::server {

class ServerState;
class Router;

// A request in flight that must hear about its connection ending (GenerationJob).
class ConnectionListener {
 public:
  virtual ~ConnectionListener() = default;
  virtual void on_connection_lost(AbortCause cause) = 0;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  using Executor = boost::asio::any_io_executor;

  // `socket`'s executor must be a strand (accept with make_strand).
  HttpSession(boost::asio::ip::tcp::socket socket, ServerState& state, Router& router);
  ~HttpSession();

  // Registers with the state and starts reading. `reject` answers 503 once and closes (over
  // --max-connections).
  void start(bool reject = false);
  Executor executor() const { return executor_; }

  // ---- responder API (strand only) ----
  // A complete response; the connection then serves the next request (or closes).
  void respond(HttpResponse response);
  void respond_error(const ApiError& error);
  // Starts an SSE response (200, text/event-stream).
  void begin_stream();
  // Queues SSE bytes. False if the connection is gone or the client fell too far behind (the
  // listener has then been told and the connection is closing).
  bool write_stream(std::string data);
  void end_stream();
  // The current request's listener; told once if the connection ends before the response does.
  void set_listener(std::shared_ptr<ConnectionListener> listener) {
    listener_ = std::move(listener);
  }
  bool connection_open() const { return !closed_ && !peer_closed_; }

  // Draining: idle connections close, busy ones close after their response. Any thread.
  void drain();

 private:
  enum class Phase { kReading, kHandling, kClosing, kClosed };

  void next_request();
  void do_read();
  void on_read(const boost::system::error_code& ec, std::size_t n);
  void parse_input();
  void on_header();
  void on_request_complete();
  void fail_request(const ApiError& error);
  void arm_read_timer(std::chrono::milliseconds timeout);
  void on_peer_closed(AbortCause cause);

  void queue_write(std::string data);
  void do_write();
  void on_write(const boost::system::error_code& ec);
  void response_finished();
  void lingering_close();
  void close_now();
  std::string header_block(int status, const std::string& content_type, uint64_t content_length,
                           bool chunked,
                           const std::vector<std::pair<std::string, std::string>>& extra);

  Executor executor_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer read_timer_;
  boost::asio::steady_timer write_timer_;
  ServerState& state_;
  Router& router_;
  uint64_t session_id_ = 0;

  Phase phase_ = Phase::kReading;
  // Received bytes not parsed yet. A read lands in read_buf_ and is appended on completion: the
  // parser consumes from in_ while a read is outstanding (requests are handled with a read kept
  // pending), and a flat_buffer moves its bytes when consumed, so a read into in_.prepare()
  // would land where in_ no longer looks (its stale bytes parsed again as a request).
  boost::beast::flat_buffer in_;
  std::vector<char> read_buf_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  bool header_checked_ = false;
  bool request_started_ = false;  // bytes of the current request have arrived
  bool reading_ = false;
  bool peer_closed_ = false;
  bool closed_ = false;
  bool keep_alive_ = true;
  bool http10_ = false;
  bool head_only_ = false;         // a HEAD request: headers only
  std::string cors_allow_origin_;  // echoed in Access-Control-Allow-Origin ("" = none)
  bool draining_ = false;
  RequestHead head_;
  ErrorShape error_shape_ = ErrorShape::kOpenAI;  // of the current request's path

  // Output.
  std::deque<std::string> out_;
  std::vector<std::string> in_flight_;
  uint64_t out_bytes_ = 0;
  bool writing_ = false;
  bool response_done_ = false;  // the whole response is queued
  bool close_after_response_ = false;
  bool streaming_ = false;
  bool stream_chunked_ = false;
  uint64_t read_generation_ = 0;   // stale read-timer callbacks compare against this
  uint64_t write_generation_ = 0;  // stale write-timer callbacks compare against this
  std::shared_ptr<ConnectionListener> listener_;
};

}  // namespace pagoda::server
