// Source damage: the journal next to the sources, vprof's marker, the tree
// lock, restore --force, byte order marks, and vprof killed at random
// moments. Each test is named after the behaviour it checks; the comment
// above it says what went wrong before.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <set>
#include <thread>

#include "instrumenter/instrument.h"
#include "instrumenter/journal.h"
#include "instrumenter/tree.h"
#include "test_tree.h"

namespace fs = std::filesystem;
using vprof::test::slurp;
using vprof::test::spit;

namespace {

const char *kWork = "int helper(int x);\nint work(int x) {\n  return helper(x) + 1;\n}\n";
const char *kHelper = "int helper(int x) { return x * 3; }\n";

vprof::instr::InstrumentOptions options(const std::string &build, std::vector<std::string> fns) {
  vprof::instr::InstrumentOptions o;
  o.build_dir = build;
  o.functions = std::move(fns);
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  return o;
}

// Every file below `dir` (the journal excluded) with its bytes.
std::map<std::string, std::string> snapshot(const std::string &dir) {
  std::map<std::string, std::string> out;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && it->path().filename() == ".vprof") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) out[it->path().string()] = slurp(it->path().string());
  }
  return out;
}

// A tree of `n` C files, each defining work<i>() that calls helper<i>().
void make_tree(vprof::test::TestTree &t, int n) {
  for (int i = 0; i < n; ++i) {
    std::string f = "dir" + std::to_string(i % 3) + "/f" + std::to_string(i) + ".c";
    std::string s = std::to_string(i);
    t.add(f, "int helper" + s + "(int x) { return x + " + s + "; }\nint work" + s + "(int x) {\n  return helper" + s +
                 "(x) * 2;\n}\n");
    t.compile(f, "-std=c99");
  }
}

void two_files(vprof::test::TestTree &t) {
  t.add("work.c", kWork);
  t.add("helper.c", kHelper);
  t.compile("work.c", "-std=c99");
  t.compile("helper.c", "-std=c99");
}

std::string run_cmd(const std::string &cmd, int *rc) {
  std::string out;
  *rc = vprof::test::shell(cmd, &out);
  return out;
}

std::string clang_bin() { return VPROF_CLANG_BIN; }

}  // namespace

// The originals lived only in BUILD_DIR/.vprof; after `rm -rf build`
// and a reconfigure, restore reported success and did nothing.
TEST(TreeSafety, RestoreFindsTheOriginalsAfterTheBuildDirIsRemovedAndReconfigured) {
  vprof::test::TestTree t;
  two_files(t);
  auto pristine = snapshot(t.src());
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work", "helper"})).ok());
  EXPECT_TRUE(fs::exists(t.src() + "/.vprof/state.json"));
  std::string db = slurp(t.build() + "/compile_commands.json");
  fs::remove_all(t.build());
  spit(t.build() + "/compile_commands.json", db);  // "reconfigured"
  auto back = vprof::instr::restore({t.build()});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->files_restored, 2u);
  EXPECT_EQ(snapshot(t.src()), pristine);
  EXPECT_FALSE(fs::exists(t.src() + "/.vprof")) << "a restored tree keeps nothing of vprof's";
}

// With the build directory gone for good, restore from the sources.
TEST(TreeSafety, RestoreRunsFromTheSourceTreeWhenTheBuildDirIsGone) {
  vprof::test::TestTree t;
  t.add("a/work.c", kWork);
  t.compile("a/work.c", "-std=c99");
  auto pristine = snapshot(t.src());
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  fs::remove_all(t.build());
  auto gone = vprof::instr::restore({t.build()});
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("run `vprof restore` in the source tree"), std::string::npos)
      << gone.error().message;
  auto back = vprof::instr::restore({t.src() + "/a"});  // any directory of the tree
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->files_restored, 1u);
  EXPECT_EQ(snapshot(t.src()), pristine);
}

