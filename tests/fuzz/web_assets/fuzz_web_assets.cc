// fuzz_web_assets: input = URL path, '\n', If-None-Match value. find_web_asset must answer only
// the table's exact paths ("/" being /index.html); web_asset_response is 200 with the file's bytes
// or 304 without a body, and 304 only when the header holds "*" or the file's tag.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "server/web_assets.h"

namespace pagoda::server {

std::span<const WebAsset> embedded_web_assets() {
  static const WebAsset kAssets[] = {
      {"/index.html", "text/html; charset=utf-8", "\"0123456789abcdef0123456789abcdef\"",
       "<!doctype html>"},
      {"/app.mjs", "text/javascript; charset=utf-8", "\"fedcba9876543210fedcba9876543210\"",
       "export {};"},
  };
  return kAssets;
}

}  // namespace pagoda::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda::server;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nl = input.find('\n');
  const std::string_view path = input.substr(0, nl);
  const std::string_view inm = nl == std::string_view::npos ? "" : input.substr(nl + 1);
  const WebAsset* a = find_web_asset(path);
  if (a == nullptr) {
    if (path == "/" || path == "/index.html" || path == "/app.mjs") std::abort();
    return 0;
  }
  if (a->path != path && !(path == "/" && a->path == "/index.html")) std::abort();
  const HttpResponse r = web_asset_response(*a, inm);
  if (r.status == 304) {
    if (!r.body.empty()) std::abort();
    if (inm.find('*') == std::string_view::npos && inm.find(a->etag) == std::string_view::npos) {
      std::abort();
    }
  } else if (r.status != 200 || r.body != a->body || r.content_type != a->content_type) {
    std::abort();
  }
  return 0;
}
