#include "http/http_framing.h"

#include <cctype>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::http {

namespace http = boost::beast::http;

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

namespace {

// The transfer codings of every Transfer-Encoding field, in order, lower-case ("" for an empty
// list element is dropped, as RFC 9110 §5.6.1 allows).
std::vector<std::string> transfer_codings(const http::request_parser<http::string_body>& p) {
  std::vector<std::string> out;
  for (const auto& f : p.get()) {
    if (f.name() != http::field::transfer_encoding) continue;
    const std::string_view v(f.value().data(), f.value().size());
    size_t start = 0;
    while (start <= v.size()) {
      size_t end = v.find(',', start);
      if (end == std::string_view::npos) end = v.size();
      std::string_view item = v.substr(start, end - start);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t'))
        item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t'))
        item.remove_suffix(1);
      if (!item.empty()) out.push_back(ascii_lower(item));
      start = end + 1;
    }
  }
  return out;
}

}  // namespace

std::optional<ApiError> check_framing(const http::request_parser<http::string_body>& p) {
  const auto& h = p.get();
  const bool http10 = h.version() < 11;
  const bool has_te = h.find(http::field::transfer_encoding) != h.end();
  if (!has_te) return std::nullopt;
  if (http10) return bad_request("Transfer-Encoding is not allowed in an HTTP/1.0 request");
  if (h.find(http::field::content_length) != h.end()) {
    return bad_request("A request must not carry both Transfer-Encoding and Content-Length");
  }
  const std::vector<std::string> codings = transfer_codings(p);
  if (codings.empty() || codings.back() != "chunked") {
    return bad_request("Transfer-Encoding must end with 'chunked' (RFC 9112 §6.3)");
  }
  if (codings.size() != 1 || !p.chunked()) {
    ApiError e = bad_request("Only 'Transfer-Encoding: chunked' is supported");
    e.status = 501;
    e.code = "unsupported_transfer_coding";
    return e;
  }
  return std::nullopt;
}

}  // namespace pagoda::http
