// suggest() on hand-made analyses: what iterate decides for each selected
// factor (docs/method.md, "Iterative refinement"), here the case found by the
// mutual-recursion shape under load: a broken-down function outranks its own
// parts, which are then not listed (nested factors are listed once), and the
// session stopped on "already broken down: its parts are ranked on their own"
// with no part ranked at all.
#include <map>

#include <gtest/gtest.h>

#include "analyzer/pipeline/analyze.h"
#include "iterate/answer.h"
#include "iterate/decide.h"

using namespace vprof;

namespace {

analyzer::Factor factor(const std::string &name, const std::string &fn, double share, int rank,
                        const std::string &nested_with = "") {
  analyzer::Factor f;
  f.name = name;
  f.functions = {fn};
  f.share = f.contribution = share;
  f.rank = rank;
  f.nested_with = nested_with;
  return f;
}

// A call through a pointer, `expr`, at `where`, that may reach `targets`.
analyzer::Factor pointer_call(const std::string &expr, const std::string &where, double share, int rank,
                              std::vector<std::string> targets, const std::string &nested_with = "") {
  analyzer::Factor f = factor(expr, expr, share, rank, nested_with);
  analyzer::FactorSite site;
  site.label = expr + " (" + where + ")";
  site.call_site = analyzer::CallSiteInfo{};
  site.call_site->callee = expr;
  site.call_site->indirect = true;
  site.call_site->targets = std::move(targets);
  f.call_sites.push_back(site);
  return f;
}

}  // namespace

TEST(Decide, ABrokenDownFunctionThatOutranksItsPartsHasItsFirstPartDecided) {
  analyzer::Analysis a;
  a.factors.push_back(factor("parse_expr", "parse_expr", 0.998, 1));
  a.factors.push_back(factor("parse_expr (body)", "parse_expr", 0.01, 0, "parse_expr"));
  a.factors.push_back(factor("(preempted)", "(preempted)", 0.2, 0, "parse_expr"));
  a.factors.push_back(factor("parse_term (uninstrumented part)", "parse_term", 0.679, 0, "parse_expr"));
  a.factors.push_back(factor("busy", "busy", 0.05, 0, "parse_expr"));
  iterate::State s;
  s.broken_down.push_back({"parse_expr", {"step"}, 2});
  auto out = iterate::suggest(a, s, 0.5, [](const std::string &f) {
    return f == "parse_term" ? std::string() : std::string("no calls in its body to break down");
  });
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].factor, "parse_expr");
  EXPECT_FALSE(out[0].break_down);
  EXPECT_EQ(out[1].factor, "parse_term (uninstrumented part)");
  EXPECT_TRUE(out[1].break_down);
  EXPECT_EQ(out[1].functions, std::vector<std::string>{"parse_term"});
  EXPECT_NE(out[1].reason.find("a part of parse_expr"), std::string::npos) << out[1].reason;

  // Its body holding at least m: explained, and nothing more to decide.
  a.factors[1].contribution = 0.9;
  out = iterate::suggest(a, s, 0.5, [](const std::string &) { return std::string(); });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].reason.find("its body holds"), std::string::npos) << out[0].reason;
}

// Found on PostgreSQL: a call through a pointer whose targets are
// all broken down outranked its own parts (table_tuple_lock and ExecUpdateAct,
// two calls below ExecUpdate), which were not listed; the session stopped on
// "what it reaches is broken down: its parts are ranked on their own" with
// none ranked.
TEST(Decide, APointerCallWhoseTargetsAreBrokenDownHasItsFirstPartDecided) {
  analyzer::Analysis a;
  analyzer::Factor ptr = pointer_call("node->ExecProcNode", "executor.h:266", 0.847, 1,
                                      {"ExecModifyTable", "ExecProcNodeFirst"});
  a.factors.push_back(ptr);
  a.factors.push_back(factor("fdatasync", "fdatasync", 0.14, 2));
  a.factors.push_back(factor("ExecUpdate", "ExecUpdate", 0.845, 0, "node->ExecProcNode"));
  a.factors.push_back(factor("table_tuple_lock", "table_tuple_lock", 0.427, 0, "node->ExecProcNode"));
  a.factors.push_back(factor("ExecUpdateAct", "ExecUpdateAct", 0.416, 0, "node->ExecProcNode"));
  iterate::State s;
  s.broken_down.push_back({"ExecProcNode", {"ExecutePlan"}, 8});
  s.broken_down.push_back({"ExecModifyTable", {"ExecProcNode"}, 9});
  s.broken_down.push_back({"ExecProcNodeFirst", {"ExecProcNode"}, 9});
  s.broken_down.push_back({"ExecUpdate", {"ExecModifyTable"}, 10});
  auto probe = [](const std::string &f) {
    return f == "fdatasync" ? std::string("no definition") : std::string();
  };
  auto out = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].factor, "node->ExecProcNode");
  EXPECT_FALSE(out[0].break_down);
  EXPECT_EQ(out[1].factor, "table_tuple_lock") << "its first part not broken down, before the next selected";
  EXPECT_TRUE(out[1].break_down);
  EXPECT_NE(out[1].reason.find("a part of node->ExecProcNode"), std::string::npos) << out[1].reason;
  EXPECT_EQ(out[2].factor, "fdatasync");

  // A target not yet broken down is what to do, and no part is taken for it.
  s.broken_down.pop_back();
  s.broken_down.erase(s.broken_down.begin() + 2);
  out = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].break_down);
  EXPECT_EQ(out[0].functions, std::vector<std::string>{"ExecProcNodeFirst"});
}

