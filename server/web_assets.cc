#include "server/web_assets.h"

#include <string>

namespace pagoda::server {

namespace {

// If-None-Match (RFC 9110 §13.1.2): "*" or a comma-separated list of entity tags, compared
// weakly (a W/ prefix is ignored).
bool etag_matches(std::string_view header, std::string_view etag) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(',', pos);
    if (end == std::string_view::npos) end = header.size();
    std::string_view tag = header.substr(pos, end - pos);
    while (!tag.empty() && (tag.front() == ' ' || tag.front() == '\t'))
      tag.remove_prefix(1);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\t'))
      tag.remove_suffix(1);
    if (tag == "*") return true;
    if (tag.starts_with("W/")) tag.remove_prefix(2);
    if (tag == etag) return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace

const WebAsset* find_web_asset(std::string_view path) {
  if (path == "/") path = "/index.html";
  for (const WebAsset& a : embedded_web_assets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

HttpResponse web_asset_response(const WebAsset& asset, std::string_view if_none_match) {
  HttpResponse r;
  r.headers.emplace_back("ETag", std::string(asset.etag));
  r.headers.emplace_back("Cache-Control", "no-cache");
  r.headers.emplace_back("X-Content-Type-Options", "nosniff");
  if (asset.content_type.starts_with("text/html")) {
    r.headers.emplace_back("Content-Security-Policy",
                           "default-src 'none'; script-src 'self'; style-src 'self'; "
                           "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                           "form-action 'none'; frame-ancestors 'none'");
    r.headers.emplace_back("Referrer-Policy", "no-referrer");
  }
  if (!if_none_match.empty() && etag_matches(if_none_match, asset.etag)) {
    r.status = 304;
    r.content_type.clear();
    return r;
  }
  r.content_type = std::string(asset.content_type);
  r.body = std::string(asset.body);
  return r;
}

}  // namespace pagoda::server
