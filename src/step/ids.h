// The ids the engine and the runner exchange: a request (one sequence: a request or one forked
// sample of it, assigned by the scheduler, never reused) and a token. They are the KV metadata
// layer's sequence and token ids, named for this boundary.
#pragma once

#include "kv/kv_types.h"

namespace pagoda::step {

using RequestId = kv::SeqId;
using TokenId = kv::TokenId;

}  // namespace pagoda::step