// PostgreSQL, the next session (pointer calls keep their targets as nodes, so
// the pointer call is one level of its own): ExecProcNode, broken down,
// outranked node->ExecProcNode, a part whose targets are all broken down;
// taking that part stopped the session on "its parts are ranked on their
// own" with ExecUpdate, inside the target, never decided.
TEST(Decide, APartThatIsAPointerCallWithItsTargetsBrokenDownIsPassedBy) {
  analyzer::Analysis a;
  a.factors.push_back(factor("ExecProcNode", "ExecProcNode", 0.765, 1));
  a.factors.push_back(factor("fdatasync", "fdatasync", 0.14, 2));
  analyzer::Factor ptr = pointer_call("node->ExecProcNode", "executor.h:266", 0.765, 0,
                                      {"ExecModifyTable", "ExecProcNodeFirst"}, "ExecProcNode");
  a.factors.push_back(ptr);
  a.factors.push_back(factor("ExecModifyTable", "ExecModifyTable", 0.76, 0, "ExecProcNode"));
  a.factors.push_back(factor("ExecUpdate", "ExecUpdate", 0.75, 0, "ExecProcNode"));
  iterate::State s;
  s.broken_down.push_back({"ExecProcNode", {"ExecutePlan"}, 8});
  s.broken_down.push_back({"ExecModifyTable", {"ExecProcNode"}, 9});
  s.broken_down.push_back({"ExecProcNodeFirst", {"ExecProcNode"}, 9});
  auto probe = [](const std::string &f) {
    return f == "fdatasync" ? std::string("no definition") : std::string();
  };
  auto out = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].factor, "ExecProcNode");
  EXPECT_EQ(out[1].factor, "ExecUpdate");
  EXPECT_TRUE(out[1].break_down);
  EXPECT_EQ(out[1].functions, std::vector<std::string>{"ExecUpdate"});
  EXPECT_EQ(out[2].factor, "fdatasync");
}

// PostgreSQL at scale 16: the index scan's call through a pointer,
// (*accessMtd)(node), carried 31% of Var and the session ended on it as "not
// a function" (its name starts with '(' like (outside)'s). It is broken down
// by the functions it may reach; a leaf that is no function stays explained.
TEST(Decide, APointerCallNamedWithAParenthesisIsBrokenDownByItsTargets) {
  analyzer::Analysis a;
  analyzer::Factor ptr = pointer_call("(*accessMtd)", "execScan.c:140", 0.314, 1, {"IndexNext", "SeqNext"});
  a.factors.push_back(ptr);
  a.factors.push_back(factor("(preempted)", "(preempted)", 0.2, 2));
  iterate::State s;
  s.broken_down.push_back({"ExecScanFetch", {"ExecScan"}, 10});
  auto out = iterate::suggest(a, s, 0.5, [](const std::string &) { return std::string(); });
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].break_down) << out[0].reason;
  EXPECT_EQ(out[0].functions, (std::vector<std::string>{"IndexNext", "SeqNext"}));
  EXPECT_FALSE(out[1].break_down);
  EXPECT_EQ(out[1].reason, "not a function");
}

