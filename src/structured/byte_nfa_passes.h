// Clean-up passes over a ByteNfa (regex.h) that compile_regex runs after epsilon elimination:
// canonical edge lists, trimming, and merging states that have the same continuations.
#pragma once

#include <vector>

#include "structured/regex.h"

namespace pagoda::structured {

// Sorts edges by (lo, hi, target), merging ranges to the same target that overlap or touch.
void normalize_edges(std::vector<ByteNfa::Edge>& edges);

// Keeps the states that can reach an accepting state, renumbered in order; with none left (the
// start cannot accept anything) the NFA becomes empty: no states, no starts.
// Precondition: every state is reachable from the single start state 0, edges normalized.
void trim_nfa(ByteNfa& nfa);

// Merges states with the same accepting flag and the same edges (the same continuations), a few
// rounds, each merging what the previous one made identical. Keeps edges normalized and the
// trimming invariant; the start stays state 0.
void merge_equivalent_states(ByteNfa& nfa);

}  // namespace pagoda::structured
