// The one owner of a trace directory: reading (TraceDir, the stream and the
// pipeline's analyze_dirs all list and open through it) and recording
// (Recording: lock, the previous trace kept until a run records, a second
// run into the same directory refused, runs added to a trace).
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analyzer/pipeline/run_summary.h"
#include "analyzer/pipeline/trace_dirs.h"
#include "analyzer/read/recording.h"
#include "analyzer/report/reporter.h"
#include "analyzer/read/trace_dir.h"
#include "analyzer/read/trace_stream.h"
#include "tests/support/synth_trace.h"
#include "tests/support/temp_dir.h"

namespace fs = std::filesystem;
namespace trace = vprof::trace;
using vprof::testing::SynthThread;

namespace {

std::string fresh(const std::string &name) { return vprof::testing::fresh_dir("vprof-tracedir", name); }

// One thread, `n` intervals of one function: 4 program records each.
void write_thread(const std::string &dir, uint32_t pid, uint32_t tid, int n) {
  SynthThread t(dir, pid, tid);
  for (int i = 0; i < n; ++i) {
    const uint64_t ts = 1000 + uint64_t(i) * 100;
    t.interval_begin(ts, uint64_t(tid) * 1000 + uint64_t(i) + 1);
    t.fn_enter(ts + 10, 1);
    t.fn_exit(ts + 60, 1);
    t.interval_end(ts + 80, uint64_t(tid) * 1000 + uint64_t(i) + 1);
  }
  t.close();
}

std::vector<std::string> listing(const std::string &dir) {
  std::vector<std::string> out;
  for (const auto &e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TraceDir, ListsThreadFilesOnceSortedAndCountsTheProgramsRecords) {
  const std::string dir = fresh("count");
  write_thread(dir, 7, 12, 10);
  write_thread(dir, 7, 11, 5);
  std::ofstream(dir + "/notes.txt") << "not a trace file";
  auto d = trace::TraceDir::open(dir);
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ((*d)->thread_files(), (std::vector<std::string>{"t-7-11.vpt", "t-7-12.vpt"}));
  const trace::RecordCount c = (*d)->count();
  EXPECT_EQ(c.thread_files, 2u);
  EXPECT_EQ(c.unreadable, 0u);
  EXPECT_EQ(c.records, 15u * 4);  // the thread-exit records are the runtime's, not counted
}

TEST(TraceDir, AThreadFileThatIsALinkIsNeitherCountedNorDecoded) {
  const std::string dir = fresh("link"), elsewhere = fresh("link-target");
  write_thread(dir, 7, 11, 3);
  write_thread(elsewhere, 7, 12, 50);
  fs::create_symlink(elsewhere + "/t-7-12.vpt", dir + "/t-7-12.vpt");
  auto d = trace::TraceDir::open(dir);
  ASSERT_TRUE(d);
  const trace::RecordCount c = (*d)->count();
  EXPECT_EQ(c.thread_files, 1u);
  EXPECT_EQ(c.unreadable, 1u);
  EXPECT_EQ(c.records, 12u);
  auto s = trace::TraceStream::open(std::shared_ptr<const trace::TraceDir>(std::move(*d)));
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)->sources().size(), 1u);
  EXPECT_NE((*s)->first_error().find("a symbolic link, not a file a recording process made; not read"),
            std::string::npos)
      << (*s)->first_error();
}

TEST(TraceDir, ADirectoryThatCannotBeOpenedIsOneLineNamingIt) {
  auto d = trace::TraceDir::open("/nonexistent/vprof-trace");
  ASSERT_FALSE(d);
  EXPECT_EQ(d.error().message, "/nonexistent/vprof-trace: cannot open trace directory: No such file or directory");
}

TEST(Recording, ASecondRecordingIntoTheSameDirectoryIsRefusedWhileTheFirstHoldsIt) {
  const std::string dir = fresh("lock");
  auto first = trace::Recording::start(dir);
  ASSERT_TRUE(first) << first.error().message;
  auto second = trace::Recording::start(dir);
  ASSERT_FALSE(second);
  EXPECT_NE(second.error().message.find("another vprof run (pid " + std::to_string(getpid()) + ") is recording here"),
            std::string::npos)
      << second.error().message;
  auto added = trace::Recording::add_to(dir);  // the lock is the lock, whatever the run
  EXPECT_FALSE(added);
  (*first)->finish([](const std::string &) {});
  EXPECT_TRUE(trace::Recording::start(dir)) << "finished: the lock is free";
}