// Redis's c->cmd->proc(c) may reach 254 functions; the reason
// (printed on the session's decision line, kept in its reports) named every
// one, 4 KB on one line. It names five and how many more; the suggestion
// still instruments all of them.
TEST(Decide, APointerCallWithManyTargetsNamesAFewInItsReason) {
  std::vector<std::string> targets;
  for (int i = 0; i < 254; ++i) targets.push_back("cmd" + std::to_string(1000 + i) + "Command");
  analyzer::Analysis a;
  a.factors.push_back(pointer_call("c->cmd->proc", "server.c:3500", 0.6, 1, targets));
  iterate::State s;
  s.broken_down.push_back({"call", {}, 1});
  auto out = iterate::suggest(a, s, 0.5, [](const std::string &) { return std::string(); });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].break_down);
  EXPECT_EQ(out[0].functions, targets);
  EXPECT_EQ(out[0].reason,
            "called through a pointer: instrument the 254 functions it may reach (cmd1000Command, cmd1001Command, "
            "cmd1002Command, cmd1003Command, cmd1004Command and 249 more)");
}

// MariaDB: InnoDB's lock.rd_lock() in sux_lock<ssux>::s_lock is a
// template's call whose callee its arguments decide (20-26% of a session's
// variance, left "unreached: called through a pointer" with no targets). It
// is broken down through the tree's functions of its name, and said so.
TEST(Decide, ATemplatesDependentCallIsBrokenDownThroughTheFunctionsOfItsName) {
  analyzer::Analysis a;
  a.factors.push_back(pointer_call("lock.rd_lock", "sux_lock.h:394", 0.25, 1,
                                   {"srw_lock_impl::rd_lock", "ssux_lock_impl::rd_lock"}));
  a.factors.back().call_sites[0].call_site->dependent_name = "rd_lock";
  iterate::State s;
  auto out = iterate::suggest(a, s, 0.5, [](const std::string &) { return iterate::Probe{}; });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].break_down) << out[0].reason;
  EXPECT_EQ(out[0].functions, (std::vector<std::string>{"srw_lock_impl::rd_lock", "ssux_lock_impl::rd_lock"}));
  EXPECT_EQ(out[0].reason,
            "a template's call of rd_lock, which its arguments decide: instrument the 2 functions it may reach "
            "(srw_lock_impl::rd_lock, ssux_lock_impl::rd_lock)");
  // No function of that name in the tree: unreached, and why.
  a.factors.back().call_sites[0].call_site->targets.clear();
  out = iterate::suggest(a, s, 0.5, [](const std::string &) { return iterate::Probe{}; });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].unreached);
  EXPECT_EQ(out[0].reason,
            "a template's call of rd_lock, which its arguments decide, and no function in the tree has that name: "
            "vprof cannot tell where it goes");
}

TEST(Decide, SomeNamesListsShortListsWhole) {
  EXPECT_EQ(iterate::some_names({}), "");
  EXPECT_EQ(iterate::some_names({"a", "b", "c", "d", "e", "f"}), "a, b, c, d, e, f");
  EXPECT_EQ(iterate::some_names({"a", "b", "c", "d", "e", "f", "g"}), "a, b, c, d, e and 2 more");
  EXPECT_EQ(iterate::some_names({"a", "b", "c"}, 1), "a and 2 more");
}

