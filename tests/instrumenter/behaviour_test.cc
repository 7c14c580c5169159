// Behaviour: for each program in behaviour/, compile the original and the
// instrumented version, run both, and require the same output and exit code;
// then require the trace to hold exactly the events the program's header
// promises. Header lines:
//   // behaviour: std=-std=c++17... [flags=-O2,-fsanitize=address...] function=NAME... sync=PACK...
//   (one run per std, flag set and compiler; a flag set's commas are spaces; -O1 when none)
//   // expect: enter=N exit=N site_begin=N site_end=N [wait_begin=N wait_end=N release=N wait_mutex=N] [twice=N]
//   (twice: how many bodies a dormant build writes twice; outlined: how many
//   of them keep the instrumented copy in a lambda out of line, C++;
//   switched: how many of them run the original copy between windows too)
// Each program is also instrumented as a build ahead's files are (dormant:
// each instrumented body written twice, edit_plan.cc's two_versions) and
// run twice: with nothing dormant it records what it promises; with every
// function and site dormant it records its waits alone, and its output is
// the same both times. The trace is then analyzed with its manifest: no call
// site may have entered a function its callee cannot have called
// (callee_mismatches).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <tuple>

#include "analyzer/names/names.h"
#include "analyzer/pipeline/analyze.h"
#include "analyzer/read/trace_reader.h"
#include "include/vprof/trace_format.h"
#include "instrumenter/instrument.h"
#include "test_tree.h"

namespace fs = std::filesystem;
using vprof::test::shell;
using vprof::test::slurp;