// A second build directory of the same tree doubled the probes
// (`redeclaration of vprof_fn_`).
TEST(TreeSafety, SecondBuildDirDoesNotDoubleTheProbes) {
  vprof::test::TestTree t;
  t.add("work.c", kWork);
  t.compile("work.c", "-std=c99");
  auto pristine = snapshot(t.src());
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  std::string once = slurp(t.path("work.c"));
  std::string build2 = t.root() + "/build2";
  spit(build2 + "/compile_commands.json", slurp(t.build() + "/compile_commands.json"));
  auto again = vprof::instr::instrument(options(build2, {"work"}));
  ASSERT_TRUE(again.ok()) << again.error().message;
  // The same text, registering build2's manifest this time.
  std::string twice = slurp(t.path("work.c"));
  size_t at = once.find(t.build() + "/.vprof/manifest.json");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(twice, once.substr(0, at) + build2 + once.substr(at + t.build().size()));
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
  EXPECT_EQ(snapshot(t.src()), pristine);
}

// Markers: a file carrying vprof's marker that no journal lists is
// refused by instrument, and restore finds it from the marker alone.
TEST(TreeSafety, MarkedFileWithNoJournalIsRefusedThenRestoredFromItsMarker) {
  vprof::test::TestTree t;
  t.add("work.c", kWork);
  t.compile("work.c", "-std=c99");
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  std::string instrumented = slurp(t.path("work.c"));
  auto sum = vprof::instr::marker_sha1(instrumented);
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(*sum, vprof::instr::sha1_hex(kWork));
  fs::remove(t.src() + "/.vprof/state.json");  // the journal is lost; the originals are not
  auto r = vprof::instr::instrument(options(t.build(), {"work"}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("work.c: already instrumented by vprof"), std::string::npos) << r.error().message;
  EXPECT_EQ(slurp(t.path("work.c")), instrumented);
  auto back = vprof::instr::restore({t.build()});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->files_restored, 1u);
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
}

// Two `instrument` runs at once left files no state records. One vprof
// holds the tree; another process is refused, naming the holder, and changes nothing.
TEST(TreeSafety, SecondVprofIsRefusedWhileTheTreeIsLocked) {
  vprof::test::TestTree t;
  t.add("work.c", kWork);
  t.compile("work.c", "-std=c99");
  auto place = vprof::instr::locate_tree(t.build(), "");
  ASSERT_TRUE(place.ok()) << place.error().message;
  {
    auto lock = vprof::instr::TreeLock::acquire(place->journal_dir);
    ASSERT_TRUE(lock.ok()) << lock.error().message;
    int rc = 0;
    std::string out = run_cmd(clang_bin() + " instrument -q -p " + t.build() + " --function work", &rc);
    EXPECT_EQ(rc, 2) << out;
    EXPECT_NE(out.find("another vprof (pid " + std::to_string(getpid()) + ")"), std::string::npos) << out;
    EXPECT_EQ(slurp(t.path("work.c")), kWork);
    out = run_cmd(clang_bin() + " restore -p " + t.build(), &rc);
    EXPECT_EQ(rc, 2) << out;
  }
  EXPECT_FALSE(fs::exists(place->journal_dir)) << "an unused lock leaves nothing behind";
}

// The lock, for real: two instrument processes started together, five times.
// Whatever the interleaving, the journal covers every rewritten file.
TEST(TreeSafety, TwoInstrumentsAtOnceLeaveNoUnjournaledFile) {
  vprof::test::TestTree t;
  make_tree(t, 6);
  auto pristine = snapshot(t.src());
  for (int round = 0; round < 5; ++round) {
    std::string a = clang_bin() + " instrument -q -p " + t.build() + " --function work1 --function work4";
    std::string b = clang_bin() + " instrument -q -p " + t.build() + " --function work2 --function work5";
    int rc = 0;
    std::string out = run_cmd("(" + a + " & " + b + " & wait)", &rc);
    auto j = vprof::instr::read_journal(t.src() + "/.vprof");
    ASSERT_TRUE(j.ok()) << j.error().message;
    std::set<std::string> listed;
    for (const auto &f : j->files) listed.insert(f.path);
    for (const auto &[path, text] : snapshot(t.src()))
      if (text != pristine[path]) EXPECT_TRUE(listed.count(path)) << path << " is rewritten but not journaled\n" << out;
    auto back = vprof::instr::restore({t.build()});
    ASSERT_TRUE(back.ok()) << back.error().message;
    ASSERT_EQ(snapshot(t.src()), pristine);
  }
}