TEST(Recording, ThePreviousTraceIsKeptUntilARunRecordsAndGoesOnceOneDoes) {
  const std::string dir = fresh("old");
  write_thread(dir, 7, 11, 4);
  {
    auto r = trace::Recording::start(dir);
    ASSERT_TRUE(r);
    EXPECT_EQ((*r)->env(), (std::vector<std::pair<std::string, std::string>>{{"VPROF_TRACE_DIR", (*r)->dir()}}));
    EXPECT_TRUE(fs::exists(dir + "/.old/t-7-11.vpt"));
    EXPECT_TRUE(fs::exists(dir + "/p-0.vpp")) << "the probe becomes the process file of no process";
    const auto out = (*r)->finish([](const std::string &) {});  // the command recorded nothing
    EXPECT_EQ(out.trace->count().records, 0u);
    EXPECT_EQ(out.kept_old, (*r)->dir() + "/.old");
  }
  {
    auto r = trace::Recording::start(dir);  // the previous trace is put back first, then retired again
    ASSERT_TRUE(r);
    EXPECT_TRUE(fs::exists(dir + "/.old/t-7-11.vpt"));
    write_thread(dir, 8, 21, 2);  // this run's command
    const auto out = (*r)->finish([](const std::string &) {});
    EXPECT_EQ(out.trace->count().records, 8u);
    EXPECT_EQ(out.kept_old, "");
    EXPECT_FALSE(fs::exists(dir + "/.old"));
  }
  EXPECT_EQ(listing(dir), (std::vector<std::string>{".lock", "p-0.vpp", "t-8-21.vpt"}));
}

TEST(Recording, ARunAddedToATraceKeepsWhatIsThere) {
  const std::string dir = fresh("add");
  {
    auto r = trace::Recording::start(dir);
    ASSERT_TRUE(r);
    write_thread(dir, 8, 21, 2);
    (*r)->finish([](const std::string &) {});
  }
  auto r = trace::Recording::add_to(dir);
  ASSERT_TRUE(r);
  write_thread(dir, 9, 31, 3);
  const auto out = (*r)->finish([](const std::string &) {});
  EXPECT_EQ(out.trace->count().records, 20u);
  EXPECT_EQ(listing(dir), (std::vector<std::string>{".lock", "p-0.vpp", "t-8-21.vpt", "t-9-31.vpt"}));
}

TEST(Recording, NamesAnotherUserPlantedForTheProbeStopNothing) {
  // The probe's name was DIR/.vprof-probe-PID: a directory planted under the
  // next pids made every run into a shared directory fail. It is random now.
  const std::string dir = fresh("planted");
  for (int d = 0; d < 4; ++d) fs::create_directories(dir + "/.vprof-probe-" + std::to_string(getpid() + d) + "/x");
  auto r = trace::Recording::start(dir);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_TRUE(fs::exists(dir + "/p-0.vpp"));
  EXPECT_EQ(fs::status(dir + "/p-0.vpp").permissions() & fs::perms::others_write, fs::perms::none);
}

TEST(Recording, AManifestThatIsNotJsonIsRefusedBeforeAnythingMoves) {
  const std::string dir = fresh("manifest");
  write_thread(dir, 7, 11, 4);
  std::ofstream(dir + "/m.json") << "{ not json";
  auto r = trace::Recording::start(dir, dir + "/m.json");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, dir + "/m.json: not a manifest: not valid JSON");
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"m.json", "t-7-11.vpt"}));
}

TEST(AnalyzeDirs, WhatTheReadersSayGoesToTheCallerNotToStderr) {
  const std::string dir = fresh("say");
  write_thread(dir, 7, 11, 20);
  std::ofstream(dir + "/p-9.vpp") << "short";  // a damaged process file
  std::vector<std::string> said;
  vprof::analyzer::AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto a = vprof::analyzer::analyze_dirs({dir}, opt, "", [&](const std::string &l) { said.push_back(l); });
  ASSERT_TRUE(a) << a.error().message;
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0].rfind("warning: " + dir + "/p-9.vpp: truncated", 0), 0u) << said[0];
}

