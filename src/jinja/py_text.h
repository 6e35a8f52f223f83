// Python str semantics over UTF-8 bytes: code-point decoding, str.isspace, strip/split/
// splitlines/replace, case mapping, repr() of strings and floats, int()/float() parsing.
// Jinja templates are Python, so byte-identical output needs these exact rules.
//
// Invalid UTF-8 never fails: each invalid byte decodes to U+DC80+byte (as Python's
// "surrogateescape") and encodes back to the same byte, so slicing round-trips.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::jinja {

// Decodes the code point at s[i] and advances i (i < s.size()).
char32_t decode_utf8(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t cp);
std::u32string to_code_points(std::string_view s);
std::string from_code_points(std::u32string_view cps);
size_t count_code_points(std::string_view s);
bool is_ascii(std::string_view s);
// Byte offset of the first invalid UTF-8 sequence, or nullopt when valid.
std::optional<size_t> find_invalid_utf8(std::string_view s);

// Python str.isspace() (also what `\s` matches in Python's re for str patterns).
bool py_isspace(char32_t c);
// Line boundaries of str.splitlines().
bool py_is_line_break(char32_t c);
// Letter/digit classes (exact for ASCII, Latin-1 and the scripts case mapping covers;
// other non-ASCII code points above U+00FF that are not space/punctuation count as letters).
bool py_isalpha(char32_t c);
bool py_isdigit(char32_t c);
bool py_isalnum(char32_t c);
// \w of Python's re: alnum or '_'.
bool py_is_word(char32_t c);
// Simple case mapping (ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic, Armenian,
// Latin Extended Additional, fullwidth). Identity elsewhere.
char32_t to_upper_cp(char32_t c);
char32_t to_lower_cp(char32_t c);
bool py_iscased(char32_t c);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_capitalize(std::string_view s);  // str.capitalize()
std::string py_title(std::string_view s);       // str.title()
std::string py_swapcase(std::string_view s);
bool py_islower(std::string_view s);
bool py_isupper(std::string_view s);

// str.strip/lstrip/rstrip; chars == nullptr strips whitespace.
std::string_view py_strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split / rsplit; sep == nullptr splits on whitespace runs. maxsplit < 0: unlimited.
// Precondition: sep is non-empty.
std::vector<std::string> py_split(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> py_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit);
std::vector<std::string> py_splitlines(std::string_view s, bool keepends);
// str.replace; count < 0: all. Empty `old` inserts `repl` around every code point.
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       int64_t count);
// str.find/rfind/count over code-point indices ([start, end) already clamped by caller).
int64_t py_find(std::string_view s, std::string_view sub, bool reverse);
int64_t py_count(std::string_view s, std::string_view sub);

// repr(str): quotes and escapes exactly as Python.
void append_py_repr(std::string& out, std::string_view s);
// repr(float) / str(float).
std::string py_float_repr(double v);
// Python's round(x, ndigits) for floats (correctly rounded, half-even on exact ties).
double py_round(double x, int64_t ndigits);

// int(s, base) and float(s) as Python parses them; nullopt on ValueError (or overflow of
// int64 for int).
std::optional<int64_t> py_parse_int(std::string_view s, int base);
std::optional<double> py_parse_float(std::string_view s);

}  // namespace pagoda::jinja