// With .vprof made read-only, restore said `restored 1 files` without
// updating its state, and every later command failed.
TEST(TreeSafety, ReadOnlyJournalMakesRestoreFailAndChangeNothing) {
  vprof::test::TestTree t;
  two_files(t);
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work", "helper"})).ok());
  auto before = snapshot(t.src());
  std::string dir = t.src() + "/.vprof";
  std::string state = slurp(dir + "/state.json");
  // As root, mode bits do not stop a write; the immutable attribute does.
  if (vprof::test::shell("chattr +i " + dir) != 0) GTEST_SKIP() << "chattr +i is not supported here";
  auto r = vprof::instr::restore({t.build()});
  vprof::test::shell("chattr -i " + dir);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nothing was changed"), std::string::npos) << r.error().message;
  EXPECT_EQ(snapshot(t.src()), before);
  EXPECT_EQ(slurp(dir + "/state.json"), state);
  auto back = vprof::instr::restore({t.build()});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
  EXPECT_EQ(slurp(t.path("helper.c")), kHelper);
}

// MariaDB: a tree built and profiled as another user (nobody),
// instrumented and restored once by root: the restored file was root's, and
// the owner's next session stopped on "sux_lock.h: not writable". Instrument
// and restore keep each file's owner, group and mode.
TEST(TreeSafety, InstrumentAndRestoreAsRootKeepTheFilesOwner) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (to give a file to another user)";
  vprof::test::TestTree t;
  two_files(t);
  const std::string work = t.path("work.c");
  ASSERT_EQ(chown(work.c_str(), 65534, 65534), 0);
  ASSERT_EQ(chmod(work.c_str(), 0640), 0);
  auto owner = [&] {
    struct stat st {};
    EXPECT_EQ(stat(work.c_str(), &st), 0);
    return std::make_tuple(st.st_uid, st.st_gid, st.st_mode & 07777);
  };
  const auto before = owner();
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  EXPECT_NE(slurp(work), kWork);
  EXPECT_EQ(owner(), before) << "instrumented";
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
  EXPECT_EQ(slurp(work), kWork);
  EXPECT_EQ(owner(), before) << "restored";
}

// The preamble went before a UTF-8 byte order mark, and the file no
// longer compiled.
TEST(TreeSafety, ByteOrderMarkStaysFirstAndTheFileCompiles) {
  vprof::test::TestTree t;
  std::string bom_work = std::string("\xEF\xBB\xBF") + kWork;
  t.add("work.c", bom_work);
  t.add("helper.c", kHelper);
  t.compile("work.c", "-std=c99");
  t.compile("helper.c", "-std=c99");
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  std::string text = slurp(t.path("work.c"));
  ASSERT_EQ(text.compare(0, 3, "\xEF\xBB\xBF"), 0);
  EXPECT_EQ(vprof::instr::marker_sha1(text), vprof::instr::sha1_hex(bom_work));
  std::string out;
  int rc = vprof::test::shell(std::string(TEST_GCC) + " -std=c99 -Werror -c -I" VPROF_INCLUDE_DIR " " +
                                  t.path("work.c") + " -o " + t.root() + "/work.o",
                              &out);
  EXPECT_EQ(rc, 0) << out;
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
  EXPECT_EQ(slurp(t.path("work.c")), bom_work);
}

// A build whose runs may leave probes dormant (an iterate session's build
// ahead) starts each file with the dormant probes' header: vprof knows the
// marker, the file compiles warning-free as C99, and restore puts the
// original back.
TEST(TreeSafety, AFileRewrittenForDormantProbesCarriesAMarkerRestoreKnows) {
  vprof::test::TestTree t;
  t.add("work.c", kWork);
  t.add("helper.c", kHelper);
  t.compile("work.c", "-std=c99");
  t.compile("helper.c", "-std=c99");
  auto o = options(t.build(), {"work"});
  o.dormant = true;
  ASSERT_TRUE(vprof::instr::instrument(o).ok());
  std::string text = slurp(t.path("work.c"));
  EXPECT_EQ(text.rfind("#include <vprof/dormant_probes.h> /* vprof instrument, original sha1 ", 0), 0u) << text;
  EXPECT_EQ(vprof::instr::marker_sha1(text), vprof::instr::sha1_hex(kWork));
  std::string out;
  int rc = vprof::test::shell(std::string(TEST_GCC) + " -std=c99 -Wall -Wdeclaration-after-statement -Werror -c -I" +
                                  VPROF_INCLUDE_DIR + " " + t.path("work.c") + " -o " + t.root() + "/work.o",
                              &out);
  EXPECT_EQ(rc, 0) << out;
  auto back = vprof::instr::restore({t.build()});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
}

