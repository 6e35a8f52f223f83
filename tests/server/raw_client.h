// RawClient: a blocking HTTP/1.1 client over a plain POSIX socket, for tests that need to send
// malformed bytes, stop reading, or vanish mid-request. Responses are parsed just enough:
// status, headers, a Content-Length or chunked body (decoded), or everything until close.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>

namespace pagoda::testing {

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;                            // de-chunked
  bool complete = false;
  double ms = 0;  // from the first byte sent by read_response's caller to completion
};

class RawClient {
 public:
  explicit RawClient(uint16_t port, int rcvbuf = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (rcvbuf > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  ~RawClient() { close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }

  bool send(std::string_view data) {
    size_t off = 0;
    while (off < data.size()) {
      const ssize_t n = ::send(fd_, data.data() + off, data.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads until one full response arrived, the peer closed, or the timeout passed.
  RawResponse read_response(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + timeout;
    RawResponse r;
    for (;;) {
      if (try_parse(r)) break;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) {
        eof_ = true;
        try_parse(r);
        break;
      }
      in_.append(buf, static_cast<size_t>(n));
    }
    r.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

  // Reads whatever arrives within `timeout` (raw bytes, not consumed by read_response).
  std::string read_some(std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return "";
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
      eof_ = true;
      return "";
    }
    in_.append(buf, static_cast<size_t>(n));
    return std::string(buf, static_cast<size_t>(n));
  }

  // Drops what was read and not parsed yet (e.g. a 100 Continue seen through read_some).
  void clear_input() { in_.clear(); }

  // True once the server has closed its side (reads return 0) within `timeout`.
  bool wait_closed(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!eof_) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) eof_ = true;
    }
    return true;
  }

  // Closes abruptly (RST when `reset`), as a client that vanishes.
  void close(bool reset = false) {
    if (fd_ < 0) return;
    if (reset) {
      linger l{1, 0};
      ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    }
    ::close(fd_);
    fd_ = -1;
  }

 private:
  // Parses in_ into r when a whole response is present (consuming it).
  bool try_parse(RawResponse& r) {
    const auto end = in_.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const std::string head = in_.substr(0, end);
    r = RawResponse();
    const auto sp = head.find(' ');
    r.status = sp == std::string::npos ? 0 : std::atoi(head.c_str() + sp + 1);
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos < head.size()) {
      const size_t next = head.find("\r\n", pos + 2);
      const std::string line =
          head.substr(pos + 2, (next == std::string::npos ? head.size() : next) - pos - 2);
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        for (char& c : name)
          c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string value = line.substr(colon + 1);
        while (!value.empty() && value.front() == ' ')
          value.erase(0, 1);
        r.headers[name] = value;
      }
      pos = next;
    }
    const size_t body_start = end + 4;
    if (auto it = r.headers.find("content-length"); it != r.headers.end()) {
      const size_t len = std::strtoull(it->second.c_str(), nullptr, 10);
      if (in_.size() - body_start < len) return false;
      r.body = in_.substr(body_start, len);
      in_.erase(0, body_start + len);
      r.complete = true;
      return true;
    }
    if (auto it = r.headers.find("transfer-encoding"); it != r.headers.end()) {
      std::string body;
      size_t p = body_start;
      for (;;) {
        const auto crlf = in_.find("\r\n", p);
        if (crlf == std::string::npos) return eof_ && (r.body = body, true);
        const size_t size = std::strtoull(in_.c_str() + p, nullptr, 16);
        if (size == 0) {
          if (in_.size() < crlf + 4) return false;
          r.body = body;
          in_.erase(0, crlf + 4);
          r.complete = true;
          return true;
        }
        if (in_.size() < crlf + 2 + size + 2) return eof_ && (r.body = body, true);
        body.append(in_, crlf + 2, size);
        p = crlf + 2 + size + 2;
      }
    }
    if (!eof_) return false;
    r.body = in_.substr(body_start);
    in_.clear();
    r.complete = true;
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  std::string in_;
};

inline std::string http_post(const std::string& path, const std::string& body,
                             const std::string& extra_headers = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

inline std::string http_get(const std::string& path, const std::string& extra_headers = "") {
  return "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n" + extra_headers + "\r\n";
}

}  // namespace pagoda::testing
