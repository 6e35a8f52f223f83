// Structured output on logits: what the runner applies to the target's rows (sampling and
// verification) and the draft model to its own rows (its q), so both see the same mask.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "structured/constraint.h"

namespace pagoda::runner {

// Masks logits[vocab] to -inf outside the tokens `constraint` allows (its end tokens if it
// allows nothing; nothing while it is inactive, before its trigger). `mask` is scratch.
void mask_logits(structured::Constraint& constraint, std::vector<uint64_t>& mask,
                 std::span<float> logits);

}  // namespace pagoda::runner