// Found on Apache httpd: ap_run_handler's body is written by APR's
// hook macros, so vprof cannot instrument it; every session stopped there
// calling it explained. It is broken down through what it reaches (the
// handlers registered by address); with nothing it reaches instrumentable
// it is unreached, never explained.
TEST(Decide, AFunctionVprofCannotOpenIsBrokenDownThroughWhatItReachesOrUnreached) {
  analyzer::Analysis a;
  a.factors.push_back(factor("ap_run_handler", "ap_run_handler", 0.944, 1));
  a.factors.push_back(factor("apr_file_write", "apr_file_write", 0.05, 2));
  iterate::State s;
  s.broken_down.push_back({"ap_process_async_request", {}, 1});
  auto probe = [](const std::string &f) -> iterate::Probe {
    iterate::Probe p;
    if (f == "ap_run_handler") {
      p.opaque = true;
      p.why_not = "its body's '{' comes from the macro AP_IMPLEMENT_HOOK_RUN_FIRST";
      p.reaches = {"default_handler", "status_handler", "dispatch_in_a_macro"};
    } else if (f == "apr_file_write") {
      p.opaque = true;
      p.why_not = "no definition in the tree (a library's or the system's code)";
    } else if (f == "dispatch_in_a_macro") {
      p.opaque = true;
      p.why_not = "its body's '{' comes from the macro M";
    } else if (f == "status_handler") {
      p.why_not = iterate::kNoCalls;  // instrumented all the same: it may be the one
    }
    return p;
  };
  auto out = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].break_down) << out[0].reason;
  EXPECT_FALSE(out[0].unreached);
  EXPECT_EQ(out[0].functions, (std::vector<std::string>{"default_handler", "status_handler"}));
  EXPECT_NE(out[0].reason.find("AP_IMPLEMENT_HOOK_RUN_FIRST"), std::string::npos) << out[0].reason;
  EXPECT_STREQ(iterate::decision_word(out[0]), "break down");
  EXPECT_FALSE(out[1].break_down);
  EXPECT_TRUE(out[1].unreached) << "a library's function is a dead end, not an explanation";
  EXPECT_STREQ(iterate::decision_word(out[1]), "unreached");

  // Its handlers broken down: its parts are ranked on their own, and its own
  // time (what the handlers leave of it) is unreached.
  s.broken_down.push_back({"default_handler", {"ap_process_async_request"}, 2});
  s.broken_down.push_back({"status_handler", {"ap_process_async_request"}, 2});
  a.factors = {factor("ap_run_handler (uninstrumented part)", "ap_run_handler", 0.4, 1)};
  out = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].unreached) << out[0].reason;

  // Nothing it reaches can be instrumented: unreached, saying why.
  a.factors = {factor("ap_run_handler", "ap_run_handler", 0.944, 1)};
  s.broken_down.resize(1);
  auto nothing = [&](const std::string &f) -> iterate::Probe {
    iterate::Probe p = probe(f);
    if (f != "ap_run_handler") {
      p.opaque = true;
      p.why_not = "no definition in the tree (a library's or the system's code)";
    }
    return p;
  };
  out = iterate::suggest(a, s, 0.5, nothing);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].break_down);
  EXPECT_TRUE(out[0].unreached);
  EXPECT_NE(out[0].reason.find("nothing it reaches can be instrumented"), std::string::npos) << out[0].reason;
}

// Apache: apr_bucket_read's pointer call reaches three bucket
// types in the tree and the file bucket in libaprutil. With the three
// broken down, the call's own part (its time in the library) was passed by
// as "its parts are ranked on their own" and never decided: it is unreached.
TEST(Decide, APointerCallsTimeOutsideItsBrokenDownTargetsIsUnreached) {
  analyzer::Analysis a;
  a.factors.push_back(factor("send_brigade_nonblocking", "send_brigade_nonblocking", 0.45, 1));
  analyzer::Factor part = pointer_call("apr_bucket_read (uninstrumented part)", "core_filters.c:689", 0.31, 0,
                                       {"eoc_bucket_read", "eor_bucket_read"}, "send_brigade_nonblocking");
  part.functions = {"apr_bucket_read"};
  a.factors.push_back(part);
  iterate::State s;
  s.broken_down.push_back({"send_brigade_nonblocking", {"ap_core_output_filter"}, 5});
  s.broken_down.push_back({"eoc_bucket_read", {"send_brigade_nonblocking"}, 7});
  s.broken_down.push_back({"eor_bucket_read", {"send_brigade_nonblocking"}, 7});
  auto out = iterate::suggest(a, s, 0.5, [](const std::string &) { return std::string(); });
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].factor, "apr_bucket_read (uninstrumented part)");
  EXPECT_FALSE(out[1].break_down);
  EXPECT_TRUE(out[1].unreached) << out[1].reason;
}

// Apache: default_handler (27%, broken down) outranked its parts;
// ap_pass_brigade below it was broken down too, and the filter pointer call
// below that was ranked after the k-th factor, so selection never marked it
// nested in default_handler, and the session never decided it. Its parts are
// found by the tree, at any depth.
TEST(Decide, APartRankedAfterTheKthIsFoundByTheTree) {
  analyzer::VarNode handler, pass, out;
  handler.key = "root/site:ap_invoke_handler>ap_run_handler#0/fn:default_handler";
  pass.key = handler.key + "/site:default_handler>ap_pass_brigade#0";
  out.key = pass.key + "/site:ap_pass_brigade>next->frec->filter_func.out_func#0";
  analyzer::Analysis a;
  a.factors.push_back(factor("nanosleep", "nanosleep", 0.70, 1));
  a.factors.push_back(factor("default_handler", "default_handler", 0.27, 2));
  a.factors.back().instances = {&handler};
  a.factors.push_back(factor("ap_pass_brigade", "ap_pass_brigade", 0.27, 0));
  a.factors.back().instances = {&pass};
  a.factors.push_back(pointer_call("next->frec->filter_func.out_func", "util_filter.c:591", 0.27, 0,
                                   {"ap_content_length_filter", "ap_core_output_filter"}));
  a.factors.back().instances = {&out};
  iterate::State s;
  s.broken_down.push_back({"default_handler", {"ap_invoke_handler"}, 3});
  s.broken_down.push_back({"ap_pass_brigade", {"default_handler"}, 3});
  auto probe = [](const std::string &f) -> iterate::Probe {
    iterate::Probe p;
    if (f == "nanosleep") {
      p.opaque = true;
      p.why_not = "no definition in the tree (a library's or the system's code)";
    }
    return p;
  };
  auto out_s = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out_s.size(), 3u);
  EXPECT_TRUE(out_s[0].unreached);
  EXPECT_EQ(out_s[2].factor, "next->frec->filter_func.out_func");
  EXPECT_TRUE(out_s[2].break_down) << out_s[2].reason;
  EXPECT_NE(out_s[2].reason.find("a part of default_handler"), std::string::npos) << out_s[2].reason;
}

