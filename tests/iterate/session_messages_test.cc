// What a session says around a failed build. On Redis the
// failure line showed the build log's last 15 lines (warnings, not the
// error); the resumed session said "after 1 iterations" when none was done;
// "in 31 files" counted the files a sync pack rewrote as if they held
// instrumented functions; and a call through a pointer's 254 targets made
// 4 KB progress lines. The target here is never built: its build command
// fails at once (a script that prints what a failing make prints), so each
// test instruments, fails and restores in a second or two.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "iterate/config.h"
#include "iterate/session.h"
#include "iterate/state.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
using namespace vprof::iterate;

namespace {

std::string slurp(const std::string &p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const int kLeaves = 30;

// main.c: the root `handle`, which takes a lock and calls f0..f29; other.c:
// a lock and an unlock, in no function the session instruments. A compile db
// by hand (no configure step); build.sh prints a warning, the error, 20 more
// warnings and make's summary, and fails.
Config make_target(const std::string &name) {
  fs::path dir = vprof::testing::fresh_dir("vprof-msg", name);
  std::string main_c = "#include <pthread.h>\nstatic pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;\n";
  for (int i = 0; i < kLeaves; ++i)
    main_c += "int f" + std::to_string(i) + "(int x) { return x + " + std::to_string(i) + "; }\n";
  main_c += "int handle(int x) {\n  int v = 0;\n  pthread_mutex_lock(&mu);\n";
  for (int i = 0; i < kLeaves; ++i) main_c += "  v += f" + std::to_string(i) + "(x);\n";
  main_c += "  pthread_mutex_unlock(&mu);\n  return v;\n}\n";
  std::ofstream(dir / "main.c") << main_c;
  std::ofstream(dir / "other.c") << "#include <pthread.h>\nstatic pthread_mutex_t m2 = PTHREAD_MUTEX_INITIALIZER;\n"
                                    "void touch(void) { pthread_mutex_lock(&m2); pthread_mutex_unlock(&m2); }\n";
  fs::create_directories(dir / "b");
  nlohmann::json db = nlohmann::json::array();
  for (const char *f : {"main.c", "other.c"})
    db.push_back({{"directory", dir.string()},
                  {"file", f},
                  {"command", std::string("cc -std=c99 -c ") + f + " -o b/" + f + ".o"}});
  std::ofstream(dir / "b" / "compile_commands.json") << db.dump(2);
  std::ofstream(dir / "build.sh") << "echo 'main.c:1:1: warning: implicit declaration of function unsetenv'\n"
                                     "echo 'x.c:3:5: error: boom' >&2\n"
                                     "i=0; while [ $i -lt 20 ]; do\n"
                                     "  echo \"y.c:$i:1: warning: implicit declaration of function unsetenv\"\n"
                                     "  i=$((i + 1))\n"
                                     "done\n"
                                     "echo 'make: *** [Makefile:10: all] Error 1'\n"
                                     "exit 1\n";
  Config c;
  c.path = (dir / "vprof.json").string();
  c.dir = dir.string();
  c.root = "handle";
  c.build_dir = "b";
  c.build_command = "sh build.sh";
  c.run_command = "true";
  c.sync_packs = {"pthreads"};
  c.sync_everywhere = true;
  return c;
}

SessionOptions options() {
  SessionOptions o;
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.include_dir = VPROF_INCLUDE_DIR;
  return o;
}

struct Logged {
  vprof::Expected<Outcome> out = vprof::Error{"not run"};
  std::vector<std::string> lines;
  bool has(const std::string &what) const {
    return std::any_of(lines.begin(), lines.end(), [&](const std::string &l) { return l.find(what) != std::string::npos; });
  }
  std::string all() const {
    std::string s;
    for (const auto &l : lines) s += l + "\n";
    return s;
  }
};

Logged run(const Config &c) {
  Logged r;
  Hooks h;
  h.log = [&r](const std::string &l) { r.lines.push_back(l); };
  r.out = run_session(c, options(), h);
  return r;
}

}  // namespace

// The failure shows the error, then the last lines, and names the log.
TEST(SessionMessages, AFailedBuildShowsItsFirstErrorThenItsLastLines) {
  Config c = make_target("first-error");
  std::string before = slurp(c.dir + "/main.c");
  Logged r = run(c);
  ASSERT_FALSE(r.out.ok());
  const std::string &m = r.out.error().message;
  std::string log = c.abs(c.session_dir) + "/iter-1/build.log";
  EXPECT_EQ(m.rfind(log + ": the build failed (exit 1); its first error:\n    x.c:3:5: error: boom\n", 0), 0u) << m;
  EXPECT_NE(m.find("and its last lines:\n"), std::string::npos) << m;
  EXPECT_NE(m.find("y.c:19:1: warning"), std::string::npos) << m;
  EXPECT_NE(m.find("make: *** [Makefile:10: all] Error 1"), std::string::npos) << m;
  EXPECT_EQ(m.find("y.c:2:1: warning"), std::string::npos) << "the middle of the log stays in the log:\n" << m;
  EXPECT_EQ(slurp(c.dir + "/main.c"), before) << "restored";
}

// A log with no compiler error says so and shows its last lines.
TEST(SessionMessages, AFailedBuildWithNoErrorLineShowsItsLastLines) {
  Config c = make_target("no-error");
  c.build_command = "echo 'ninja: build stopped: interrupted by user.'; exit 2";
  Logged r = run(c);
  ASSERT_FALSE(r.out.ok());
  EXPECT_NE(r.out.error().message.find(": the build failed (exit 2); no compiler or linker error in its log; its "
                                       "last lines:\n    ninja: build stopped: interrupted by user.\n"),
            std::string::npos)
      << r.out.error().message;
}

// A failed build completed no iteration: the resumed session says so, and
// which iteration it resumes and why (it said "after 1 iterations").
TEST(SessionMessages, AResumedFailedBuildCompletedNothing) {
  Config c = make_target("resume");
  Logged first = run(c);
  ASSERT_FALSE(first.out.ok());
  Logged second = run(c);
  ASSERT_FALSE(second.out.ok());
  EXPECT_TRUE(second.has("resuming the session in " + c.abs(c.session_dir) +
                         " after 0 completed iterations, at iteration 1 (its build failed last time)"))
      << second.all();
  EXPECT_FALSE(second.has("after 1 iterations")) << second.all();
  auto s = load_state(c.abs(c.session_dir) + "/state.json");
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->iterations.size(), 1u) << "the failed iteration is resumed, not followed by another";
  EXPECT_EQ(s->iterations[0].failed, "build");
}

