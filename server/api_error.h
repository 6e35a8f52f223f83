// The server's ApiError is the HTTP layer's (http/api_error.h, shared with router/); these
// declarations keep the server's call sites in its own namespace.
#pragma once

#include "http/api_error.h"

namespace pagoda::server {

using http::ApiError;
using http::bad_request;
using http::error_shape_for_path;
using http::ErrorShape;
using http::from_status;
using http::headers_too_large;
using http::internal;
using http::method_not_allowed;
using http::payload_too_large;
using http::reason_phrase;
using http::route_not_found;
using http::too_many_requests;
using http::unauthorized;
using http::unavailable;
using http::uri_too_long;

}  // namespace pagoda::server