// Apache: apr_bucket_read's pointer call may reach three bucket
// types in the tree; with all three instrumented none ran in it (the static
// file's bucket is libaprutil's), so the call stayed a leaf, 58.7% of Var,
// "explained: its parts are ranked on their own" with no part at all.
TEST(Decide, APointerCallWhoseTargetsAllRanNowhereInItIsUnreached) {
  analyzer::VarNode leaf;
  leaf.key = "root/site:send_brigade_nonblocking>apr_bucket_read#0";
  analyzer::Analysis a;
  a.factors.push_back(pointer_call("apr_bucket_read", "core_filters.c:689", 0.587, 1,
                                   {"eoc_bucket_read", "eor_bucket_read", "error_bucket_read"}));
  a.factors.back().instances = {&leaf};
  iterate::State s;
  for (const char *t : {"eoc_bucket_read", "eor_bucket_read", "error_bucket_read"})
    s.broken_down.push_back({t, {"send_brigade_nonblocking"}, 7});
  auto out = iterate::suggest(a, s, 0.5, [](const std::string &) { return std::string(); });
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].unreached) << out[0].reason;
  EXPECT_NE(out[0].reason.find("none of the 3 functions of the tree it may reach ran in it"), std::string::npos)
      << out[0].reason;
}

// Apache: send_brigade_nonblocking outranked its parts; the first,
// apr_bucket_read, was unreached (libaprutil), and the session stopped there
// with writev_nonblocking beside it never decided. A dead end passes on to
// the next part.
TEST(Decide, AnUnreachedHiddenPartPassesOnToTheNext) {
  analyzer::Analysis a;
  a.factors.push_back(factor("send_brigade_nonblocking", "send_brigade_nonblocking", 0.86, 1));
  a.factors.push_back(factor("apr_socket_sendv", "apr_socket_sendv", 0.40, 0, "send_brigade_nonblocking"));
  a.factors.push_back(factor("writev_nonblocking", "writev_nonblocking", 0.30, 0, "send_brigade_nonblocking"));
  iterate::State s;
  s.broken_down.push_back({"send_brigade_nonblocking", {"ap_core_output_filter"}, 5});
  auto probe = [](const std::string &f) -> iterate::Probe {
    iterate::Probe p;
    if (f == "apr_socket_sendv") {
      p.opaque = true;
      p.why_not = "no definition in the tree (a library's or the system's code)";
    }
    return p;
  };
  auto out = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_TRUE(out[1].unreached);
  EXPECT_EQ(out[2].factor, "writev_nonblocking");
  EXPECT_TRUE(out[2].break_down) << out[2].reason;
}

