#include "router/router_state.h"

namespace pagoda::router {

RouterState::RouterState(RouterConfig config, std::string config_path)
    : config_(std::make_shared<const RouterConfig>(std::move(config))),
      config_path_(std::move(config_path)),
      pool_(*config_, BackendPool::Clock::now()),
      degradation_(config_->ladder) {}

std::shared_ptr<const RouterConfig> RouterState::config() const {
  std::lock_guard lock(mu_);
  return config_;
}

Status RouterState::reload() {
  PAGODA_ASSIGN_OR_RETURN(RouterConfig next, load_router_config(config_path_));
  auto shared = std::make_shared<const RouterConfig>(std::move(next));
  pool_.reconfigure(*shared, BackendPool::Clock::now());
  degradation_.reconfigure(shared->ladder);
  std::lock_guard lock(mu_);
  config_ = std::move(shared);
  return Status();
}

}  // namespace pagoda::router