namespace {

struct Program {
  std::string file, std_flag, flags = "-O1";
  bool gnu = false;  // gcc/g++ instead of clang
  bool dormant = false;
  std::vector<std::string> functions, packs;
  std::map<std::string, uint64_t> expect;
};

void PrintTo(const Program &p, std::ostream *os) {
  *os << p.file << " " << p.std_flag << " " << p.flags << (p.gnu ? " gcc" : " clang") << (p.dormant ? " dormant" : "");
}

std::vector<std::string> words_after(const std::string &text, const std::string &tag) {
  std::vector<std::string> out;
  size_t at = text.find(tag);
  if (at == std::string::npos) return out;
  size_t eol = text.find('\n', at);
  std::istringstream in(text.substr(at + tag.size(), eol - at - tag.size()));
  std::string w;
  while (in >> w)
    if (w != "*/") out.push_back(w);
  return out;
}

std::vector<Program> load_programs() {
  std::vector<Program> out;
  for (const auto &f : fs::directory_iterator(std::string(TEST_DATA_DIR) + "/behaviour")) {
    Program p;
    p.file = f.path().filename().string();
    std::string text = slurp(f.path().string());
    std::vector<std::string> stds, flag_sets;
    for (const auto &w : words_after(text, "behaviour:")) {
      size_t eq = w.find('=');
      std::string k = w.substr(0, eq), v = w.substr(eq + 1);
      if (k == "std") stds.push_back(v);
      if (k == "flags") flag_sets.push_back(v);
      if (k == "function") p.functions.push_back(v);
      if (k == "sync") p.packs.push_back(v);
    }
    for (const auto &w : words_after(text, "expect:")) {
      size_t eq = w.find('=');
      p.expect[w.substr(0, eq)] = std::stoull(w.substr(eq + 1));
    }
    if (flag_sets.empty()) flag_sets.push_back("-O1");
    for (const auto &st : stds)  // one run per standard, flag set and compiler
      for (std::string fl : flag_sets)
        for (bool gnu : {false, true})
          for (bool dormant : {false, true}) {
            std::replace(fl.begin(), fl.end(), ',', ' ');
            p.std_flag = st;
            p.flags = fl;
            p.gnu = gnu;
            p.dormant = dormant;
            out.push_back(p);
          }
  }
  std::sort(out.begin(), out.end(), [](const Program &a, const Program &b) {
    return std::tie(a.file, a.std_flag, a.flags, a.gnu, a.dormant) <
           std::tie(b.file, b.std_flag, b.flags, b.gnu, b.dormant);
  });
  return out;
}

class Behaviour : public ::testing::TestWithParam<Program> {};

TEST_P(Behaviour, SameOutputAndExpectedEvents) {
  const Program &p = GetParam();
  vprof::test::TestTree tree;
  tree.add(p.file, slurp(std::string(TEST_DATA_DIR) + "/behaviour/" + p.file));
  tree.compile(p.file, p.std_flag);
  bool is_c = fs::path(p.file).extension() == ".c";
  std::string cc = p.gnu ? (is_c ? TEST_GCC : TEST_GXX) : (is_c ? TEST_CC : TEST_CXX);
  // -Werror=return-type: a hidden noreturn call would trip it.
  // C: PostgreSQL-style -Wdeclaration-after-statement must stay quiet.
  std::string flags = p.std_flag + " " + p.flags + " -Wall -Werror=return-type -Werror=unused-result -pthread" +
                      (is_c ? " -Werror=declaration-after-statement" : "");
  std::string log;
  ASSERT_EQ(shell("cd " + tree.src() + " && " + cc + " " + flags + " " + p.file + " -o orig", &log), 0) << log;
  std::string orig_out, inst_out;
  int orig_rc = shell(tree.src() + "/orig", &orig_out);

  vprof::instr::InstrumentOptions o;
  o.build_dir = tree.build();
  o.functions = p.functions;
  o.sync_packs = p.packs;
  o.annotations_dir = VPROF_ANNOTATIONS_DIR;
  o.dormant = p.dormant;
  auto r = vprof::instr::instrument(o);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // -isystem: the warnings checked are those of the generated code, not of probes.h.
  ASSERT_EQ(shell("cd " + tree.src() + " && " + cc + " " + flags + " -isystem " VPROF_INCLUDE_DIR " " + p.file +
                      " -o inst -L" VPROF_LIB_DIR " -Wl,-rpath," VPROF_LIB_DIR " -lvprof",
                  &log),
            0)
      << log << "\n" << slurp(tree.path(p.file));
  // The events of a run, by kind.
  auto run = [&](const std::string &trace, const std::string &env, std::string *out, int *rc) {
    fs::create_directories(trace);
    *rc = shell(env + " VPROF_MIN_WAIT_NS=0 VPROF_MUTEX_RELEASES=1 VPROF_TRACE_DIR=" + trace + " " + tree.src() + "/inst",
                out);
    std::map<std::string, uint64_t> got;
    // A thread that records nothing leaves no file: with every probe
    // dormant and no wait, the directory holds none.
    bool any = false;
    for (const auto &f : fs::directory_iterator(trace)) any |= f.path().extension() == ".vpt";
    if (!any && !env.empty()) return got;
    auto t = vprof::trace::read_trace_dir(trace);
    EXPECT_TRUE(t.ok()) << t.error().message;
    if (!t.ok()) return got;
    for (const auto &th : t->threads)
      for (const auto &e : th.events) {
        switch (e.kind) {
          case vprof::trace::Kind::FuncEnter: ++got["enter"]; break;
          case vprof::trace::Kind::FuncExit: ++got["exit"]; break;
          // A run of one site's calls (SITE_RUN) reads as one call: its end says how many.
          case vprof::trace::Kind::SiteEnd:
            got["site_begin"] += std::max<uint64_t>(1, e.type_label);
            got["site_end"] += std::max<uint64_t>(1, e.type_label);
            break;
          case vprof::trace::Kind::WaitBegin: ++got["wait_begin"]; break;
          case vprof::trace::Kind::WaitEnd: ++got["wait_end"]; break;
          case vprof::trace::Kind::Release: ++got["release"]; break;
          case vprof::trace::Kind::WaitMutex: ++got["wait_mutex"]; break;
          default: break;
        }
      }
    EXPECT_EQ(t->dropped_records, 0u);
    return got;
  };
  std::string trace = tree.root() + "/trace";
  int inst_rc = 0;
  std::map<std::string, uint64_t> got = run(trace, "", &inst_out, &inst_rc);
  EXPECT_EQ(orig_rc, inst_rc);
  EXPECT_EQ(orig_out, inst_out);
  if (p.dormant && p.expect.count("twice")) {
    // How many bodies the file writes twice (a body with a label is written once).
    const std::string text = slurp(tree.path(p.file));
    auto occurrences = [&](const std::string &needle) {
      size_t n = 0;
      for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(occurrences("if (vprof_fn_is_dormant(") + occurrences("if (vprof_fn_runs_plain("), p.expect.at("twice"))
        << text;
    // How many of those also run their original copy between windows (no
    // static local: both copies would run in one process).
    EXPECT_EQ(occurrences("if (vprof_fn_runs_plain("), p.expect.count("switched") ? p.expect.at("switched") : 0u)
        << text;
    // How many of those keep their instrumented copy in a lambda out of line (C++).
    EXPECT_EQ(occurrences("() VPROF_OUTLINED_"), p.expect.count("outlined") ? p.expect.at("outlined") : 0u) << text;
  }
  if (p.dormant) {
    // Every probe dormant: the original bodies run, and only waits are recorded.
    const nlohmann::json m = nlohmann::json::parse(slurp(r->manifest_path));
    std::string list;
    for (const auto &f : m.at("functions")) list += fmt::format("f {}\n", f.at("id").get<uint64_t>());
    for (const auto &c : m.at("call_sites")) list += fmt::format("s {}\n", c.at("id").get<uint64_t>());
    std::ofstream(tree.root() + "/dormant.txt") << list;
    std::string off_out;
    int off_rc = 0;
    std::map<std::string, uint64_t> off = run(tree.root() + "/trace-dormant", "VPROF_DORMANT=" + tree.root() + "/dormant.txt",
                                              &off_out, &off_rc);
    EXPECT_EQ(orig_rc, off_rc);
    EXPECT_EQ(orig_out, off_out);
    for (const char *kind : {"enter", "exit", "site_begin", "site_end"}) EXPECT_EQ(off[kind], 0u) << kind;
    for (const char *kind : {"wait_begin", "wait_end", "release", "wait_mutex"}) EXPECT_EQ(off[kind], p.expect.count(kind) ? p.expect.at(kind) : 0u) << kind;
  }
  for (const auto &[kind, n] : p.expect)
    if (kind != "twice" && kind != "outlined" && kind != "switched") EXPECT_EQ(got[kind], n) << kind << " events in " << p.file;
  // The analyzer reads each call as the manifest says it is: no site entered
  // a function its callee cannot have called.
  {
    auto t = vprof::trace::read_trace_dir(trace);
    auto names = vprof::analyzer::load_manifest(r->manifest_path);
    ASSERT_TRUE(t.ok() && names.ok());
    vprof::analyzer::AnalyzeOptions ao;
    ao.factors.bootstrap = 0;
    auto a = vprof::analyzer::analyze_run(*t, *names, ao, 0);
    ASSERT_TRUE(a.ok()) << a.error().message;
    EXPECT_EQ((*a)->merge.callee_mismatches, 0u);
  }
  // The program told the runtime which manifest names its ids: each
  // rewritten file its own id, all listed.
  const nlohmann::json manifest = nlohmann::json::parse(slurp(r->manifest_path));
  std::set<std::string> listed;
  for (const auto &f : manifest.at("files")) listed.insert(f.at("id").get<std::string>());
  int process_files = 0;
  for (const auto &f : fs::directory_iterator(trace)) {
    if (f.path().extension() != ".vpp") continue;
    ++process_files;
    std::string page = slurp(f.path().string());
    ASSERT_EQ(page.size(), sizeof(vprof_process_header));
    const auto *h = reinterpret_cast<const vprof_process_header *>(page.data());
    EXPECT_EQ(std::string(h->manifest_id), "") << "version 5 keeps the ids in manifest_ids";
    std::set<std::string> registered;
    for (uint32_t i = 0; i < h->manifest_ids_count && i < VPROF_MANIFEST_IDS; ++i)
      registered.insert(fmt::format("{:016x}", h->manifest_ids[i]));
    EXPECT_EQ(registered, listed) << "one file, one id";
    EXPECT_EQ(std::string(h->manifest_path), r->manifest_path);
  }
  EXPECT_EQ(process_files, 1);
}

std::string program_name(const ::testing::TestParamInfo<Program> &info) {
  std::string s = info.param.file + info.param.std_flag + (info.param.flags == "-O1" ? "" : info.param.flags) +
                  (info.param.gnu ? "_gcc" : "_clang") + (info.param.dormant ? "_dormant" : "");
  for (char &ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Corpus, Behaviour, ::testing::ValuesIn(load_programs()), program_name);

}  // namespace
