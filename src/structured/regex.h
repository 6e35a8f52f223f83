// Regular expressions → byte-level NFAs, for the lexemes of a Grammar (grammar.h).
//
// Syntax: the common ECMAScript/PCRE subset JSON Schema `pattern`s and GBNF terminals use —
// literals, `.`, classes `[a-z]` `[^...]` with ranges and escapes, `\d \D \w \W \s \S`, escapes
// `\n \r \t \f \v \0 \cX \xHH \x{H...} \uHHHH \u{H...}` and `\` + ASCII punctuation, groups `( )`
// `(?: )`, named groups `(?<n> )` `(?P<n> )` (as plain groups), alternation `|`, quantifiers
// `* + ? {n} {n,} {n,m}` and their lazy forms (the same language). Patterns work on Unicode code
// points: `.` and negated classes match any code point (`.` all but the ECMAScript line
// terminators \n \r U+2028 U+2029), encoded as UTF-8 (1–4 bytes, no surrogates, ≤ U+10FFFF), so
// the NFA accepts exactly the UTF-8 encodings of the matching strings. `\d` is [0-9], `\w`
// [A-Za-z0-9_], `\s` ECMAScript's white space and line terminators. Full-match semantics (the
// whole input must match); `^` at the very start and `$` at the very end are accepted and
// ignored. As in ECMAScript, `[]` matches nothing and `[^]` any code point; inside a class `\b`
// is backspace; `\uD83D\uDE00` (a surrogate pair) is one code point. A `{` that does not begin
// `{n}`, `{n,}` or `{n,m}` is a literal (PCRE, ECMAScript Annex B), as are `}` and `]`.
// Anything else (backreferences, lookaround, \b, anchors inside, possessive quantifiers, atomic
// groups, inline flags such as `(?i)`, `\p{..}`, POSIX `[[:alpha:]]`, `{,m}`, a class escape as a
// range end) is refused with invalid_argument naming the construct and its offset, as are
// counts above 100000 and groups nested deeper than 256 (regex_parser.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::structured {

// An epsilon-free NFA over bytes, trimmed: every state is reachable from a start state and can
// reach an accepting state (so an empty state set means "no continuation can match").
struct ByteNfa {
  struct Edge {
    uint8_t lo = 0, hi = 0;  // inclusive byte range
    int32_t target = 0;
  };
  struct State {
    std::vector<Edge> edges;  // sorted by (lo, hi, target); touching ranges to one target merged
    bool accepting = false;
  };
  std::vector<State> states;
  std::vector<int32_t> starts;  // initial states (sorted, distinct); empty only if the language
                                // is empty (compile_regex makes one start, state 0)

  // True if the whole of `bytes` is in the language (a simulation; for tests and tools).
  bool full_match(std::string_view bytes) const;
  bool empty_language() const { return starts.empty(); }
};

struct RegexLimits {  // max_nfa_states and max_nfa_edges above 2^30 act as 2^30
  size_t max_pattern_bytes = 1 << 16;
  size_t max_nfa_states = 1 << 18;  // counted repetitions multiply; refused above this
  // Byte transitions, before and after epsilon removal (which can multiply them: `a?` written out
  // n times needs ~n²/2); the epsilon-closure work is bounded by 4x this too.
  size_t max_nfa_edges = 1 << 20;
};

// Parses `pattern` and builds its NFA. invalid_argument names what is wrong and where
// ("regex: lookahead at offset 3 is not supported", "regex: unbalanced ')' at offset 7",
// "regex: {5,2} at offset 4 has min > max", "regex: too many states ...").
Result<ByteNfa> compile_regex(std::string_view pattern, const RegexLimits& limits = {});

}  // namespace pagoda::structured
