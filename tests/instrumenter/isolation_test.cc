// What the instrumenter inserts at the top of a file (the
// marker line's #include <vprof/probes.h>, the C++ helpers, the manifest's
// constructor) comes before the file's own feature-test macros. It must not
// change what the file's includes see: probes.h and everything it includes
// name no system header, and the inserted code uses builtin types only.
//
//   FeatureTestMacros:   Redis's shape (fmacros.h defines _GNU_SOURCE and
//       _XOPEN_SOURCE 700 before any include), built with -std=c99 -Werror by
//       clang and gcc: with <stdint.h> in probes.h glibc fixed its feature set
//       first, and siginfo_t and SA_NODEFER were gone.
//   ThirtyTwoBitOffT:    the same file with -m32, where it also asserts a
//       64-bit off_t (_FILE_OFFSET_BITS 64); skipped, saying so, where the
//       compiler cannot build a 32-bit object with libc's headers.
//   NoSystemHeader:      every shape of inserted code (C and C++: function
//       probes, call sites of each value form, sync wrappers and scoped
//       locks) in files that include nothing, compiled with -nostdinc for
//       x86-64, i386, AArch64 and RISC-V (the generic clock path).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "instrumenter/instrument.h"
#include "test_tree.h"

using vprof::test::shell;
using vprof::test::slurp;

namespace {

// Redis's fmacros.h, inlined: feature-test macros first, then the includes.
const char kFeatureSource[] = R"(#define _GNU_SOURCE
#define _XOPEN_SOURCE 700
#define _FILE_OFFSET_BITS 64
#include <signal.h>
#include <string.h>
#include <sys/types.h>

/* _FILE_OFFSET_BITS reached <features.h>: off_t is 64 bits, on a 32-bit build too. */
typedef char off_t_has_64_bits[sizeof(off_t) == 8 ? 1 : -1];

static int caught;

static void on_usr1(int sig, siginfo_t *info, void *ctx) {
  (void)info;
  (void)ctx;
  caught = sig;
}

static int install(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_usr1;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  return sigaction(SIGUSR1, &sa, 0);
}

long work(off_t at) {
  if (install() != 0) return -1;
  return (long)(at / 2) + caught;
}

int main(void) { return work(4) == 2 ? 0 : 1; }
)";

// Builds the tree's file with clang and with gcc (`flags` ends with "-o "):
// the failures with their logs, "" when both built.
std::string build_errors(const vprof::test::TestTree &tree, const std::string &flags, const std::string &out) {
  std::string errors, log;
  for (const char *cc : {TEST_CC, TEST_GCC})
    if (shell("cd " + tree.src() + " && " + cc + flags + out, &log) != 0) errors += std::string(cc) + ":\n" + log;
  return errors;
}

// Instruments `functions` of the tree, with the sync packs named.
vprof::Expected<vprof::instr::InstrumentResult> instrument_tree(const vprof::test::TestTree &tree,
                                                                std::vector<std::string> functions,
                                                                std::vector<std::string> packs) {
  vprof::instr::InstrumentOptions o;
  o.build_dir = tree.build();
  o.functions = std::move(functions);
  o.sync_packs = std::move(packs);
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  return vprof::instr::instrument(o);
}

