// The server's framing checks are the HTTP layer's (http/http_framing.h, shared with router/).
#pragma once

#include "http/http_framing.h"
#include "server/api_error.h"

namespace pagoda::server {

using http::ascii_lower;
using http::check_framing;

}  // namespace pagoda::server
