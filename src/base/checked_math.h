// Checked integer arithmetic for sizes computed from untrusted input. Every size derived from a
// file or a request goes through these before anything is allocated or indexed.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

namespace pagoda {

template <typename T>
requires std::is_integral_v<T>
constexpr std::optional<T> checked_add(T a, T b) {
  T out;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

template <typename T>
requires std::is_integral_v<T>
constexpr std::optional<T> checked_sub(T a, T b) {
  T out;
  if (__builtin_sub_overflow(a, b, &out)) return std::nullopt;
  return out;
}

template <typename T>
requires std::is_integral_v<T>
constexpr std::optional<T> checked_mul(T a, T b) {
  T out;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

// Converts between integer types, failing if the value does not fit.
template <typename To, typename From>
requires std::is_integral_v<To> && std::is_integral_v<From>
constexpr std::optional<To> checked_cast(From v) {
  To out;
  if (__builtin_add_overflow(v, From{0}, &out)) return std::nullopt;
  return out;
}

// True if `align` is a non-zero power of two.
constexpr bool is_power_of_two(uint64_t v) {
  return v != 0 && (v & (v - 1)) == 0;
}

// Rounds `v` up to a multiple of `align` (a power of two); nullopt on overflow.
constexpr std::optional<uint64_t> checked_align_up(uint64_t v, uint64_t align) {
  auto sum = checked_add<uint64_t>(v, align - 1);
  if (!sum) return std::nullopt;
  return *sum & ~(align - 1);
}

}  // namespace pagoda
