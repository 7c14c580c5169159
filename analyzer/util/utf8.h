// Text that came from the traced program (interval labels, thread names) as
// valid UTF-8: each byte that does not start a well-formed sequence becomes
// U+FFFD, as nlohmann::json's error_handler_t::replace writes it. The reader
// cleans such text once, so that every output (the table, JSON, HTML, CSV,
// Perfetto, saved profiles) shows the same string and none can fail on it.
#ifndef VPROF_ANALYZER_UTIL_UTF8_H
#define VPROF_ANALYZER_UTIL_UTF8_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vprof::analyzer {

// The length of the well-formed UTF-8 sequence at s[i] (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF), or 0.
inline size_t utf8_sequence(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return uint8_t(s[i + k]); };
  const size_t left = s.size() - i;
  const uint8_t c = b(0);
  if (c < 0x80) return 1;
  auto cont = [&](size_t k) { return k < left && (b(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

inline std::string valid_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (size_t n = utf8_sequence(s, i)) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    }
  }
  return out;
}

}  // namespace vprof::analyzer

#endif  // VPROF_ANALYZER_UTIL_UTF8_H
