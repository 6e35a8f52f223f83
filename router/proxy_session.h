// One client connection of the router (a C++20 coroutine on its own strand): reads requests
// (the server's limits and framing checks, http/http_framing.h), answers /health, /metrics and
// /v1/models itself and proxies every other POST /v1/... by its JSON "model" to a backend chosen
// by the pool, retrying on another replica while no byte has been relayed, then on the fallback
// upstream. Bodies are relayed piece by piece as they arrive; an SSE stream cut mid-way ends
// with a chunk whose finish_reason is "error", an error event and [DONE].
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "router/router_state.h"

namespace pagoda::router {

boost::asio::awaitable<void> serve_connection(boost::asio::ip::tcp::socket socket,
                                              RouterState& state);

}  // namespace pagoda::router