// A run a session analysed is kept, reduced, and combined again with the
// next: what it gives is what reading every trace again gives, and a kept
// run needs its trace no more.
TEST(AnalyzeDirs, AKeptRunIsTakenNotReadAgainAndTheAnalysisIsTheSame) {
  std::vector<std::string> dirs;
  for (int r = 0; r < 3; ++r) {
    dirs.push_back(fresh("kept-" + std::to_string(r)));
    SynthThread t(dirs.back(), 7, 11);
    for (int i = 0; i < 40; ++i) {  // f's time varies from run to run and interval to interval
      const uint64_t ts = 1000 + uint64_t(i) * 1000, f = 50 + uint64_t((i * 37 + r * 11) % 97) * 3;
      t.interval_begin(ts, uint64_t(i) + 1);
      t.fn_enter(ts + 10, 1);
      t.fn_exit(ts + 10 + f, 1);
      t.interval_end(ts + 20 + f + uint64_t(i % 5), uint64_t(i) + 1);
    }
    t.close();
  }
  vprof::analyzer::AnalyzeOptions opt;
  auto quiet = [](const std::string &) {};
  auto json_of = [](const vprof::analyzer::Analysis &a) {
    std::ostringstream out;
    EXPECT_TRUE(vprof::analyzer::make_json_reporter()->write(a, out).ok());
    return out.str();
  };
  auto all = vprof::analyzer::analyze_dirs(dirs, opt, "", quiet);
  ASSERT_TRUE(all) << all.error().message;
  const std::string read_again = json_of(**all);

  vprof::analyzer::AnalyzedRuns kept;
  auto two = vprof::analyzer::analyze_dirs({dirs[0], dirs[1]}, opt, "", quiet, &kept);
  ASSERT_TRUE(two) << two.error().message;
  vprof::analyzer::keep_runs(*two, kept, "");
  EXPECT_EQ(*two, nullptr);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_TRUE(kept.begin()->second->paths.cells.empty()) << "reduced: its leaf cells are in its columns";
  fs::remove_all(dirs[0]);
  fs::remove_all(dirs[1]);
  auto three = vprof::analyzer::analyze_dirs(dirs, opt, "", quiet, &kept);
  ASSERT_TRUE(three) << three.error().message;
  EXPECT_TRUE(kept.empty());
  EXPECT_EQ(json_of(**three), read_again);

  // A run kept at another index is read again (its tree's nodes carry the
  // index); its trace is gone, so that fails.
  vprof::analyzer::keep_runs(*three, kept, dirs[2]);  // all but the run still being recorded into
  ASSERT_EQ(kept.size(), 2u);
  auto shifted = vprof::analyzer::analyze_dirs({dirs[1], dirs[2]}, opt, "", quiet, &kept);
  EXPECT_FALSE(shifted) << "run 1 taken as run 0";
}