// MariaDB session 5: log_write_up_to's call log_sys.writer() (a
// pointer held in a field) held up 16-27% of Var(root) in others' waits. As
// a cause it has no factor's list of call sites, only its Held parts, whose
// site is that call: it was probed as a function named "log_sys.writer" and
// left "unreached: no definition in the tree". It is broken down through its
// targets as the same call is when it is a factor.
TEST(Decide, ACauseAtACallThroughAPointerIsBrokenDownThroughItsTargets) {
  analyzer::VarNode held;
  held.key = "root/site#7/held:site#1324";
  held.label = "held by log_write_up_to at log_sys.writer (log0log.cc:1171)";
  held.call_site = analyzer::CallSiteInfo{};
  held.call_site->callee = "log_sys.writer";
  held.call_site->indirect = true;
  held.call_site->targets = {"log_writer", "log_writer_resizing", "my_md5_context_size"};
  analyzer::Analysis a;
  a.d = 0.05;
  analyzer::Factor c;
  c.name = "log_sys.writer";
  c.functions = {"log_sys.writer"};
  c.share = 0.162;
  c.own_share = 0;
  c.rank = 1;
  c.instances = {&held};
  a.causes.ranked.push_back(c);
  iterate::State s;
  s.broken_down.push_back({"dispatch_command", {}, 1});
  auto probe = [](const std::string &f) {
    iterate::Probe p;
    if (f == "log_sys.writer") {
      p.opaque = true;
      p.why_not = "no definition in the tree (a library's or the system's code)";
    }
    if (f == "my_md5_context_size") p.why_not = iterate::kNoCalls;
    return p;
  };
  auto out = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].factor, "cause log_sys.writer");
  EXPECT_TRUE(out[0].break_down) << out[0].reason;
  EXPECT_FALSE(out[0].unreached);
  EXPECT_EQ(out[0].functions, (std::vector<std::string>{"log_writer", "log_writer_resizing", "my_md5_context_size"}));
  EXPECT_EQ(out[0].reason,
            "a cause: it held up 16.2% of Var(root) in others' waits; called through a pointer: instrument the 3 "
            "functions it may reach (log_writer, log_writer_resizing, my_md5_context_size)");
}

// MariaDB session 5: the decision on log_sys.writer()'s nine targets ran a
// dry run for each, and those whose names macros paste (my_sha224_context_size)
// cost a parse of all 974 units each. The targets are asked about at once
// (one dry run), and each one's answer is then taken as before.
TEST(Decide, APointerCallsTargetsAreProbedInOneBatch) {
  analyzer::Analysis a;
  a.factors.push_back(
      pointer_call("log_sys.writer", "log0log.cc:1171", 0.25, 1, {"log_writer", "log_writer_resizing", "my_sha224_context_size"}));
  iterate::State s;
  s.broken_down.push_back({"log_write_up_to", {}, 1});
  s.broken_down.push_back({"log_writer", {"log_write_up_to"}, 2});
  std::vector<std::vector<std::string>> batches;
  std::map<std::string, iterate::Probe> learned;
  auto many = [&](const std::vector<std::string> &fs) {
    batches.push_back(fs);
    for (const auto &f : fs) learned[f] = f == "my_sha224_context_size" ? iterate::Probe(iterate::kNoCalls) : iterate::Probe();
  };
  std::vector<std::string> asked_alone;
  auto one = [&](const std::string &f) {
    if (auto it = learned.find(f); it != learned.end()) return it->second;
    asked_alone.push_back(f);
    return iterate::Probe();
  };
  auto out = iterate::suggest(a, s, 0.5, one, many);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0], (std::vector<std::string>{"log_writer_resizing", "my_sha224_context_size"}))
      << "a target already broken down is not asked about";
  EXPECT_TRUE(asked_alone.empty());
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].break_down);
  EXPECT_EQ(out[0].functions, (std::vector<std::string>{"log_writer_resizing", "my_sha224_context_size"}));
}

// Ids are renumbered by every instrumentation: a call site's caller is named
// by the site's own manifest, never by looking its id up in another run's
// names (a function dropped for one iteration came back as id 78; the merged
// report looked 78 up in run 1's names, read "fn#78", and the session died on
// `--function fn#78: no definition`).
// Bounded perturbation: a factor whose (recorder) leaves already
// hold as much of Var as its code is not broken down a level deeper (that
// level would time vprof); one with a sliver of recorder time is.
TEST(Decide, WhereTheRecorderHoldsAsMuchAsTheCodeItIsNotBrokenDown) {
  analyzer::VarNode site;
  site.key = "root/site:stall>spin#0";
  site.kind = analyzer::VarNode::Kind::Var;
  analyzer::VarNode running, recorder;
  running.key = site.key + "/running";
  running.share = 0.20;
  recorder.key = site.key + "/recorder";
  recorder.share = 0.25;
  site.children = {running, recorder};
  analyzer::Analysis a;
  a.factors.push_back(factor("spin", "spin", 0.20, 1));
  a.factors[0].instances = {&site};
  iterate::State s;
  auto can = [](const std::string &) { return std::string(); };
  auto out = iterate::suggest(a, s, 0.5, can);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].break_down);
  EXPECT_TRUE(out[0].functions.empty());
  EXPECT_NE(out[0].reason.find("the recorder's own pauses under it hold 25.0% of Var(root)"), std::string::npos)
      << out[0].reason;
  site.children[1].share = 0.01;
  out = iterate::suggest(a, s, 0.5, can);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].break_down);
}

