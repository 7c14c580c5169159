// Every JSON file vprof reads back refuses a newer
// schema_version (or one that is not a version) with one line naming the file
// and both versions, and still reads the version it writes.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "analyzer/names/names.h"
#include "common/schema.h"
#include "instrumenter/journal.h"
#include "instrumenter/sync_pack.h"
#include "iterate/config.h"
#include "iterate/state.h"

namespace fs = std::filesystem;
using namespace vprof;

namespace {

struct Reader {
  const char *name;
  schema::File file;
  const char *file_name;  // where the reader looks inside the test directory
  std::string body;       // the file's other fields, valid for the reader
  std::function<std::string(const std::string &dir)> read;  // "" when it read the file
};

template <class E>
std::string error_of(const E &e) {
  return e ? "" : e.error().message;
}

std::vector<Reader> readers() {
  return {
      {"manifest", schema::kManifest, "manifest.json", R"("functions": [], "call_sites": [])",
       [](const std::string &d) { return error_of(analyzer::load_manifest(d + "/manifest.json")); }},
      {"callgraph", schema::kCallGraph, "callgraph.json", R"("root": "main", "height": 0, "functions": [])",
       [](const std::string &d) { return error_of(analyzer::load_callgraph(d + "/callgraph.json")); }},
      {"state", schema::kSessionState, "state.json",
       R"("broken_down": [], "iterations": [], "decisions": [], "pending": [], "done": false)",
       [](const std::string &d) { return error_of(iterate::load_state(d + "/state.json")); }},
      {"config", schema::kSessionConfig, "config.json",
       R"("root": "/tmp", "build_command": "true", "run_command": "true")",
       [](const std::string &d) { return error_of(iterate::load_config(d + "/config.json")); }},
      {"journal", schema::kJournal, "state.json", R"("pending": false, "files": [])",
       [](const std::string &d) { return error_of(instr::read_journal(d)); }},
      {"sync_pack", schema::kSyncPack, "pack.json", R"("name": "p", "functions": [])",
       [](const std::string &d) {
         instr::SyncRules rules;
         Status s = instr::load_sync_pack(d + "/pack.json", d, rules);
         return s ? std::string() : s.message();
       }},
  };
}

class Schema : public ::testing::TestWithParam<size_t> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vprof-schema-" + std::to_string(getpid()) + "-" +
                                        std::to_string(GetParam()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const Reader &r, const std::string &version) {
    std::string path = (dir_ / r.file_name).string();
    std::ofstream(path) << "{" << (version.empty() ? "" : "\"schema_version\": " + version + ", ") << r.body
                        << "}\n";
    return path;
  }
  fs::path dir_;
};

TEST_P(Schema, ReadsEveryVersionUpToItsOwn) {
  const Reader r = readers()[GetParam()];
  write(r, "");
  EXPECT_EQ(r.read(dir_.string()), "") << "no schema_version: version 1";
  for (int v = 1; v <= r.file.version; ++v) {
    write(r, std::to_string(v));
    EXPECT_EQ(r.read(dir_.string()), "") << "version " << v;
  }
}

TEST_P(Schema, RefusesANewerVersionNamingFileAndBoth) {
  const Reader r = readers()[GetParam()];
  std::string path = write(r, std::to_string(r.file.version + 1));
  std::string err = r.read(dir_.string());
  EXPECT_EQ(err, path + ": the " + r.file.what + " is schema_version " + std::to_string(r.file.version + 1) +
                     ", newer than this vprof reads (" + std::to_string(r.file.version) + "); use a newer vprof");
}

TEST_P(Schema, RefusesAVersionThatIsNotOne) {
  const Reader r = readers()[GetParam()];
  for (const char *bad : {"\"2\"", "0", "-1", "1.5"}) {
    std::string path = write(r, bad);
    std::string err = r.read(dir_.string());
    EXPECT_EQ(err.rfind(path + ": the " + r.file.what + "'s schema_version " + bad + " is not a version", 0), 0u)
        << bad << ": " << err;
  }
}

INSTANTIATE_TEST_SUITE_P(Files, Schema, ::testing::Range<size_t>(0, 6),
                         [](const ::testing::TestParamInfo<size_t> &i) { return readers()[i.param].name; });

}  // namespace

// A session's progress is one phase per iteration, saved by name; a state
// saved before the phase (two booleans) reads as the same phases.
TEST(SessionState, AnIterationsPhaseIsSavedAndReadBackAndOldStatesReadAsPhases) {
  const fs::path dir = fs::temp_directory_path() / ("vprof-phase-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "state.json").string();
  iterate::State s;
  s.iterations.push_back({1, {"main"}, "/t/1", iterate::Phase::Decided, ""});
  s.iterations.push_back({2, {"main", "f"}, "/t/2", iterate::Phase::Ran, ""});
  s.iterations.push_back({3, {"main", "g"}, "/t/3", iterate::Phase::Planned, "build"});
  ASSERT_TRUE(iterate::save_state(s, path));
  auto back = iterate::load_state(path);
  ASSERT_TRUE(back) << back.error().message;
  ASSERT_EQ(back->iterations.size(), 3u);
  EXPECT_EQ(back->iterations[0].phase, iterate::Phase::Decided);
  EXPECT_EQ(back->iterations[1].phase, iterate::Phase::Ran);
  EXPECT_EQ(back->iterations[2].phase, iterate::Phase::Planned);
  EXPECT_EQ(back->iterations[2].failed, "build");

  const std::string old = R"({"broken_down": [], "decisions": [], "pending": [], "done": false, "iterations": [
    {"number": 1, "instrumented": ["main"], "trace_dir": "/t/1", "analyzed": true},
    {"number": 2, "instrumented": ["main"], "trace_dir": "/t/2", "analyzed": true, "decided": false},
    {"number": 3, "instrumented": ["main"], "trace_dir": "/t/3", "analyzed": false, "decided": false,
     "failed": "run"}]})";
  std::ofstream(path, std::ios::trunc) << old;
  auto read = iterate::load_state(path);
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->iterations[0].phase, iterate::Phase::Decided) << "kept before 'decided' was: done";
  EXPECT_EQ(read->iterations[1].phase, iterate::Phase::Ran);
  EXPECT_EQ(read->iterations[2].phase, iterate::Phase::Planned);

  std::ofstream(path, std::ios::trunc) << R"({"broken_down": [], "decisions": [], "pending": [], "done": false,
    "iterations": [{"number": 1, "instrumented": ["main"], "trace_dir": "/t/1", "phase": "built"}]})";
  auto bad = iterate::load_state(path);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("iteration phase 'built'"), std::string::npos) << bad.error().message;
  fs::remove_all(dir);
}