// Restore where vprof never wrote anything said `restored 0 files`.
// It says there was nothing to restore; as the tree is as a restore leaves
// it, that is exit 0 (a script's cleanup ran restore twice and
// failed on the second). A directory with no tree at all is still an error.
TEST(TreeSafety, RestoreOfAnUntouchedTreeSaysSoAndSucceeds) {
  vprof::test::TestTree t;
  t.add("work.c", kWork);
  t.compile("work.c", "-std=c99");
  auto r = vprof::instr::restore({t.build()});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->found_nothing);
  int rc = 0;
  std::string out = run_cmd(clang_bin() + " restore -p " + t.build(), &rc);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("nothing to restore"), std::string::npos) << out;
  EXPECT_NE(out.find("the tree is as it was"), std::string::npos) << out;
  out = run_cmd(clang_bin() + " restore -p " + t.root(), &rc);  // no compile db, no journal: the wrong -p
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("nothing vprof made is here"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(t.src() + "/.vprof"));
}

// A hand-edited instrumented file blocked every restore; --force
// restores the others and reports it.
TEST(TreeSafety, ForceRestoresTheOthersAndReportsTheEditedFile) {
  vprof::test::TestTree t;
  two_files(t);
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work", "helper"})).ok());
  std::string edited = slurp(t.path("work.c")) + "/* user edit */\n";
  spit(t.path("work.c"), edited);
  auto plain = vprof::instr::restore({t.build()});
  ASSERT_FALSE(plain.ok());
  EXPECT_NE(plain.error().message.find("--force"), std::string::npos) << plain.error().message;
  EXPECT_NE(slurp(t.path("helper.c")), kHelper) << "without --force nothing changes";
  int rc = 0;
  std::string out = run_cmd(clang_bin() + " restore --force -p " + t.build(), &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("not restored: " + t.path("work.c")), std::string::npos) << out;
  EXPECT_EQ(slurp(t.path("helper.c")), kHelper);
  EXPECT_EQ(slurp(t.path("work.c")), edited);
  // The journal still knows the edited file and keeps its original.
  auto j = vprof::instr::read_journal(t.src() + "/.vprof");
  ASSERT_TRUE(j.ok());
  ASSERT_EQ(j->files.size(), 1u);
  EXPECT_EQ(slurp(t.src() + "/.vprof/originals/" + j->files[0].original_sha1), kWork);
}

// An interrupted commit leaves a pending journal: the next restore finishes the
// job from any mix of original, old and new texts, and removes stray temporaries.
TEST(TreeSafety, PendingJournalFromAnyMixOfTextsIsRestored) {
  vprof::test::TestTree t;
  make_tree(t, 4);
  auto pristine = snapshot(t.src());
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work0", "work1"})).ok());
  auto old_texts = snapshot(t.src());
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work1", "work2", "work3"})).ok());
  auto j = vprof::instr::read_journal(t.src() + "/.vprof");
  ASSERT_TRUE(j.ok());
  // What a kill between steps 3 and 5 leaves: a pending union, each file in
  // some state, a temporary beside one.
  vprof::instr::Journal pending = *j;
  pending.pending = true;
  for (auto &f : pending.files)
    if (old_texts[f.path] != pristine[f.path]) f.ours.push_back(vprof::instr::sha1_hex(old_texts[f.path]));
  std::string f0 = t.path("dir0/f0.c");
  pending.files.push_back({f0, vprof::instr::sha1_hex(pristine[f0]), {vprof::instr::sha1_hex(old_texts[f0])}});
  // The old state's originals stay until the final state is written.
  spit(t.src() + "/.vprof/originals/" + vprof::instr::sha1_hex(pristine[f0]), pristine[f0]);
  spit(f0, old_texts[f0]);                                // still the old text
  spit(t.path("dir2/f2.c"), pristine[t.path("dir2/f2.c")]);  // already the original
  spit(t.path("dir1/f1.c") + ".vprof-tmp", "half a fi");
  nlohmann::json files = nlohmann::json::array();
  for (const auto &f : pending.files) files.push_back({{"path", f.path}, {"original_sha1", f.original_sha1}, {"ours", f.ours}});
  spit(t.src() + "/.vprof/state.json", nlohmann::json{{"schema_version", 2}, {"pending", true}, {"files", files}}.dump());
  auto back = vprof::instr::restore({t.build()});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(snapshot(t.src()), pristine);
  EXPECT_FALSE(fs::exists(t.src() + "/.vprof"));
}

