// Test helpers: run a block of code on one ISA path (or thread count), restoring the previous one
// afterwards.
#pragma once

#include <string>

#include "kernels/isa.h"

namespace pagoda::kernels {

class IsaGuard {
 public:
  explicit IsaGuard(Isa isa) : saved_(active_isa()) { set_active_isa(isa); }
  ~IsaGuard() { set_active_isa(saved_); }
  IsaGuard(const IsaGuard&) = delete;
  IsaGuard& operator=(const IsaGuard&) = delete;

 private:
  Isa saved_;
};

// The same for the kernel thread count.
class ThreadsGuard {
 public:
  explicit ThreadsGuard(int n) : saved_(num_threads()) { set_num_threads(n); }
  ~ThreadsGuard() { set_num_threads(saved_); }
  ThreadsGuard(const ThreadsGuard&) = delete;
  ThreadsGuard& operator=(const ThreadsGuard&) = delete;

 private:
  int saved_;
};

inline std::string isa_label(Isa isa) {
  return std::string(isa_name(isa));
}

}  // namespace pagoda::kernels
