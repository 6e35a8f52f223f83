// The regex lists per pre-tokenizer follow llama.cpp's llm_tokenizer_bpe (src/llama-vocab.cpp),
// kept in its std::regex spelling and translated to PCRE2 by to_pcre2(). Where llama.cpp runs a
// hand-written splitter instead (the GPT-2 and Llama-3 patterns) or a "collapsed" std::regex
// (\p{L}/\p{N}/\p{P} mapped to one byte per category), PCRE2 with UCP matches the same words:
// both are leftmost-first backtracking engines and the categories are the Unicode ones.
#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <atomic>

#include "base/log.h"
#include "tokenizer/utf8.h"

namespace pagoda::tokenizer {
namespace {

// Unicode White_Space (what llama.cpp's unicode_cpt_flags calls whitespace), as class members.
constexpr std::string_view kWhiteSpace =
    "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
    "\\x{205F}\\x{3000}";

constexpr std::string_view kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr std::string_view kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kTekken =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|"
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*"
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr std::string_view kPoro =
    " ?[^(\\s|.,!?\\x{2026}\\x{3002}\\x{FF0C}\\x{3001}\\x{0964}"
    "\\x{06D4}\\x{060C})]+";
// CJK ideographs 一-龥, U+0800-一, Hangul 가-U+D7FF (deepseek).
constexpr std::string_view kDeepseekCjk =
    "[\\x{4E00}-\\x{9FA5}\\x{0800}-\\x{4E00}\\x{AC00}-\\x{D7FF}]+";
// DeepSeek-LLM's cased-letter class (Unicode LC), written with escapes.
constexpr std::string_view kDeepseekLetters =
    "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
    "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
    "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"
    "\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}\\x{13A0}-\\x{13F5}"
    "\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}\\x{1D00}-\\x{1D2B}"
    "\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}\\x{1F18}-\\x{1F1D}"
    "\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}\\x{1F5B}\\x{1F5D}"
    "\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}\\x{1FC2}-\\x{1FC4}"
    "\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}\\x{1FE0}-\\x{1FEC}"
    "\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}\\x{210A}-\\x{2113}\\x{2115}"
    "\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}"
    "\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}\\x{214E}\\x{2183}\\x{2184}"
    "\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}\\x{2CF2}\\x{2CF3}"
    "\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}\\x{A771}-\\x{A787}"
    "\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}\\x{FB13}-\\x{FB17}"
    "\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}\\x{104B0}-\\x{104D3}"
    "\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}\\x{118A0}-\\x{118DF}"
    "\\x{1E900}-\\x{1E943}]+";

struct PreSpec {
  std::array<std::string_view, 6> names;  // canonical name first; "" pads
  std::array<std::string_view, 6> regexes;
};

// clang-format off
const PreSpec kSpecs[] = {
    {{"default"},
     {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}},
    {{"llama3", "llama-v3", "llama-bpe", "falcon3", "dbrx", "smaug-bpe"}, {kLlama3}},
    {{"chatglm-bpe"}, {kLlama3}},
    {{"deepseek-llm"},
     {"[\\r\\n]", kDeepseekLetters,
      "\\s?[!-/:-~\\x{FF01}-\\x{FF0F}\\x{FF1A}-\\x{FF5E}\\x{2018}-\\x{201F}\\x{3000}-\\x{3002}]+",
      "\\s+$", kDeepseekCjk, "\\p{N}+"}},
    {{"deepseek-v3"},
     {"\\p{N}{1,3}", "[\\x{4E00}-\\x{9FA5}\\x{3040}-\\x{309F}\\x{30A0}-\\x{30FF}]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?"
      "[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}},
    {{"deepseek-coder"}, {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kDeepseekCjk, "\\p{N}"}},
    {{"falcon"}, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}},
    {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone"}, {"\\p{N}", kGpt2}},
    {{"minerva-7b"}, {"\\p{N}", kGpt2}},
    {{"gpt-2", "phi-2", "mpt", "olmo", "jais", "roberta-bpe"}, {kGpt2}},
    {{"jina-es", "jina-de", "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code"}, {kGpt2}},
    {{"gigachat"}, {kGpt2}},
    {{"qwen2", "stablelm2", "megrez"}, {kQwen2}},
    {{"poro-chat", "bloom", "gpt3-finnish"}, {kPoro}},
    {{"viking"}, {kPoro, "\\p{N}"}},
    {{"tekken"}, {kTekken}},
    {{"gpt-4o", "llama4"}, {kGpt4o}},
    {{"chameleon"},
     {"<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", "([\\t\\n]|    |  )", "\\p{N}",
      "[\\p{P}!-/:-@\\[-`{-~]", kGpt2}},
};
// clang-format on

const PreSpec* find_spec(std::string_view pre) {
  if (pre.empty()) return &kSpecs[0];
  for (const PreSpec& spec : kSpecs) {
    for (std::string_view name : spec.names) {
      if (!name.empty() && name == pre) return &spec;
    }
  }
  return nullptr;
}

// Per-thread PCRE2 match state: match data, and a JIT stack big enough for long inputs.
struct MatchScratch {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;

  MatchScratch() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (context != nullptr && jit_stack != nullptr) {
      pcre2_jit_stack_assign(context, nullptr, jit_stack);
    }
  }
  ~MatchScratch() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(jit_stack);
  }
  MatchScratch(const MatchScratch&) = delete;
  MatchScratch& operator=(const MatchScratch&) = delete;
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  std::string pattern;
  ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;

bool PreTokenizer::is_known(std::string_view pre) {
  return find_spec(pre) != nullptr;
}

std::string PreTokenizer::to_pcre2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char d = p[++i];
      if (d == 's') {
        if (in_class) {
          out.append(kWhiteSpace);
        } else {
          out.append("[").append(kWhiteSpace).append("]");
        }
      } else if (d == 'S' && !in_class) {
        out.append("[^").append(kWhiteSpace).append("]");
      } else {
        out.push_back(c);
        out.push_back(d);
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out.push_back(c);
      if (i + 1 < p.size() && p[i + 1] == '^') out.push_back(p[++i]);
      if (i + 1 < p.size() && p[i + 1] == ']') out.push_back(p[++i]);  // literal ']' first
      continue;
    }
    if (in_class && c == ']') {
      in_class = false;
    } else if (!in_class && c == '$') {
      out.append("\\z");
      continue;
    }
    out.push_back(c);
  }
  return out;
}

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(std::string_view pre) {
  const PreSpec* spec = find_spec(pre);
  if (spec == nullptr) {
    PAGODA_LOG_WARN("unknown pre-tokenizer '{}', using 'default' (tokenization may differ)", pre);
    spec = &kSpecs[0];
  }
  std::unique_ptr<PreTokenizer> result(new PreTokenizer());
  for (std::string_view re : spec->regexes) {
    if (re.empty()) continue;
    auto regex = std::make_unique<Regex>();
    regex->pattern = to_pcre2(re);
    int error = 0;
    PCRE2_SIZE error_offset = 0;
    regex->code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex->pattern.data()), regex->pattern.size(),
                      PCRE2_UTF | PCRE2_UCP, &error, &error_offset, nullptr);
    if (regex->code == nullptr) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof(message));
      return internal_error("pre-tokenizer '{}': regex does not compile at {}: {}", pre,
                            error_offset, reinterpret_cast<const char*>(message));
    }
    // JIT is an optimisation: if it is unavailable the interpreter runs the same pattern.
    (void)pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);
    result->regexes_.push_back(std::move(regex));
  }
  return result;
}