namespace {

// The journal's first write of a commit: an original added, or state.json
// written (it is replaced by rename, so its inode changes).
struct JournalWatch {
  std::string dir;
  struct stat originals {}, state {};
  bool had_originals, had_state;
  explicit JournalWatch(std::string d) : dir(std::move(d)) {
    had_originals = stat((dir + "/originals").c_str(), &originals) == 0;
    had_state = stat((dir + "/state.json").c_str(), &state) == 0;
  }
  bool changed() const {
    struct stat o {}, s {};
    bool ho = stat((dir + "/originals").c_str(), &o) == 0;
    bool hs = stat((dir + "/state.json").c_str(), &s) == 0;
    if (ho != had_originals || hs != had_state) return ho || hs;
    return (ho && (o.st_mtim.tv_nsec != originals.st_mtim.tv_nsec || o.st_mtim.tv_sec != originals.st_mtim.tv_sec)) ||
           (hs && s.st_ino != state.st_ino);
  }
};

// Starts argv, waits for the journal's first write, then kills the process
// after a random delay of up to `max_delay_us` with `sig`. Returns the exit
// status as a shell would (128 + signal when killed).
int kill_after_first_write(const std::vector<std::string> &argv, const std::string &journal_dir, int sig,
                           int max_delay_us, std::mt19937 &rng) {
  JournalWatch watch(journal_dir);
  pid_t pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    std::vector<char *> a;
    for (const auto &s : argv) a.push_back(const_cast<char *>(s.c_str()));
    a.push_back(nullptr);
    execv(a[0], a.data());
    _exit(127);
  }
  int status = 0;
  while (!watch.changed()) {
    if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, max_delay_us)(rng)));
  kill(pid, sig);
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

