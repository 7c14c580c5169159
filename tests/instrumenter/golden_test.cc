// Golden rewrites: each golden/<case>/ holds input files, `<file>.expected`
// for every file the instrumenter must change (a file without one must stay
// byte-identical: the "nothing to change" cases), and case.txt:
//   std: -std=c++17          (one run per line: the same case under each standard)
//   function: ns::f          (repeatable)
//   sync: pthreads           (repeatable)
// After instrumenting, `restore` must give back every input byte for byte.
// VPROF_UPDATE_GOLDEN=1 writes the .expected files (review them before committing).
#include <gtest/gtest.h>

#include <regex>

#include <filesystem>

#include "instrumenter/instrument.h"
#include "test_tree.h"

namespace fs = std::filesystem;
using vprof::test::slurp;

namespace {

struct GoldenCase {
  std::string name, std_flag;
  std::vector<std::string> functions, packs;
};

void PrintTo(const GoldenCase &c, std::ostream *os) { *os << c.name << " " << c.std_flag; }

std::vector<GoldenCase> load_cases() {
  std::vector<GoldenCase> out;
  std::vector<fs::path> dirs;
  for (const auto &d : fs::directory_iterator(std::string(TEST_DATA_DIR) + "/golden")) dirs.push_back(d.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto &d : dirs) {
    std::istringstream in(slurp((d / "case.txt").string()));
    std::string line;
    GoldenCase base;
    base.name = d.filename().string();
    std::vector<std::string> stds;
    while (std::getline(in, line)) {
      size_t colon = line.find(": ");
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, colon), value = line.substr(colon + 2);
      if (key == "std") stds.push_back(value);
      if (key == "function") base.functions.push_back(value);
      if (key == "sync") base.packs.push_back(value);
    }
    for (const auto &s : stds) {
      GoldenCase c = base;
      c.std_flag = s;
      out.push_back(c);
    }
  }
  return out;
}

bool is_source(const std::string &f) {
  for (const char *ext : {".c", ".cc", ".cpp"})
    if (f.size() > strlen(ext) && f.compare(f.size() - strlen(ext), strlen(ext), ext) == 0) return true;
  return false;
}

class Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Golden, RewritesExactlyAndRestores) {
  const GoldenCase &c = GetParam();
  fs::path dir = fs::path(TEST_DATA_DIR) / "golden" / c.name;
  vprof::test::TestTree tree;
  std::vector<std::string> inputs;
  for (const auto &f : fs::directory_iterator(dir)) {
    std::string name = f.path().filename().string();
    if (name == "case.txt" || f.path().extension() == ".expected") continue;
    inputs.push_back(name);
    tree.add(name, slurp(f.path().string()));
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto &f : inputs)
    if (is_source(f)) tree.compile(f, c.std_flag + " -I.");
  vprof::instr::InstrumentOptions o;
  o.build_dir = tree.build();
  o.functions = c.functions;
  o.sync_packs = c.packs;
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  for (const auto &f : inputs) {
    std::string expected_path = (dir / (f + ".expected")).string();
    // The manifest's id and path depend on where the tree is (its files are
    // named by absolute path): the expected text has placeholders.
    std::string got = std::regex_replace(slurp(tree.path(f)), std::regex(tree.root()), "TREE");
    // Each file's id (its manifest entry) names its constructor too.
    got = std::regex_replace(got, std::regex("(VPROF_MANIFEST_|vprof_manifest_|vprof_register_manifest\\(\")[0-9a-f]{16}"),
                             "$1FILE_ID");
    if (getenv("VPROF_UPDATE_GOLDEN") && got != slurp((dir / f).string())) vprof::test::spit(expected_path, got);
    std::string want = fs::exists(expected_path) ? slurp(expected_path) : slurp((dir / f).string());
    EXPECT_EQ(got, want) << f << " under " << c.std_flag;
  }
  auto back = vprof::instr::restore({tree.build()});
  ASSERT_TRUE(back.ok()) << back.error().message;
  for (const auto &f : inputs) EXPECT_EQ(slurp(tree.path(f)), slurp((dir / f).string())) << f << " after restore";
}

std::string case_name(const ::testing::TestParamInfo<GoldenCase> &info) {
  std::string s = info.param.name + "_" + info.param.std_flag;
  for (char &ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Cases, Golden, ::testing::ValuesIn(load_cases()), case_name);

}  // namespace