TEST(Decide, ACallersNameComesFromItsSitesOwnManifest) {
  analyzer::Analysis a;
  for (int r = 0; r < 2; ++r) a.runs.push_back(std::make_unique<analyzer::RunAnalysis>());
  a.runs[0]->names.functions[68] = {"worker_loop", "srv.c", 10};  // run 0: worker_loop is 68, no 78
  a.runs[1]->names.functions[78] = {"worker_loop", "srv.c", 10};
  analyzer::Factor f = factor("stall", "stall", 0.6, 1);
  analyzer::FactorSite site;
  site.label = "stall (srv.c:42)";
  site.call_site = analyzer::CallSiteInfo{};
  site.call_site->function_id = 78;
  site.call_site->caller = "worker_loop";  // as load_manifest resolves it in run 1's manifest
  site.call_site->callee = "stall";
  site.contribution = 0.6;
  f.call_sites.push_back(site);
  analyzer::VarNode inst;
  inst.label = site.label;
  inst.run = 0;  // the merged tree's instance, placed at run 0's depth
  f.instances.push_back(&inst);
  EXPECT_EQ(iterate::caller_of(a, f), "worker_loop");
  EXPECT_EQ(iterate::callers_of(a, f), std::vector<std::string>{"worker_loop"});
}

// The answer's line names the wait the top cause held up most by its place:
// on memcached it held up three pthread_mutex_lock waits, and the line said
// only "holding up pthread_mutex_lock".
TEST(Answer, TheTopCauseSaysWhichWaitItHeldUpByItsPlace) {
  analyzer::Analysis a;
  analyzer::Factor c = factor("planted_stall", "planted_stall", 0.586, 1);
  c.own_share = 0.213;
  analyzer::CallSiteInfo site;
  site.file = "/tmp/vprof-memcached/src/items.c";
  site.line = 508;
  c.held_up = {{"pthread_mutex_lock", site, 0.222}, {"pthread_mutex_lock", std::nullopt, 0.151}};
  a.causes.ranked = {c};
  a.causes.held = true;
  EXPECT_EQ(iterate::answer_line(a),
            "Top cause: planted_stall, 58.6% of the latency's variance: 21.3 its own, 22.2 holding up "
            "pthread_mutex_lock (items.c:508) and 15.1 other waits.");
  // No Held part anywhere: the top factor, and no run to read preemption from.
  a.causes.held = false;
  a.factors = {factor("ngx_http_planted_stall", "ngx_http_planted_stall", 0.939, 1)};
  EXPECT_EQ(iterate::answer_line(a), "Top factor: ngx_http_planted_stall, 93.9% of the latency's variance.");
  a.factors.clear();
  EXPECT_EQ(iterate::answer_line(a), "");
}

// Causes (or factors) the runs cannot tell apart are said with the top one: two LevelDB
// sessions ended on AddRecord 6.9% [5.1, 7.9] and on write, which the first
// ranked second at 6.5% [3.4, 8.9]. A cause whose interval stays clear of the
// top's, or that has none, is not named; nor is one not ranked.
TEST(Answer, CausesOrFactorsWhoseIntervalsOverlapTheTopOnesAreNamedWithIt) {
  analyzer::Analysis a;
  a.causes.held = true;
  auto cause = [](const std::string &name, double share, int rank, double lo, double hi) {
    analyzer::Factor c = factor(name, name, share, rank);
    c.own_share = share;
    if (hi > lo) c.ci95 = std::make_pair(lo, hi);
    return c;
  };
  a.causes.ranked = {cause("AddRecord", 0.069, 1, 0.051, 0.079), cause("write", 0.065, 2, 0.034, 0.089),
                     cause("compare_", 0.040, 3, 0.020, 0.050), cause("Arena::Allocate", 0.030, 0, 0.010, 0.060)};
  EXPECT_EQ(iterate::answer_line(a),
            "Top cause: AddRecord, 6.9% of the latency's variance: 6.9 its own. Its 95% interval [5.1, 7.9] "
            "overlaps that of write 6.5% [3.4, 8.9]: the runs do not tell the two apart.");
  a.causes.ranked[2] = cause("compare_", 0.062, 3, 0.042, 0.079);
  a.causes.ranked.push_back(cause("fsync", 0.061, 4, 0.055, 0.066));
  a.causes.ranked.push_back(cause("pwrite", 0.060, 5, 0.052, 0.070));
  a.causes.ranked.push_back(cause("lseek", 0.058, 6, 0.000, 0.000));  // no interval: not named
  EXPECT_EQ(iterate::answer_line(a),
            "Top cause: AddRecord, 6.9% of the latency's variance: 6.9 its own. Its 95% interval [5.1, 7.9] "
            "overlaps those of write 6.5% [3.4, 8.9], compare_ 6.2% [4.2, 7.9], fsync 6.1% [5.5, 6.6] and 1 "
            "more: the runs do not tell them apart.");
  a.causes.ranked.resize(1);
  EXPECT_EQ(iterate::answer_line(a), "Top cause: AddRecord, 6.9% of the latency's variance: 6.9 its own.");
  // No Held part: the top factor, and the factors its interval overlaps.
  a.causes.held = false;
  a.factors = {cause("XLogFlush", 0.349, 1, 0.250, 0.450), cause("LWLockAcquireOrWait", 0.300, 2, 0.200, 0.400),
               cause("WaitLatch", 0.100, 3, 0.050, 0.150)};
  EXPECT_EQ(iterate::answer_line(a),
            "Top factor: XLogFlush, 34.9% of the latency's variance. Its 95% interval [25.0, 45.0] overlaps that "
            "of LWLockAcquireOrWait 30.0% [20.0, 40.0]: the runs do not tell the two apart.");
}

