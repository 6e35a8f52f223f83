// The active side of health: a coroutine that wakes every 100 ms (or the probe interval if
// shorter), probes each backend whose probe is due with GET /health (200 = up), and on success
// scrapes its /metrics for the load the pool balances on. Outcomes go to the pool (ejection,
// backoff, readmission) and the metrics.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "router/router_state.h"

namespace pagoda::router {

boost::asio::awaitable<void> run_health_checks(RouterState& state);

}  // namespace pagoda::router