void PreTokenizer::apply(const Regex& regex, std::string_view text,
                         const std::vector<ByteRange>& in, std::vector<ByteRange>& out) const {
  MatchScratch& s = scratch();
  for (const auto& [begin, end] : in) {
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + begin);
    const size_t length = end - begin;
    size_t gap_start = 0;  // first byte not yet emitted
    size_t pos = 0;        // where the next search starts
    uint32_t options = PCRE2_NO_UTF_CHECK;
    while (pos <= length) {
      int rc = pcre2_match(regex.code, subject, length, pos, options, s.data, s.context);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
        rc = pcre2_match(regex.code, subject, length, pos, options | PCRE2_NO_JIT, s.data,
                         s.context);
      }
      if (rc == PCRE2_ERROR_NOMATCH && (options & PCRE2_NOTEMPTY_ATSTART) != 0) {
        // No non-empty match where the empty one was: step over one character and go on.
        options = PCRE2_NO_UTF_CHECK;
        if (pos >= length) break;
        pos += utf8::lead_length(static_cast<uint8_t>(subject[pos]));
        continue;
      }
      if (rc < 0) {
        if (rc != PCRE2_ERROR_NOMATCH) {
          static std::atomic<bool> warned{false};
          if (!warned.exchange(true)) {
            PAGODA_LOG_WARN(
                "pre-tokenizer regex failed (PCRE2 error {}); keeping the rest of a "
                "{}-byte piece unsplit",
                rc, length);
          }
        }
        break;
      }
      const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(s.data);
      const size_t match_begin = ovector[0];
      const size_t match_end = ovector[1];
      if (match_end == match_begin) {
        // An empty match adds nothing; look for a non-empty one at the same place.
        pos = match_begin;
        options = PCRE2_NO_UTF_CHECK | PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED;
        continue;
      }
      options = PCRE2_NO_UTF_CHECK;
      if (match_begin > gap_start) out.emplace_back(begin + gap_start, begin + match_begin);
      out.emplace_back(begin + match_begin, begin + match_end);
      gap_start = match_end;
      pos = match_end;
    }
    if (gap_start < length) out.emplace_back(begin + gap_start, end);
  }
}

void PreTokenizer::split(std::string_view text, std::vector<ByteRange>& words) const {
  std::vector<ByteRange> current;
  std::vector<ByteRange> next;
  size_t pos = 0;
  while (pos < text.size()) {
    // A maximal valid UTF-8 run goes through the regexes.
    size_t run_end = pos;
    while (run_end < text.size()) {
      const auto b = static_cast<uint8_t>(text[run_end]);
      const size_t n = b < 0x80 ? 1 : utf8::valid_sequence_length(text, run_end);
      if (n == 0) break;
      run_end += n;
    }
    if (run_end > pos) {
      current.assign(1, ByteRange(pos, run_end));
      for (const auto& regex : regexes_) {
        next.clear();
        apply(*regex, text, current, next);
        current.swap(next);
      }
      words.insert(words.end(), current.begin(), current.end());
      pos = run_end;
    }
    if (pos < text.size()) {  // an invalid byte: a word of its own
      words.emplace_back(pos, pos + 1);
      ++pos;
    }
  }
}

}  // namespace pagoda::tokenizer