// More than one level a run turned on inject_delay below write_row; it also
// ran inside read_row's call of BufferPool::fetch, which no run instrumented,
// and the sleep it planted there ranked first. Its place is inside fetch:
// that is broken down first. The same path through a function a decision
// broke down (a hook dispatcher found through its reaches) is left as it is.
TEST(Decide, APartInsideAnUninstrumentedCallOfAFunctionTurnedOnAheadBreaksThatCallDown) {
  // root > run_transaction's call of read_row > read_row's call of
  // BufferPool::fetch > inject_delay (entered inside it) > its sleep_for.
  auto site = [](const std::string &caller, const std::string &callee, const std::string &key) {
    analyzer::VarNode n;
    n.key = key;
    n.functions = {callee};
    n.call_site = analyzer::CallSiteInfo{};
    n.call_site->caller = caller;
    n.call_site->callee = callee;
    return n;
  };
  analyzer::Analysis a;
  const std::string k1 = "root/site:run_transaction>read_row#0", k2 = k1 + "/site:read_row>BufferPool::fetch#0",
                    k3 = k2 + "/fn:inject_delay", k4 = k3 + "/site:inject_delay>std::this_thread::sleep_for#0";
  analyzer::VarNode fn;
  fn.key = k3;
  fn.functions = {"inject_delay"};
  fn.children = {site("inject_delay", "std::this_thread::sleep_for", k4)};
  fn.children[0].contribution = 0.6;
  analyzer::VarNode fetch = site("read_row", "BufferPool::fetch", k2);
  fetch.children = {fn};
  analyzer::VarNode read = site("run_transaction", "read_row", k1);
  read.children = {fetch};
  a.tree.key = "root";
  a.tree.children = {read};
  const analyzer::VarNode *sleep = &a.tree.children[0].children[0].children[0].children[0];
  a.factors.push_back(factor("std::this_thread::sleep_for", "std::this_thread::sleep_for", 0.6, 1));
  a.factors.back().instances = {sleep};
  iterate::State s;
  s.broken_down.push_back({"run_transaction", {}, 1});
  s.broken_down.push_back({"read_row", {"run_transaction"}, 2});
  iterate::BrokenDown ahead{"inject_delay", {"write_row"}, 2};
  ahead.ahead = true;
  s.broken_down.push_back(ahead);
  auto probe = [](const std::string &f) {
    iterate::Probe p;
    if (f.rfind("std::", 0) == 0) {
      p.opaque = true;
      p.why_not = "no definition in the tree (a library's or the system's code)";
    }
    return p;
  };
  auto out = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].break_down) << out[0].reason;
  EXPECT_EQ(out[0].functions, (std::vector<std::string>{"BufferPool::fetch"}));
  EXPECT_EQ(out[0].parents, (std::vector<std::string>{"read_row"}));
  EXPECT_NE(out[0].reason.find("inside read_row's call of BufferPool::fetch"), std::string::npos) << out[0].reason;
  // inject_delay broken down by a decision: no gap rule; the sleep is a library's.
  s.broken_down.back().ahead = false;
  out = iterate::suggest(a, s, 0.5, probe);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].break_down) << out[0].reason;
}