// Files with instrumented functions and files with sync sites alone are
// counted apart (Redis: "in 31 files" for 2 files with functions).
TEST(SessionMessages, FilesWithFunctionsAndFilesWithSyncSitesAloneAreCountedApart) {
  Config c = make_target("counts");
  Logged r = run(c);
  ASSERT_FALSE(r.out.ok());
  EXPECT_TRUE(r.has("iteration 1: 1 function, 32 call sites and 2 sync sites in 1 file; 2 sync sites in 1 more "
                    "file that holds no instrumented function; 2 files changed on disk"))
      << r.all();
}

// 31 functions (as a pointer call's targets make): the progress line names
// a few and says where the whole list is; the file holds every one.
TEST(SessionMessages, ALongInstrumentedListIsShortInTheLogAndWholeInItsFile) {
  Config c = make_target("long-list");
  std::vector<std::string> fns{"handle"};
  for (int i = 0; i < kLeaves; ++i) fns.push_back("f" + std::to_string(i));
  State s;
  s.broken_down.push_back({"handle", {}, 1});
  std::string dir = c.abs(c.session_dir);
  s.iterations.push_back({1, fns, dir + "/iter-1/trace", vprof::iterate::Phase::Planned, ""});
  fs::create_directories(dir);
  ASSERT_TRUE(save_state(s, dir + "/state.json").ok());

  Logged r = run(c);
  ASSERT_FALSE(r.out.ok());
  EXPECT_TRUE(r.has("after 0 completed iterations, at iteration 1 (it was stopped before its run finished)"))
      << r.all();
  std::string list = dir + "/iter-1/instrumented.txt";
  std::string want = "iteration 1: instrumenting 31 functions: handle, f0, f1, f2, f3 and 26 more (all of them: " +
                     list + ")";
  EXPECT_TRUE(r.has(want)) << r.all();
  for (const auto &l : r.lines) EXPECT_LT(l.size(), 120 + dir.size()) << l;
  std::string whole;
  for (const auto &f : fns) whole += f + "\n";
  EXPECT_EQ(slurp(list), whole);
  EXPECT_TRUE(r.has("iteration 1: 31 functions, 32 call sites and 2 sync sites in 1 file;")) << r.all();
}

