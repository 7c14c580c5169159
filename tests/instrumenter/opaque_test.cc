// Functions vprof cannot open. Apache's ap_run_* hooks are written
// whole by APR's macros (their '{' comes from the macro), and their names are
// pasted together (ap_run_##name), so the file that defines one never spells
// its name. A dry run reports such a function with what it reaches (the
// tree's functions its body calls, and those its pointer calls may reach);
// a real run fails saying what to instrument instead.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "instrumenter/instrument.h"
#include "tests/instrumenter/test_tree.h"

namespace {

const char *kHooks = R"(typedef int hook_fn(int);
static hook_fn *handler_hooks[4];
static int handler_count;
void hook_handler(hook_fn *f) { handler_hooks[handler_count++] = f; }
#define IMPLEMENT_RUN_FIRST(name)                    \
  int run_##name(int r) {                            \
    int rv = -1;                                     \
    for (int n = 0; n < name##_count; ++n) {         \
      rv = name##_hooks[n](r);                       \
      if (rv != -1) break;                           \
    }                                                \
    log_hook(rv);                                    \
    return rv;                                       \
  }
void log_hook(int rv);
IMPLEMENT_RUN_FIRST(handler)
)";

const char *kModules = R"(typedef int hook_fn(int);
void hook_handler(hook_fn *f);
int run_handler(int r);
void log_hook(int rv) { (void)rv; }
int default_handler(int r) { return r; }
int status_handler(int r) { return r > 5 ? r : -1; }
int other_type(long r) { return (int)r; }
int serve(int r) {
  hook_handler(status_handler);
  hook_handler(default_handler);
  return run_handler(r);
}
)";

// The two files above, compiled, and options naming their build.
vprof::instr::InstrumentOptions hooks_tree(vprof::test::TestTree &t) {
  t.add("hooks.c", kHooks);
  t.add("modules.c", kModules);
  t.compile("hooks.c", "-std=c99");
  t.compile("modules.c", "-std=c99");
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  return o;
}

}  // namespace

TEST(Opaque, ADryRunReportsAMacroMadeFunctionWithWhatItReaches) {
  vprof::test::TestTree t;
  vprof::instr::InstrumentOptions o = hooks_tree(t);
  o.functions = {"run_handler"};
  o.dry_run = true;
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->opaque.size(), 1u) << "found though hooks.c never spells run_handler";
  const auto &f = r->opaque.front();
  EXPECT_EQ(f.name, "run_handler");
  EXPECT_EQ(f.why, "its body's '{' comes from the macro IMPLEMENT_RUN_FIRST");
  EXPECT_EQ(f.reaches, (std::vector<std::string>{"log_hook", "default_handler", "status_handler"}));
  EXPECT_TRUE(r->undefined.empty());
  EXPECT_EQ(r->functions, 0u);

  // A real run fails, naming what to instrument instead, and writes nothing.
  o.dry_run = false;
  r = vprof::instr::instrument(o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("hooks.c:16: run_handler: its body's '{' comes from the macro "
                                   "IMPLEMENT_RUN_FIRST; cannot instrument it; instrument what it calls "
                                   "instead: log_hook, default_handler, status_handler"),
            std::string::npos)
      << r.error().message;

  // A function with no definition in the tree: reported, not an error, in a dry run.
  o.dry_run = true;
  o.functions = {"write"};
  r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->undefined.size(), 1u);
  EXPECT_NE(r->undefined.front().find("--function write: no definition"), std::string::npos);

  // Many functions in one dry run (iterate's probes of a pointer call's
  // targets): what it says of each, as a dry run of each alone would.
  o.functions = {"run_handler", "write", "log_hook", "serve"};
  r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->opaque.size(), 1u);
  EXPECT_EQ(r->opaque.front().name, "run_handler");
  EXPECT_EQ(r->undefined_patterns, (std::vector<std::string>{"write"}));
  EXPECT_EQ(r->without_calls, (std::vector<std::string>{"log_hook"})) << "serve calls three functions";
  o.functions = {"serve"};
  auto alone = vprof::instr::instrument(o);
  ASSERT_TRUE(alone.ok()) << alone.error().message;
  EXPECT_GT(alone->call_sites, 0u);
  EXPECT_TRUE(alone->without_calls.empty());
}

// A call through a pointer that a macro spells whole (APR's apr_bucket_read(e,
// ...) is (e)->type->read(e, ...)) had no callee text: Apache's report named
// the factor "site#130". The manifest names it by the macro.
TEST(Opaque, APointerCallAMacroSpellsIsNamedByTheMacro) {
  vprof::test::TestTree t;
  t.add("bucket.c", R"(struct bucket;
struct bucket_type { int (*read)(struct bucket *); };
struct bucket { const struct bucket_type *type; };
#define bucket_read(e) (e)->type->read(e)
static int heap_read(struct bucket *b) { (void)b; return 1; }
static const struct bucket_type heap = {heap_read};
int send_one(struct bucket *b) {
  int rv = bucket_read(b);
  return rv;
}
int main(void) {
  struct bucket b = {&heap};
  return send_one(&b) - 1;
}
)");
  t.compile("bucket.c", "-std=c99");
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.functions = {"send_one"};
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::ifstream in(r->manifest_path);
  auto m = nlohmann::json::parse(in);
  ASSERT_EQ(m["call_sites"].size(), 1u) << m.dump(2);
  EXPECT_EQ(m["call_sites"][0]["callee"], "bucket_read") << m.dump(2);
  EXPECT_EQ(m["call_sites"][0]["targets"], nlohmann::json::array({"heap_read"})) << m.dump(2);
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
}

// A selected constexpr function is found and left alone, with a note: not
// "no definition" (its pattern was matched by a string search in the notes
// once; a typed skip now).
TEST(Opaque, AConstexprFunctionIsFoundAndLeftAloneNotUndefined) {
  vprof::test::TestTree t;
  t.add("c.cc", "constexpr int twice(int x) { return 2 * x; }\nint use(int y) { return twice(y) + 1; }\n");
  t.compile("c.cc", "-std=c++17");
  vprof::instr::InstrumentOptions o;
  o.build_dir = t.build();
  o.functions = {"twice"};
  o.dry_run = true;
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->undefined.empty());
  EXPECT_EQ(r->functions, 0u);
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_NE(r->notes[0].find("twice is constexpr; not instrumented"), std::string::npos) << r->notes[0];
}

// A build ahead (an iterate session's optional_functions): a function vprof
// cannot open, or one with no definition, is left out and said, and the
// rest is instrumented; the functions the iteration needs still fail.
TEST(Opaque, AnOptionalFunctionVprofCannotOpenIsLeftOutNotAnError) {
  vprof::test::TestTree t;
  vprof::instr::InstrumentOptions o = hooks_tree(t);
  o.functions = {"serve"};
  o.optional_functions = {"run_handler", "write", "default_handler"};
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->functions, 2u) << "serve and default_handler";
  ASSERT_EQ(r->left_out.size(), 2u);
  EXPECT_EQ(r->left_out[0], "write: no definition in the files parsed");
  EXPECT_EQ(r->left_out[1], "run_handler: its body's '{' comes from the macro IMPLEMENT_RUN_FIRST");
  ASSERT_TRUE(vprof::instr::restore({t.build()}).ok());
  o.functions = {"run_handler"};
  o.optional_functions = {"serve"};
  EXPECT_FALSE(vprof::instr::instrument(o).ok()) << "a function the run needs is no option";
}
