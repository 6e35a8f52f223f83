// Scratch: reusable f32 buffers for one forward pass, grown on demand and kept between steps
// so the steady state allocates nothing.
#pragma once

#include <cstddef>
#include <vector>

namespace pagoda::model {

class Scratch {
 public:
  // A buffer of at least n floats for slot `slot`; contents are unspecified.
  float* get(size_t slot, size_t n) {
    if (slot >= buffers_.size()) buffers_.resize(slot + 1);
    if (buffers_[slot].size() < n) buffers_[slot].resize(n);
    return buffers_[slot].data();
  }

 private:
  std::vector<std::vector<float>> buffers_;
};

}  // namespace pagoda::model