// SIGINT/SIGTERM/SIGKILL 0-5 ms after instrument's first write left
// up to 26 of 30 files instrumented, temporaries, no state, and restore said
// `restored 0 files`. Kill instrument (fresh and re-instrumenting) and restore
// at random moments in their write windows: afterwards `restore` makes the
// tree pristine, byte for byte, every time. VPROF_FAULT_ROUNDS sets the count
// (scripts/fault-injection.sh runs 200).
TEST(TreeSafety, KilledAtRandomMomentsTheTreeAlwaysComesBack) {
  int rounds = getenv("VPROF_FAULT_ROUNDS") ? atoi(getenv("VPROF_FAULT_ROUNDS")) : 12;
  unsigned seed = getenv("VPROF_FAULT_SEED") ? static_cast<unsigned>(atoi(getenv("VPROF_FAULT_SEED")))
                                             : std::random_device{}();
  std::mt19937 rng(seed);
  vprof::test::TestTree t;
  make_tree(t, 30);
  auto pristine = snapshot(t.src());
  std::vector<std::string> all_fns, some_fns;
  for (int i = 0; i < 30; ++i) all_fns.push_back("work" + std::to_string(i));
  for (int i = 0; i < 30; i += 2) some_fns.push_back("helper" + std::to_string(i));
  auto cmd = [&](const std::string &verb, const std::vector<std::string> &fns) {
    std::vector<std::string> a = {clang_bin(), verb, "-q", "-p", t.build()};
    if (verb == "restore") a.erase(a.begin() + 2);
    for (const auto &f : fns) {
      a.push_back("--function");
      a.push_back(f);
    }
    return a;
  };
  const int sigs[] = {SIGKILL, SIGINT, SIGTERM};
  int killed = 0;
  for (int round = 0; round < rounds; ++round) {
    int sig = sigs[round % 3];
    int what = std::uniform_int_distribution<int>(0, 2)(rng);
    SCOPED_TRACE("seed " + std::to_string(seed) + " round " + std::to_string(round) + " signal " +
                 std::to_string(sig) + " step " + std::to_string(what));
    if (what >= 1) {  // start from an instrumented tree: re-instrument, or restore
      ASSERT_EQ(vprof::test::shell(clang_bin() + " instrument -q -p " + t.build() + " --function work3 --function work7"), 0);
    }
    std::vector<std::string> argv = what == 2 ? cmd("restore", {}) : cmd("instrument", what == 0 ? all_fns : some_fns);
    // 0-5 ms after the first write, as the defect was first found, or anywhere
    // in the commit's first 60 ms (it fsyncs every file).
    int rc = kill_after_first_write(argv, t.src() + "/.vprof", sig, round % 2 ? 5000 : 60000, rng);
    killed += rc >= 128;
    int rrc = vprof::test::shell(clang_bin() + " restore -p " + t.build());
    // 0: restored; 2 with nothing to restore only when the kill came before any write.
    ASSERT_TRUE(rrc == 0 || rrc == 2) << rrc;
    if (rrc == 2) {
      std::string out;
      vprof::test::shell(clang_bin() + " restore -p " + t.build(), &out);
      ASSERT_NE(out.find("nothing to restore"), std::string::npos) << out;
    }
    ASSERT_EQ(snapshot(t.src()), pristine);
    std::string left;
    if (fs::exists(t.src() + "/.vprof"))
      for (const auto &e : fs::recursive_directory_iterator(t.src() + "/.vprof")) left += " " + e.path().string();
    ASSERT_EQ(left, "") << "restore left vprof's files behind (rc " << rrc << ")";
  }
  std::printf("fault injection: %d rounds, %d killed mid-way (seed %u)\n", rounds, killed, seed);
}

// restore writes only what vprof wrote: a copy of an instrumented file under a
// new name, edited, is the user's file, not one to take back from the marker.
TEST(TreeSafety, RestoreLeavesACopyOfAnInstrumentedFileAlone) {
  vprof::test::TestTree t;
  two_files(t);
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  const std::string copy = slurp(t.path("work.c")) + "int mine(void) { return 7; }\n";
  spit(t.path("copy.c"), copy);
  const std::string renamed = slurp(t.path("work.c")) + "/* moved and edited */\n";
  auto r = vprof::instr::restore({t.build()});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->files_restored, 1u);
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
  EXPECT_EQ(slurp(t.path("copy.c")), copy) << "the copy was overwritten with work.c's original";
  ASSERT_EQ(r->not_ours.size(), 1u);
  EXPECT_NE(r->not_ours[0].find("copy.c: carries vprof's marker, but vprof did not write these bytes"),
            std::string::npos)
      << r->not_ours[0];
  // Renamed and edited, under --force (which leaves hand-changed files as they are).
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  fs::rename(t.path("work.c"), t.path("moved.c"));
  spit(t.path("moved.c"), renamed);
  spit(t.path("work.c"), kWork);
  vprof::instr::RestoreOptions force{t.build()};
  force.force = true;
  force.forget = true;
  auto f = vprof::instr::restore(force);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(slurp(t.path("moved.c")), renamed);
}

// A state.json removed by hand: a file that holds exactly what vprof wrote
// there is still taken back (the written log), an edited one is not.
TEST(TreeSafety, WithoutStateOnlyTextsVprofWroteAreTakenBack) {
  vprof::test::TestTree t;
  two_files(t);
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work", "helper"})).ok());
  fs::remove(t.src() + "/.vprof/state.json");
  const std::string edited = slurp(t.path("helper.c")) + "/* edit */\n";
  spit(t.path("helper.c"), edited);
  auto r = vprof::instr::restore({t.build()});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
  EXPECT_EQ(slurp(t.path("helper.c")), edited);
}

