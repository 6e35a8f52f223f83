// Scratch: reusable f32 buffers for one forward pass, kept between steps so the steady state
// allocates nothing. The forward pass reserves every buffer it will use before it starts (each
// block has a reserve_* function for its own), because inside it every thread of the kernels'
// team (kernels/team.h) asks for the same buffers at once: get only hands them out.
#pragma once

#include <cstddef>
#include <vector>

#include "base/check.h"

namespace pagoda::model {

class Scratch {
 public:
  // Grows slot `slot` to at least n floats. Not while a forward pass runs.
  void reserve(size_t slot, size_t n) {
    if (slot >= buffers_.size()) buffers_.resize(slot + 1);
    if (buffers_[slot].size() < n) buffers_[slot].resize(n);
  }
  // Slot `slot`'s buffer. precondition: reserved for at least n floats. Contents unspecified.
  float* get(size_t slot, size_t n) {
    PAGODA_CHECK(slot < buffers_.size() && buffers_[slot].size() >= n);
    return buffers_[slot].data();
  }

 private:
  std::vector<std::vector<float>> buffers_;
};

}  // namespace pagoda::model
