// Request framing checks (RFC 9112 §6) on a parsed request header: the body length must be
// unambiguous, or a proxy in front of us and we could disagree on where a request ends (request
// smuggling). Beast's parser already refuses Transfer-Encoding together with (or after)
// Content-Length when chunked, duplicate or conflicting Content-Lengths, and a second "chunked";
// these checks add what it lets through: a Transfer-Encoding whose final coding is not chunked
// (Beast frames such a request as having no body), any other coding, Transfer-Encoding with
// Content-Length in either order, and Transfer-Encoding in HTTP/1.0.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "http/api_error.h"

namespace pagoda::http {

// nullopt: the framing is exactly Content-Length (or none) or exactly "Transfer-Encoding:
// chunked" in HTTP/1.1. Otherwise 400 (ambiguous or not ending in chunked) or 501 (a coding
// before chunked, which we do not decode); the connection must then be closed.
std::optional<ApiError> check_framing(
    const boost::beast::http::request_parser<boost::beast::http::string_body>& parser);

// `s` in ASCII lower case (header names and values, schemes, hosts and media types compare
// case-insensitively): the one lower-casing helper of the HTTP layers (server and router).
std::string ascii_lower(std::string_view s);

}  // namespace pagoda::http