// After `git stash` the files hold their originals though vprof did not put
// them back: restore keeps their journal, so that when `git stash pop` brings
// the instrumented text back, restore still knows it; --forget drops it.
TEST(TreeSafety, FilesBackWithoutVprofKeepTheirJournal) {
  vprof::test::TestTree t;
  two_files(t);
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  const std::string instrumented = slurp(t.path("work.c"));
  spit(t.path("work.c"), kWork);  // git stash
  auto r = vprof::instr::restore({t.build()});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->files_restored, 0u);
  ASSERT_EQ(r->returned.size(), 1u);
  EXPECT_TRUE(fs::exists(t.src() + "/.vprof/state.json")) << "the journal was deleted with the original";
  spit(t.path("work.c"), instrumented);  // git stash pop
  auto back = vprof::instr::restore({t.build()});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->files_restored, 1u);
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
  EXPECT_FALSE(fs::exists(t.src() + "/.vprof")) << "a tree vprof put back keeps nothing of it";
  // --forget: the journal of a file already back goes.
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  spit(t.path("work.c"), kWork);
  vprof::instr::RestoreOptions forget{t.build()};
  forget.forget = true;
  ASSERT_TRUE(vprof::instr::restore(forget).ok());
  EXPECT_FALSE(fs::exists(t.src() + "/.vprof"));
}

// A file vprof wrote and the user then deleted (or a checkout of another
// branch removed) is never made again: restore puts the others back and says
// so, its journal stays unless --forget, and instrument goes on (before,
// restore, --force, --forget and instrument all failed on it).
TEST(TreeSafety, AFileDeletedSinceVprofWroteItIsNotMadeAgainAndStopsNothing) {
  vprof::test::TestTree t;
  two_files(t);
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work", "helper"})).ok());
  const std::string helper = slurp(t.path("helper.c"));
  ASSERT_TRUE(fs::remove(t.path("helper.c")));
  auto r = vprof::instr::restore({t.build()});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->files_restored, 1u);
  ASSERT_EQ(r->gone.size(), 1u);
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
  EXPECT_FALSE(fs::exists(t.path("helper.c"))) << "a deleted file was made again";
  EXPECT_TRUE(fs::exists(t.src() + "/.vprof/state.json")) << "the journal of a gone file was dropped";
  // It comes back as vprof wrote it (a checkout back): restore knows it.
  spit(t.path("helper.c"), helper);
  auto back = vprof::instr::restore({t.build()});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->files_restored, 1u);
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
  EXPECT_FALSE(fs::exists(t.src() + "/.vprof"));
  // Gone again: instrument goes on, and --forget drops what is gone.
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work", "helper"})).ok());
  ASSERT_TRUE(fs::remove(t.path("helper.c")));
  auto again = vprof::instr::instrument(options(t.build(), {"work"}));
  ASSERT_TRUE(again.ok()) << again.error().message;
  vprof::instr::RestoreOptions forget{t.build()};
  forget.forget = true;
  auto f = vprof::instr::restore(forget);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
  EXPECT_FALSE(fs::exists(t.src() + "/.vprof"));
}

