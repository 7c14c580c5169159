// A throw-away source tree with a compile_commands.json, for instrumenter tests.
#ifndef VPROF_TESTS_INSTRUMENTER_TEST_TREE_H
#define VPROF_TESTS_INSTRUMENTER_TEST_TREE_H

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace vprof::test {

inline std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void spit(const std::string &path, const std::string &text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream out(path, std::ios::binary);
  out << text;
}

class TestTree {
 public:
  TestTree() {
    char tmpl[] = "/tmp/vprof-itest-XXXXXX";
    root_ = mkdtemp(tmpl);
    std::filesystem::create_directories(src() );
    std::filesystem::create_directories(build());
  }
  ~TestTree() {
    if (!getenv("VPROF_KEEP_TEST_TREES")) std::filesystem::remove_all(root_);
  }
  std::string src() const { return root_ + "/src"; }
  std::string build() const { return root_ + "/build"; }
  std::string root() const { return root_; }
  std::string path(const std::string &rel) const { return src() + "/" + rel; }

  void add(const std::string &rel, const std::string &text) { spit(path(rel), text); }
  // One compile_commands.json entry; `flags` like "-std=c99".
  void compile(const std::string &rel, const std::string &flags) {
    bool c = rel.size() > 2 && rel.substr(rel.size() - 2) == ".c";
    std::string cmd = std::string(c ? "cc" : "c++") + " " + flags + " -c " + rel + " -o " + rel + ".o";
    db_.push_back({{"directory", src()}, {"file", rel}, {"command", cmd}});
    spit(build() + "/compile_commands.json", db_.dump(2));
  }
  // As bear writes them: "file" absolute, the argument relative.
  void compile_bear_style(const std::string &rel, const std::string &flags) {
    nlohmann::json args = nlohmann::json::array({"/usr/bin/gcc"});
    std::istringstream in(flags);
    for (std::string w; in >> w;) args.push_back(w);
    for (const char *a : {"-c", "-o"}) args.push_back(a);
    args.push_back(rel + ".o");
    args.push_back(rel);
    db_.push_back({{"directory", src()}, {"file", path(rel)}, {"arguments", args}});
    spit(build() + "/compile_commands.json", db_.dump(2));
  }
  void add_raw_entry(const nlohmann::json &e) {
    db_.push_back(e);
    spit(build() + "/compile_commands.json", db_.dump(2));
  }

 private:
  std::string root_;
  nlohmann::json db_ = nlohmann::json::array();
};

// Runs a shell command; returns its exit status and stdout.
inline int shell(const std::string &cmd, std::string *out = nullptr) {
  std::string full = cmd + " 2>&1";
  FILE *p = popen(full.c_str(), "r");
  if (!p) return -1;
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  int st = pclose(p);
  if (out) *out = text;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace vprof::test

#endif