// Instruments `work` in a tree holding kFeatureSource as feature.c.
void instrument_feature(vprof::test::TestTree &tree) {
  tree.add("feature.c", kFeatureSource);
  tree.compile("feature.c", "-std=c99");
  auto r = instrument_tree(tree, {"work"}, {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->functions, 1u);
  ASSERT_GE(r->call_sites, 1u);
  ASSERT_NE(slurp(tree.path("feature.c")).find("vprof_fn_enter"), std::string::npos);
}

TEST(Isolation, FeatureTestMacrosStillReachTheSystemHeadersFirst) {
  vprof::test::TestTree tree;
  tree.add("feature.c", kFeatureSource);
  const std::string flags = " -std=c99 -Wall -Werror -c -I" VPROF_INCLUDE_DIR " feature.c -o ";
  ASSERT_EQ(build_errors(tree, flags, "orig.o"), "") << "the original must build";
  instrument_feature(tree);
  if (HasFatalFailure()) return;
  EXPECT_EQ(build_errors(tree, flags, "inst.o"), "") << "the instrumented file must build as the original did";
}

TEST(Isolation, ThirtyTwoBitBuildKeepsItsOffT) {
  vprof::test::TestTree tree;
  tree.add("probe32.c", "#include <signal.h>\n#include <sys/types.h>\nint x;\n");
  std::string log;
  if (shell("cd " + tree.src() + " && " TEST_GCC " -m32 -std=c99 -c probe32.c -o probe32.o", &log) != 0)
    GTEST_SKIP() << TEST_GCC " cannot build a -m32 object with libc's headers here (no 32-bit libc "
                    "development files, e.g. Debian's libc6-dev-i386): the 32-bit check is skipped";
  tree.add("feature.c", kFeatureSource);
  const std::string flags = " -m32 -std=c99 -Wall -Werror -c -I" VPROF_INCLUDE_DIR " feature.c -o ";
  ASSERT_EQ(build_errors(tree, flags, "orig.o"), "") << "the original must build with -m32";
  instrument_feature(tree);
  if (HasFatalFailure()) return;
  EXPECT_EQ(build_errors(tree, flags, "inst.o"), "") << "the instrumented file must build with -m32 and keep a 64-bit off_t";
}

// A C call whose value the code throws away (`pthread_mutex_lock(&mu);`, a
// call site `get(1);`, a loop's body, a for's increment, a comma's left)
// keeps it in C's value form, a statement expression, which clang's
// -Wunused-value (on by default) reported as "expression result unused": a
// -Werror build of the instrumented tree failed where the original built.
// The wrapped call gets a (void) in front.
const char kDiscardedC[] = R"(typedef struct { int locked; } pthread_mutex_t;
int pthread_mutex_lock(pthread_mutex_t *m);
int pthread_mutex_unlock(pthread_mutex_t *m);
int get(int x);
static pthread_mutex_t mu;

int work(int n) {
  int i, k = 0;
  pthread_mutex_lock(&mu);
  get(1);
  while (k < n) get(k++);
  for (i = 0; i < n; get(i++)) k += i;
  (get(2), k++);
  (void)get(3);
  if (get(4) > 0) pthread_mutex_unlock(&mu);
  return k;
}
)";

TEST(Isolation, DiscardedValuesBuildWithoutWarnings) {
  vprof::test::TestTree tree;
  tree.add("disc.c", kDiscardedC);
  tree.compile("disc.c", "-std=c99");
  const std::string flags = " -std=c99 -Wall -Werror -c -I" VPROF_INCLUDE_DIR " disc.c -o ";
  ASSERT_EQ(build_errors(tree, flags, "orig.o"), "") << "the original must build";
  auto r = instrument_tree(tree, {"work"}, {"pthreads"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_GE(r->call_sites, 6u);
  const std::string text = slurp(tree.path("disc.c"));
  EXPECT_NE(text.find("  (void)__extension__ ({ __auto_type vprof_r1_"), std::string::npos) << text;
  EXPECT_NE(text.find("for (i = 0; i < n; (void)__extension__"), std::string::npos) << text;
  EXPECT_EQ(text.find("(void)(void)"), std::string::npos) << "a cast to void of the code's own is enough: " << text;
  EXPECT_EQ(build_errors(tree, flags, "inst.o"), "") << "the instrumented file must build as the original did";
}

// No include at all: pthread's names are declared here, so the sync pack
// wraps them and the file needs no header of the system's.
const char kIsoC[] = R"(typedef struct { int locked; } pthread_mutex_t;
int pthread_mutex_lock(pthread_mutex_t *m);
int pthread_mutex_trylock(pthread_mutex_t *m);
int pthread_mutex_unlock(pthread_mutex_t *m);
void stop(void) __attribute__((noreturn));
int get(int x);
void put(int x);

static pthread_mutex_t mu;

int work(int x) {
  int v;
  if (x < 0) stop();
  if (pthread_mutex_lock(&mu) != 0) return -1;
  v = get(x) + 1;
  put(v);
  if (pthread_mutex_unlock(&mu) != 0) return -1;
  if (pthread_mutex_trylock(&mu) == 0) v += pthread_mutex_unlock(&mu);
  return v;
}
)";

const char kIsoCxx[] = R"(typedef struct { int locked; } pthread_mutex_t;
extern "C" int pthread_mutex_lock(pthread_mutex_t *m);
extern "C" int pthread_mutex_trylock(pthread_mutex_t *m);
extern "C" int pthread_mutex_unlock(pthread_mutex_t *m);
namespace std {
struct mutex {
  void lock();
  void unlock();
};
template <class M> struct lock_guard {
  explicit lock_guard(M &m) : m_(m) { m_.lock(); }
  ~lock_guard() { m_.unlock(); }
  M &m_;
};
}  // namespace std

struct Buf {
  Buf() {}
  Buf(const Buf &) {}
  int size() const { return 3; }
};
int &slot(int i);
Buf make_buf();
void put(int x);
int name_len(const char *name);
static pthread_mutex_t mu;
static std::mutex smu;

template <class T> int measure(const T &t) { return t.size(); }

int work(int x) {
  std::lock_guard<std::mutex> g(smu);
  int &s = slot(x);
  Buf b = make_buf();
  put(s);
  int v = measure(b) + b.size() + name_len(__func__);
  if (pthread_mutex_trylock(&mu) == 0) pthread_mutex_unlock(&mu);
  return v;
}
)";