// A session writes each run's summary as it keeps the run, and a session
// resumed in a new process takes the run from it: the analysis is the one
// every trace read again gives, with the traces' thread files gone. A
// summary cut short or damaged is said, and the trace read instead.
TEST(AnalyzeDirs, ARunTakenFromItsSummaryIsItsTracesRun) {
  std::vector<std::string> dirs;
  for (int r = 0; r < 3; ++r) {
    dirs.push_back(fresh("summary-" + std::to_string(r)));
    SynthThread t(dirs.back(), 7, 11);
    for (int i = 0; i < 40; ++i) {
      const uint64_t ts = 1000 + uint64_t(i) * 1000, f = 50 + uint64_t((i * 37 + r * 11) % 97) * 3;
      t.interval_begin(ts, uint64_t(i) + 1);
      t.fn_enter(ts + 10, 1);
      t.site_begin(ts + 12, 1);
      t.site_end(ts + 12 + f / 2, 1);
      t.fn_exit(ts + 10 + f, 1);
      t.interval_end(ts + 20 + f + uint64_t(i % 5), uint64_t(i) + 1);
    }
    t.close();
  }
  vprof::analyzer::AnalyzeOptions opt;
  std::vector<std::string> said;
  auto say = [&](const std::string &l) { said.push_back(l); };
  auto text_of = [](const vprof::analyzer::Analysis &a) {
    std::ostringstream json, text;
    EXPECT_TRUE(vprof::analyzer::make_json_reporter()->write(a, json).ok());
    EXPECT_TRUE(vprof::analyzer::make_terminal_reporter()->write(a, text).ok());
    return json.str() + text.str();
  };
  auto all = vprof::analyzer::analyze_dirs(dirs, opt, "", say);
  ASSERT_TRUE(all) << all.error().message;
  const std::string read_again = text_of(**all);

  opt.run_summaries = true;
  vprof::analyzer::AnalyzedRuns kept;
  auto two = vprof::analyzer::analyze_dirs({dirs[0], dirs[1]}, opt, "", say, &kept);
  ASSERT_TRUE(two) << two.error().message;
  const std::string v1 = dirs[0] + "/run.summary.v1";  // the form vprof wrote before 2026-12-07
  ASSERT_TRUE(vprof::analyzer::save_run_summary_as(*(*two)->runs[0], v1, 1));
  vprof::analyzer::keep_runs(*two, kept, "", say, true);
  ASSERT_TRUE(said.empty()) << said[0];
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(fs::exists(dirs[size_t(r)] + "/run.summary"));
    for (const auto &e : fs::directory_iterator(dirs[size_t(r)]))  // the thread and process files go
      if (e.path().extension() == ".vpt" || e.path().extension() == ".vpp") fs::remove(e.path());
  }
  kept.clear();  // a new process: nothing in memory
  auto three = vprof::analyzer::analyze_dirs(dirs, opt, "", say, &kept);
  ASSERT_TRUE(three) << three.error().message;
  EXPECT_TRUE(said.empty()) << said[0];
  EXPECT_TRUE((*three)->runs[0]->summarized);
  EXPECT_FALSE((*three)->runs[2]->summarized);
  // A run from its summary keeps its columns, not the cells they were made
  // from (half of a merged analysis' memory on PostgreSQL's 18 summaries).
  EXPECT_TRUE((*three)->runs[0]->paths.cells.empty());
  EXPECT_GT((*three)->runs[0]->columns.total.nonzeros(), 0u);
  EXPECT_EQ(text_of(**three), read_again);
  // By hand (vprof analyze, no run_summaries): a directory whose thread
  // files are gone is read from its summary, the same report; one that
  // holds them is read from its trace.
  {
    vprof::analyzer::AnalyzeOptions by_hand;
    auto again = vprof::analyzer::analyze_dirs(dirs, by_hand, "", say);
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(said.empty()) << said[0];
    EXPECT_TRUE((*again)->runs[1]->summarized);
    EXPECT_FALSE((*again)->runs[2]->summarized);
    EXPECT_EQ(text_of(**again), read_again);
  }
  // Version 1's summary (cells of 8 bytes) is read too, the same run; the
  // varints of version 2 take less.
  EXPECT_LT(fs::file_size(dirs[0] + "/run.summary"), fs::file_size(v1));
  fs::rename(v1, dirs[0] + "/run.summary");
  {
    auto old = vprof::analyzer::analyze_dirs(dirs, opt, "", say, &kept);
    ASSERT_TRUE(old) << old.error().message;
    EXPECT_TRUE(said.empty()) << said[0];
    EXPECT_TRUE((*old)->runs[0]->summarized);
    EXPECT_EQ(text_of(**old), read_again);
  }

  // Cut short, or another file: said, and the trace read (here it is gone,
  // so that fails naming the directory).
  const std::string s1 = dirs[1] + "/run.summary";
  const auto size = fs::file_size(s1);
  fs::resize_file(s1, size - 3);
  auto cut = vprof::analyzer::analyze_dirs(dirs, opt, "", say, &kept);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "warning: " + s1 + ": not a run summary this vprof reads: cut short; reading the trace instead");
  EXPECT_FALSE(cut);
  // Another link to it (a file another user linked in): not read either.
  said.clear();
  fs::resize_file(s1, size);
  fs::create_hard_link(s1, dirs[1] + "/other-link");
  auto linked = vprof::analyzer::analyze_dirs(dirs, opt, "", say, &kept);
  EXPECT_FALSE(linked);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_EQ(said[0], "warning: " + s1 + ": has other hard links (it is another name of some file elsewhere): not a "
                     "summary a session of yours wrote; not read; reading the trace instead");
  // Without run_summaries (vprof analyze), the summary of a directory that
  // holds its trace is not read.
  opt.run_summaries = false;
  auto plain = vprof::analyzer::analyze_dirs({dirs[2]}, opt, "", say, &kept);
  ASSERT_TRUE(plain);
  EXPECT_FALSE((*plain)->runs[0]->summarized);
}

