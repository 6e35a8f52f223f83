// The brute-force mask: every token's bytes run through a fresh copy of the parser state that
// the accepted prefix reached — no token sets, no caching. What Matcher::fill_mask must equal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "structured/compiled_grammar.h"
#include "structured/parser.h"

namespace pagoda::structured::testing {

inline std::vector<uint64_t> brute_force_mask(const std::shared_ptr<CompiledGrammar>& grammar,
                                              const std::string& prefix) {
  const TokenTable& table = *grammar->tokens();
  std::vector<uint64_t> mask(table.num_mask_words(), 0);
  std::lock_guard lock(grammar->mutex());
  Parser parser(*grammar);
  if (!parser.feed(prefix)) return mask;
  for (int32_t t = 0; t < table.vocab_size(); ++t) {
    bool ok = false;
    if (table.is_eog(t)) {
      ok = parser.can_end();
    } else if (!table.bytes(t).empty()) {
      Parser::Threads cur = parser.threads(), next;
      ok = true;
      for (char c : table.bytes(t)) {
        parser.step(cur, static_cast<uint8_t>(c), next);
        if (next.empty()) {
          ok = false;
          break;
        }
        cur.swap(next);
      }
    }
    if (ok) mask[static_cast<size_t>(t) / 64] |= uint64_t{1} << (t % 64);
  }
  return mask;
}

}  // namespace pagoda::structured::testing
