#include "kernels/team.h"

#include <omp.h>

#include "base/check.h"
#include "kernels/isa.h"
#include "kernels/team_op.h"

namespace pagoda::kernels {
namespace team_detail {
namespace {
thread_local TeamThread* tls_team = nullptr;
}

TeamThread* current_team() {
  return tls_team;
}
}  // namespace team_detail

using team_detail::TeamThread;

void run_in_team(const std::function<void()>& body) {
  PAGODA_CHECK(team_detail::current_team() == nullptr);  // (inside another region: a team of 1)
  const int threads = num_threads();
  team_detail::OpShared shared;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    TeamThread self;
    self.rank = omp_get_thread_num();
    self.size = omp_get_num_threads();
    self.shared = &shared;
    team_detail::tls_team = &self;
    body();
    team_detail::tls_team = nullptr;
  }
}

bool in_team() {
  return team_detail::current_team() != nullptr;
}

void team_first(const std::function<void()>& fn) {
  team_detail::run_first(fn);
}

void team_sync() {
  if (TeamThread* team = team_detail::current_team()) {
    team_detail::OpThread(team->rank, team->size, *team->shared, team->written).sync();
  }
}

}  // namespace pagoda::kernels