// An instrumented file replaced by a symbolic link since (to a copy holding
// vprof's text, here) is no file vprof wrote: restore neither replaces the
// link nor writes through it; --force restores the others and says so.
TEST(TreeSafety, ASymbolicLinkInAnInstrumentedFilesPlaceIsLeftAlone) {
  vprof::test::TestTree t;
  two_files(t);
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work", "helper"})).ok());
  const std::string helper = slurp(t.path("helper.c"));
  spit(t.path("copy.c"), helper);
  ASSERT_TRUE(fs::remove(t.path("helper.c")));
  fs::create_symlink("copy.c", t.path("helper.c"));
  auto r = vprof::instr::restore({t.build()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("helper.c: a symbolic link now, not the file vprof rewrote; nothing was changed"),
            std::string::npos)
      << r.error().message;
  EXPECT_NE(slurp(t.path("work.c")), kWork) << "a failed restore changed the tree";
  vprof::instr::RestoreOptions force{t.build()};
  force.force = true;
  auto f = vprof::instr::restore(force);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
  EXPECT_TRUE(fs::is_symlink(t.path("helper.c"))) << "the link was replaced";
  EXPECT_EQ(slurp(t.path("copy.c")), helper) << "written through the link";
}

// A journal cut short (a disk that filled, a hand edit) changes nothing and
// says the way out; taken aside, restore takes back what vprof wrote from
// the markers and the written log.
TEST(TreeSafety, ADamagedJournalSaysTheWayOutAndItWorks) {
  vprof::test::TestTree t;
  two_files(t);
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  const std::string state = t.src() + "/.vprof/state.json";
  fs::resize_file(state, 50);
  auto r = vprof::instr::restore({t.build()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("damaged"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("Move it aside"), std::string::npos) << r.error().message;
  EXPECT_NE(slurp(t.path("work.c")), kWork) << "a failed restore changed the tree";
  fs::rename(state, state + ".damaged");
  auto again = vprof::instr::restore({t.build()});
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
}

// A source file with another hard link keeps it: rewritten in place, and
// restored in place.
TEST(TreeSafety, AHardLinkedSourceKeepsItsLink) {
  vprof::test::TestTree t;
  two_files(t);
  const std::string other = t.root() + "/work-link.c";
  ASSERT_EQ(link(t.path("work.c").c_str(), other.c_str()), 0);
  auto ino = [](const std::string &p) {
    struct stat st {};
    stat(p.c_str(), &st);
    return st.st_ino;
  };
  const auto before = ino(t.path("work.c"));
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  EXPECT_EQ(ino(t.path("work.c")), before);
  EXPECT_EQ(slurp(other), slurp(t.path("work.c")));
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
  EXPECT_EQ(ino(t.path("work.c")), before);
  EXPECT_EQ(slurp(other), kWork);
}

// Root instruments a tree another user owns: that user can restore it.
TEST(TreeSafety, TheTreesOwnerRestoresWhatRootInstrumented) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (to instrument another user's tree)";
  vprof::test::TestTree t;
  two_files(t);
  ASSERT_EQ(vprof::test::shell("chown -R 65534:65534 " + t.root() + " && chmod 0755 " + t.root()), 0);
  ASSERT_TRUE(vprof::instr::instrument(options(t.build(), {"work"})).ok());
  pid_t child = fork();
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
    auto r = vprof::instr::restore({t.build()});
    _exit(r.ok() ? 0 : 4);
  }
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the owner could not restore";
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
}

// -p naming a file says so.
TEST(TreeSafety, RestoreGivenAFileSaysItIsNotADirectory) {
  vprof::test::TestTree t;
  two_files(t);
  int rc = 0;
  std::string out = run_cmd(clang_bin() + " restore -p " + t.path("work.c"), &rc);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("work.c: not a directory"), std::string::npos) << out;
}

// A source that is a link to another project's file: not the tree's. The
// source root stays the tree's (not the directory the two share), and the
// other project's file is neither rewritten nor restored over.
TEST(TreeSafety, ASourceLinkedFromOutsideTheTreeIsLeftAlone) {
  vprof::test::TestTree t;
  vprof::test::TestTree other;
  two_files(t);
  other.add("shared.c", "int shared(int x) { return x; }\n");
  ASSERT_EQ(symlink(other.path("shared.c").c_str(), t.path("shared.c").c_str()), 0);
  t.compile("shared.c", "-std=c99");
  auto r = vprof::instr::instrument(options(t.build(), {"work"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->outside.size(), 1u);
  EXPECT_NE(r->outside[0].find(other.path("shared.c")), std::string::npos) << r->outside[0];
  EXPECT_FALSE(vprof::instr::instrument(options(t.build(), {"work", "shared"})).ok()) << "not the tree's: no definition";
  EXPECT_EQ(slurp(other.path("shared.c")), "int shared(int x) { return x; }\n") << "the link's target was rewritten";
  EXPECT_TRUE(fs::is_symlink(t.path("shared.c")));
  EXPECT_TRUE(fs::exists(t.src() + "/.vprof/state.json")) << "the journal is not in the tree's own root";
  const std::string edit = "int shared(int x) { return x + 1; }\n";
  spit(other.path("shared.c"), edit);
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
  EXPECT_EQ(slurp(other.path("shared.c")), edit);
  EXPECT_EQ(slurp(t.path("work.c")), kWork);
}