// How many builds a session made and why, in one line (a big server's
// session is mostly its rebuilds: MariaDB's took 13-25 min each when a
// header's function joined the set). Iterations a resumed session did not
// build itself (no record) are not counted.
TEST(SessionMessages, TheBuildsLineCountsTheBuildsAndNamesTheLongest) {
  State s;
  auto it = [&](int n, std::vector<std::string> fs, int files, double secs) {
    Iteration i;
    i.number = n;
    i.instrumented = std::move(fs);
    i.files_changed = files;
    i.build_seconds = secs;
    s.iterations.push_back(i);
  };
  EXPECT_EQ(builds_summary(s), "");
  it(1, {"root"}, 6, 41);
  EXPECT_EQ(builds_summary(s), "Builds: 1 in 41 s: iteration 1, the first (6 files rewritten, 41 s).");
  it(2, {"root", "a", "b"}, 3, 20);
  it(3, {"root", "b", "c", "d", "e"}, 34, 185);
  it(4, {"root", "c"}, 2, 12);
  EXPECT_EQ(builds_summary(s),
            "Builds: 4 in 4 min 18 s: iteration 1, the first (6 files rewritten, 41 s); 3 as functions joined or left "
            "the build (the longest: iteration 3, 3 joined, 1 left, 34 files rewritten, 3 min 5 s).");
  s.iterations[0].build_seconds = -1;  // built before this session resumed
  EXPECT_NE(builds_summary(s).find("Builds: 3 in 3 min 37 s: iteration 2, the first this session"), std::string::npos)
      << builds_summary(s);
}

// Built ahead (docs/iterate.md, "Build once"): a build's functions are its
// set and those built ahead, and an iteration that ran on an earlier build
// is no build; the line says how many did.
TEST(SessionMessages, TheBuildsLineCountsTheIterationsThatRanOnAnEarlierBuild) {
  State s;
  Iteration first;
  first.number = 1;
  first.instrumented = {"root"};
  first.prebuilt = {"a", "b"};
  first.files_changed = 6;
  first.build_seconds = 41;
  s.iterations.push_back(first);
  Iteration reused;
  reused.number = 2;
  reused.instrumented = {"root", "a"};
  reused.ran_on_build_of = 1;
  s.iterations.push_back(reused);
  EXPECT_EQ(builds_summary(s),
            "Builds: 1 in 41 s: iteration 1, the first (6 files rewritten, 41 s); 1 iteration ran on an earlier build "
            "(its own probes on, the rest dormant).");
  Iteration wider;
  wider.number = 3;
  wider.instrumented = {"root", "a", "c"};
  wider.prebuilt = {"b", "d"};
  wider.files_changed = 2;
  wider.build_seconds = 12;
  s.iterations.push_back(wider);
  reused.number = 4;
  s.iterations.push_back(reused);
  EXPECT_EQ(builds_summary(s),
            "Builds: 2 in 53 s: iteration 1, the first (6 files rewritten, 41 s); 1 as functions joined or left the "
            "build (the longest: iteration 3, 2 joined, 0 left, 2 files rewritten, 12 s); 2 iterations ran on an "
            "earlier build (their own probes on, the rest dormant).");
}
