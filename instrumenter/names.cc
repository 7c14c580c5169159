#include "instrumenter/names.h"

#include "common/edit_distance.h"

#include <algorithm>
#include <cctype>

namespace vprof::instr {

std::string normalize_qualified(const std::string &q) {
  std::string out;
  static const std::string anon = "(anonymous namespace)::";
  for (size_t i = 0; i < q.size();) {
    if (q.compare(i, anon.size(), anon) == 0) {
      i += anon.size();
      continue;
    }
    // Keep the '<' of operator<, operator<<, operator<=, operator<=>.
    bool after_operator = out.size() >= 8 && out.compare(out.size() - 8, 8, "operator") == 0;
    if (q[i] == '<' && !after_operator && !(out.size() > 8 && out.back() == '<')) {
      int depth = 0;
      size_t j = i;
      for (; j < q.size(); ++j) {
        if (q[j] == '<') ++depth;
        if (q[j] == '>' && --depth == 0) break;
      }
      if (j < q.size()) {
        i = j + 1;
        continue;
      }
    }
    out += q[i++];
  }
  return out;
}

std::string normalize_signature(const std::string &p) {
  // Spaces matter only between two identifier characters ("unsigned int").
  std::string out;
  for (size_t i = 0; i < p.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(p[i]);
    if (std::isspace(c)) {
      size_t j = i;
      while (j < p.size() && std::isspace(static_cast<unsigned char>(p[j]))) ++j;
      if (!out.empty() && j < p.size() && ident_char(out.back()) && ident_char(p[j])) out += ' ';
      i = j - 1;
      continue;
    }
    out += p[i];
  }
  if (out == "void") out.clear();
  return out;
}

Expected<NamePattern> parse_pattern(const std::string &text) {
  NamePattern p;
  p.text = text;
  std::string rest = text;
  size_t paren = rest.find('(');
  // "(anonymous namespace)" is part of a name, not a parameter list.
  while (paren != std::string::npos && rest.compare(paren, 21, "(anonymous namespace)") == 0)
    paren = rest.find('(', paren + 1);
  if (paren != std::string::npos) {
    if (rest.back() != ')') return Error{"--function " + text + ": a signature must end with ')'"};
    p.signature = normalize_signature(rest.substr(paren + 1, rest.size() - paren - 2));
    p.has_signature = true;
    rest = rest.substr(0, paren);
  }
  // A single ':' (not part of "::") separates a file from a C static function.
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] != ':') continue;
    bool dbl = (i + 1 < rest.size() && rest[i + 1] == ':') || (i > 0 && rest[i - 1] == ':');
    if (!dbl) {
      p.file = rest.substr(0, i);
      rest = rest.substr(i + 1);
      break;
    }
  }
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.pop_back();
  if (rest.rfind("::", 0) == 0) rest = rest.substr(2);
  if (rest.empty()) return Error{"--function " + text + ": no function name"};
  p.name = normalize_qualified(rest);
  return p;
}

bool path_has_suffix(const std::string &path, const std::string &suffix) {
  if (suffix.empty()) return true;
  if (path.size() < suffix.size()) return false;
  if (path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  // Whole path components only: "a.c" must not match "data.c".
  return path.size() == suffix.size() || suffix[0] == '/' || path[path.size() - suffix.size() - 1] == '/';
}


static std::string last_component(const std::string &q) {
  size_t p = q.rfind("::");
  return p == std::string::npos ? q : q.substr(p + 2);
}

std::vector<std::string> close_matches(const std::string &wanted, const std::vector<std::string> &known,
                                       size_t limit) {
  std::vector<std::pair<size_t, std::string>> scored;
  std::string wl = last_component(wanted);
  for (const auto &k : known) {
    size_t d = std::min(edit_distance(wanted, k), edit_distance(wl, last_component(k)) + 1);
    // A name that contains what was typed is close whatever its length.
    if (k.find(wl) != std::string::npos) d = std::min<size_t>(d, 1);
    if (d <= std::max<size_t>(2, wl.size() / 3)) scored.emplace_back(d, k);
  }
  std::sort(scored.begin(), scored.end());
  scored.erase(std::unique(scored.begin(), scored.end()), scored.end());
  std::vector<std::string> out;
  for (const auto &s : scored) {
    if (out.size() == limit) break;
    if (std::find(out.begin(), out.end(), s.second) == out.end()) out.push_back(s.second);
  }
  return out;
}

std::string some_names(const std::vector<std::string> &names, size_t shown) {
  if (names.size() <= shown + 1) {  // "and 1 more" would save nothing
    std::string out;
    for (const auto &n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  }
  std::string out;
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  return out + " and " + std::to_string(names.size() - shown) + " more";
}

}  // namespace vprof::instr
