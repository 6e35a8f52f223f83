// The backend a model of the engine is built on: the CPU's, or (tensor_parallel_size or
// pipeline_parallel_size > 1) this rank's shard or stage of it over the job's communicator
// (backend/parallel/sharded_backend.h).
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace pagoda::api {

backend::Backend& model_backend(int32_t tensor_parallel_size, int32_t pipeline_parallel_size = 1,
                                bool expert_parallel = false);

}  // namespace pagoda::api
