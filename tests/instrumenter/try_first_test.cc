// An uncontended acquire costs no timestamp. A sync pack's
// acquire with a `try` (pthread_mutex_lock: pthread_mutex_trylock) is tried
// first; only when that fails is the call made and timed. A contended
// acquire is still a wait that names its waker; uncontended ones record
// nothing (as a wait shorter than VPROF_MIN_WAIT_NS was taken back before);
// with VPROF_MIN_WAIT_NS=0 every acquire is made as written and recorded.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "analyzer/read/trace_reader.h"
#include "instrumenter/instrument.h"
#include "test_tree.h"

namespace fs = std::filesystem;
using vprof::test::shell;
using vprof::test::slurp;

namespace {

// The program holds the lock in a thread for 50 ms while main waits for it
// once (its waker: that thread), then takes it 1000 times uncontended.
const char *kC =
    "#include <pthread.h>\n#include <stdio.h>\n#include <time.h>\n"
    "static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;\n"
    "static volatile int held = 0;\n"
    "static void *holder(void *a) { (void)a; pthread_mutex_lock(&mu); held = 1;\n"
    "  struct timespec d = {0, 50000000}; nanosleep(&d, 0); pthread_mutex_unlock(&mu); return 0; }\n"
    "int main(void) { pthread_t t; int n = 0; pthread_create(&t, 0, holder, 0);\n"
    "  while (!held) {}\n"
    "  if (pthread_mutex_lock(&mu) == 0) n++; pthread_mutex_unlock(&mu);\n"
    "  for (int i = 0; i < 1000; i++) { if (pthread_mutex_lock(&mu) == 0) n++; pthread_mutex_unlock(&mu); }\n"
    "  pthread_join(t, 0); printf(\"%d\\n\", n); return 0; }\n";

const char *kCxx =
    "#include <chrono>\n#include <cstdio>\n#include <mutex>\n#include <thread>\n#include <atomic>\n"
    "std::mutex mu; std::atomic<int> held{0};\n"
    "int main() { int n = 0;\n"
    "  std::thread t([] { mu.lock(); held = 1; std::this_thread::sleep_for(std::chrono::milliseconds(50)); "
    "mu.unlock(); });\n"
    "  while (!held) {}\n"
    "  mu.lock(); n++; mu.unlock();\n"
    "  for (int i = 0; i < 1000; i++) { mu.lock(); n++; mu.unlock(); }\n"
    "  t.join(); std::printf(\"%d\\n\", n); }\n";

struct Waits {
  int begins = 0, named = 0;
};

// `file` of `text` instrumented with `pack`, built by `cc`, run with `env`:
// the waits its trace holds, and how many name their waker.
Waits run(const std::string &file, const char *text, const std::string &flags, const std::string &pack,
          const std::string &cc, const std::string &env) {
  vprof::test::TestTree t;
  t.add(file, text);
  t.compile(file, flags);
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.sync_packs = {pack};
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  auto r = vprof::instr::instrument(o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  const std::string src = slurp(t.path(file));
  EXPECT_NE(src.find("vprof_rt_every_wait"), std::string::npos) << src;
  std::string out;
  EXPECT_EQ(shell(cc + " " + flags + " -pthread -I" VPROF_INCLUDE_DIR " " + t.path(file) + " -o " + t.root() +
                      "/prog -L" VPROF_LIB_DIR " -Wl,-rpath," VPROF_LIB_DIR " -lvprof",
                  &out),
            0)
      << out << src;
  const std::string trace = t.root() + "/trace";
  fs::create_directories(trace);
  EXPECT_EQ(shell(env + " VPROF_TRACE_DIR=" + trace + " " + t.root() + "/prog", &out), 0) << out;
  EXPECT_EQ(out, "1001\n");
  Waits w;
  auto tr = vprof::trace::read_trace_dir(trace);
  EXPECT_TRUE(tr.ok()) << tr.error().message;
  if (!tr.ok()) return w;
  for (const auto &th : tr->threads)
    for (const auto &e : th.events) {
      if (e.kind == vprof::trace::Kind::WaitBegin) ++w.begins;
      if (e.kind == vprof::trace::Kind::WaitEnd && e.waker_tid != 0 && e.waker_tid != th.tid) ++w.named;
    }
  return w;
}

}  // namespace

TEST(TryFirst, AnUncontendedPthreadAcquireRecordsNothingAContendedOneItsWait) {
  for (const std::string cc : {TEST_GCC, TEST_CC}) {
    Waits w = run("m.c", kC, "-std=c99 -D_POSIX_C_SOURCE=200809L", "pthreads", cc, "");
    EXPECT_EQ(w.begins, 1) << cc << ": only the contended acquire waits";
    EXPECT_EQ(w.named, 1) << cc << ": and it names the holder";
    Waits all = run("m.c", kC, "-std=c99 -D_POSIX_C_SOURCE=200809L", "pthreads", cc, "VPROF_MIN_WAIT_NS=0");
    EXPECT_GE(all.begins, 1002) << cc << ": every acquire, as written (the holder's too)";
    EXPECT_GE(all.named, 1) << cc;
  }
}

TEST(TryFirst, AnUncontendedStdMutexLockRecordsNothingAContendedOneItsWait) {
  for (const std::string cxx : {TEST_GXX, TEST_CXX}) {
    Waits w = run("m.cc", kCxx, "-std=c++17", "stdcxx", cxx, "");
    EXPECT_EQ(w.begins, 1) << cxx;
    EXPECT_EQ(w.named, 1) << cxx;
    Waits all = run("m.cc", kCxx, "-std=c++17", "stdcxx", cxx, "VPROF_MIN_WAIT_NS=0");
    EXPECT_GE(all.begins, 1002) << cxx;
  }
}
