// Selecting functions by name. A pattern is what the user typed after
// --function; a definition matches it when its normalized qualified name does.
//
//   leveldb::DBImpl::Write            every overload of that method
//   leveldb::DBImpl::Write(const WriteOptions &, WriteBatch *)   one overload
//   exec_simple_query                 a C function (all files if static in several)
//   backend/tcop/postgres.c:exec_simple_query   the static one in that file
//
// Normalization drops "(anonymous namespace)::" and template argument lists,
// so `ns::Box<T>::get` is selected as `ns::Box::get` (templates by definition).
#ifndef VPROF_INSTRUMENTER_NAMES_H
#define VPROF_INSTRUMENTER_NAMES_H

#include <cctype>
#include <string>
#include <vector>

#include "common/expected.h"

namespace vprof::instr {

struct NamePattern {
  std::string text;       // as typed, for messages
  std::string file;       // path suffix ("" = any file)
  std::string name;       // normalized qualified name
  std::string signature;  // normalized parameter list without parens ("" = any overload)
  bool has_signature = false;
};

Expected<NamePattern> parse_pattern(const std::string &text);

// "ns::(anonymous namespace)::C<int>::f" -> "ns::C::f"; operator names keep their '<'.
std::string normalize_qualified(const std::string &qualified);

// A character of a C or C++ identifier (letters, digits, '_').
inline bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whitespace-insensitive form of a parameter list, for signature comparison.
std::string normalize_signature(const std::string &params);

bool path_has_suffix(const std::string &path, const std::string &suffix);

// Up to `limit` names from `known` closest to `wanted` (edit distance on the
// whole name and on its last component), best first.
std::vector<std::string> close_matches(const std::string &wanted,
                                       const std::vector<std::string> &known, size_t limit = 5);

// The first `shown` names and how many more ("a, b, c, d, e and 249 more"):
// a call through a pointer may reach hundreds of functions (Redis's
// c->cmd->proc, 254), and a line a person reads names a few.
std::string some_names(const std::vector<std::string> &names, size_t shown = 5);

}  // namespace vprof::instr

#endif
