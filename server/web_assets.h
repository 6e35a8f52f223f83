// WebAssets: the built-in web page (chat and dashboard), served at GET / from static files in
// server/web/ that the build embeds in the binary (cmake/embed_web_assets.cmake writes
// web_assets_data.cc): nothing is read from disk or fetched from the network at run time. The
// page and its assets are public; every API call the page makes carries the key the user gave it.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "server/http_types.h"

namespace pagoda::server {

struct WebAsset {
  std::string_view path;          // URL path, "/index.html"
  std::string_view content_type;  // by extension
  std::string_view etag;          // strong, quoted: a prefix of the file's SHA-256
  std::string_view body;
};

// Every embedded file (generated).
std::span<const WebAsset> embedded_web_assets();

// The asset served at `path` ("/" is /index.html); nullptr when there is none.
const WebAsset* find_web_asset(std::string_view path);

// The response to GET/HEAD of `asset`: 200 with the body, or 304 when `if_none_match` lists its
// ETag. Cache-Control: no-cache (a cache revalidates with the ETag, so a new binary's page is
// picked up at once); the HTML page gets a Content-Security-Policy that allows only this origin
// (no inline script, no third-party anything).
HttpResponse web_asset_response(const WebAsset& asset, std::string_view if_none_match);

}  // namespace pagoda::server
