// Backend: the seam between the model's forward pass and the device it runs on. It decides
// where weights and KV storage live and how a forward pass executes; the model, the runner and
// the engine hold a Backend& and never a device detail. The CPU backend (backend/cpu/) is the
// only one now. A CUDA backend adds backend/cuda/ (device memory, a stream per forward pass)
// and kernels/cuda/ (the op fronts' device kernels); nothing in model/ or runner/ changes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>

#include "base/status.h"
#include "kernels/weight_view.h"

namespace pagoda::backend {

namespace parallel {
class Communicator;
}

// This process's part of a tensor-parallel model: rank `rank` of `size` ranks joined by `comm`
// (backend/parallel). size 1: the whole model (comm may be null).
struct TensorParallel {
  parallel::Communicator* comm = nullptr;
  int32_t rank = 0;
  int32_t size = 1;
  // MoE layers: false splits every expert's width like a dense FFN (vLLM's default); true keeps
  // whole experts by index, [rank*E/size, (rank+1)*E/size) (expert parallelism,
  // --expert-parallel).
  bool expert_parallel = false;
};

// This process's stage of a pipeline-parallel model: layers split into `size` consecutive stages,
// stage `stage` (= its rank in `comm`) holding one of them; activations go stage to stage.
struct PipelineParallel {
  parallel::Communicator* comm = nullptr;
  int32_t stage = 0;
  int32_t size = 1;
};

// Memory a backend owns: host pages for the CPU backend, device memory for an accelerator.
class DeviceBuffer {
 public:
  virtual ~DeviceBuffer() = default;
  virtual uint8_t* data() = 0;
  virtual uint64_t size() const = 0;
};

enum class MemoryKind {
  kWeights,  // read by every forward pass (streamed by decode)
  kKvCache,  // the paged KV cache: committed at allocation, so serving never faults on it
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;

  // `bytes` of device memory. resource_exhausted when the device cannot give them.
  virtual Result<std::unique_ptr<DeviceBuffer>> allocate(uint64_t bytes, MemoryKind kind) = 0;

  // Copies `bytes` between two places in this backend's memory (KV copy-on-write).
  virtual void copy(uint8_t* dst, const uint8_t* src, uint64_t bytes) = 0;

  // Moves the matmul weights `views` point at (in a file mapping) into the backend's memory, in
  // the kernels' preferred layout where they have one (WeightView::packed), and points the views
  // at the copies. Returns the memory, which must outlive the views; null when the weights stay
  // where they are (the views are then unchanged and still valid).
  virtual std::unique_ptr<DeviceBuffer> place_weights(
      std::span<kernels::WeightView* const> views) = 0;

  // Runs one forward pass. `pass` is the model's body over the kernels' op fronts; the CPU
  // backend runs it on every thread of the kernels' team, each op splitting its work across
  // them (kernels/team.h), with no fork/join between ops.
  virtual void execute(const std::function<void()>& pass) = 0;

  // The tensor-parallel group a model built on this backend belongs to (backend/parallel/
  // sharded_backend.h); by default none: the model is whole.
  virtual TensorParallel tensor_parallel() const { return {}; }
  // The pipeline stage a model built on this backend is (by default none: every layer).
  virtual PipelineParallel pipeline_parallel() const { return {}; }
};

// The CPU backend (one per process: it drives the kernels' one thread team).
Backend& cpu_backend();

}  // namespace pagoda::backend