TEST(Isolation, InsertedCodeAndProbesHeaderNameNoSystemHeader) {
  vprof::test::TestTree tree;
  tree.add("iso.c", kIsoC);
  tree.add("iso.cc", kIsoCxx);
  tree.compile("iso.c", "-std=c99 -nostdinc");
  tree.compile("iso.cc", "-std=c++17 -nostdinc");
  auto r = instrument_tree(tree, {"work", "measure"}, {"pthreads", "stdcxx"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  // Every shape is there: a test that inserted nothing would prove nothing.
  std::string c = slurp(tree.path("iso.c")), cxx = slurp(tree.path("iso.cc"));
  for (const char *shape : {"cleanup(vprof_fn_cleanup)", "__auto_type vprof_r", "vprof_sync_release(",
                            "vprof_sync_wait_end(", "__auto_type vprof_s"})
    EXPECT_NE(c.find(shape), std::string::npos) << shape << " in iso.c:\n" << c;
  for (const char *shape : {"vprof::detail::FnScope", "vprof::detail::site_call(", "vprof::detail::site_lvalue(",
                            "vprof::detail::site_value(",
                            "vprof::detail::SiteScope(", "vprof::detail::sync_zero(", "vprof::detail::SyncRelease"})
    EXPECT_NE(cxx.find(shape), std::string::npos) << shape << " in iso.cc:\n" << cxx;

  // -nostdinc: an #include of any system header (<stdint.h>, <time.h>, even
  // the compiler's own <stddef.h>) fails, and so does a type only they declare.
  const std::string common = " -nostdinc -Wall -Wextra -Werror -fsyntax-only -I" VPROF_INCLUDE_DIR " ";
  struct Build {
    std::string compiler, flags, file;
  };
  std::vector<Build> builds;
  for (const std::string arch : {"", "-m32"}) {
    builds.push_back({TEST_CC, arch + " -std=c99", "iso.c"});
    builds.push_back({TEST_GCC, arch + " -std=c99", "iso.c"});
    builds.push_back({TEST_CXX, arch + " -std=c++17", "iso.cc"});
    builds.push_back({TEST_GXX, arch + " -std=c++17", "iso.cc"});
  }
  // clang alone targets the other branches of vprof_now(): AArch64's counter
  // and the runtime's clock (RISC-V), where probes.h used to include <time.h>.
  for (const std::string target : {"--target=aarch64-linux-gnu", "--target=riscv64-linux-gnu"}) {
    builds.push_back({TEST_CC, target + " -std=c99", "iso.c"});
    builds.push_back({TEST_CXX, target + " -std=c++17", "iso.cc"});
  }
  for (const auto &b : builds) {
    std::string log;
    EXPECT_EQ(shell("cd " + tree.src() + " && " + b.compiler + " " + b.flags + common + b.file, &log), 0)
        << b.compiler << " " << b.flags << " " << b.file << ":\n" << log;
  }
}

}  // namespace