// A session's `again` run says in its trace which run it repeats, so that
// `vprof analyze` of the session's traces by hand grafts none of its
// breakdowns, as the session's own analysis does not (a later run's
// breakdown of a leaf is grafted: here the repeat also entered fn#2 under
// site#1, which the first run timed whole). Alone, or after other runs, it
// is an ordinary run; the next run recorded into its directory is not one.
TEST(AnalyzeDirs, ARunThatRepeatsAnEarlierOneGraftsNothingWhenReadAfterIt) {
  auto record = [](const std::string &dir, bool broken_down, unsigned salt) {
    SynthThread t(dir, 7, 11);
    for (int i = 0; i < 60; ++i) {
      const uint64_t ts = 1000 + uint64_t(i) * 10000, a = 50 + uint64_t((i * 37 + salt) % 97) * 5,
                     b = 40 + uint64_t((i * 53 + salt) % 89) * 4;
      t.interval_begin(ts, uint64_t(i) + 1);
      t.fn_enter(ts + 1, 1);
      t.site_begin(ts + 2, 1);
      if (broken_down) {
        t.fn_enter(ts + 3, 2);
        t.site_begin(ts + 4, 2);
        t.fn_enter(ts + 5, 3);
        t.fn_exit(ts + 5 + a, 3);
        t.site_end(ts + 6 + a, 2);
        t.fn_exit(ts + 7 + a, 2);
      }
      t.site_end(ts + 8 + a, 1);
      t.fn_exit(ts + 9 + a + b, 1);
      t.interval_end(ts + 10 + a + b, uint64_t(i) + 1);
    }
    t.close();
  };
  const std::string first = fresh("repeated-0"), again = fresh("repeated-1");
  record(first, false, 1);
  {
    auto r = trace::Recording::start(again);
    ASSERT_TRUE(r) << r.error().message;
    record(again, true, 2);
    ASSERT_TRUE((*r)->mark_repeat_of(first));
    (void)(*r)->finish([](const std::string &) {});
  }
  EXPECT_EQ(trace::repeat_of(again), fs::weakly_canonical(first).string());
  vprof::analyzer::AnalyzeOptions opt;
  opt.factors.bootstrap = 0;
  auto quiet = [](const std::string &) {};
  auto json_of = [](const vprof::analyzer::Analysis &a) {
    std::ostringstream out;
    EXPECT_TRUE(vprof::analyzer::make_json_reporter()->write(a, out).ok());
    return out.str();
  };
  auto both = vprof::analyzer::analyze_dirs({first, again}, opt, "", quiet);
  ASSERT_TRUE(both) << both.error().message;
  EXPECT_TRUE((*both)->runs[1]->repeat);
  EXPECT_EQ(json_of(**both).find("\"site#2\""), std::string::npos) << "the repeat's breakdown grafted";
  auto alone = vprof::analyzer::analyze_dirs({again}, opt, "", quiet);
  ASSERT_TRUE(alone) << alone.error().message;
  EXPECT_NE(json_of(**alone).find("\"site#2\""), std::string::npos);
  // The same two runs, the second not marked: its breakdown is grafted.
  const std::string other = fresh("repeated-2");
  record(other, true, 2);
  auto grafted = vprof::analyzer::analyze_dirs({first, other}, opt, "", quiet);
  ASSERT_TRUE(grafted) << grafted.error().message;
  EXPECT_FALSE((*grafted)->runs[1]->repeat);
  EXPECT_NE(json_of(**grafted).find("\"site#2\""), std::string::npos);
  // A later run recorded into the repeat's directory retires its mark with its trace.
  {
    auto r = trace::Recording::start(again);
    ASSERT_TRUE(r) << r.error().message;
    record(again, true, 3);
    (void)(*r)->finish([](const std::string &) {});
  }
  EXPECT_EQ(trace::repeat_of(again), "");
}

}  // namespace
