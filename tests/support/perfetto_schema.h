// The rules of the Chrome Trace Event format as Perfetto's JSON importer
// applies them (its SliceTracker and FlowTracker), for tests of
// `vprof analyze --perfetto` (analyzer/report/perfetto.h):
//   - valid JSON, an object with a traceEvents array;
//   - every event has ph, pid and tid; every event but metadata (M) a ts in
//     us, the events in time order;
//   - every X has a dur >= 0, and the X events of one thread nest: no two
//     overlap partially (the importer drops such a slice);
//   - flow events (s, f) pair up by (id, cat, name), s before f, f with
//     bp "e", each right after the zero-length slice at its instant that it
//     binds to;
//   - async slices (b, e) pair up by (id, cat, name), b before e;
//   - every thread and process with an event is named (M thread_name,
//     process_name).
#ifndef VPROF_TESTS_SUPPORT_PERFETTO_SCHEMA_H
#define VPROF_TESTS_SUPPORT_PERFETTO_SCHEMA_H

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace vprof::testing {

// Perfetto reads a ts or dur in us and rounds it to the ns (json_utils).
inline int64_t ns(const nlohmann::json &us) { return std::llround(us.get<double>() * 1000.0); }

// The format's rules, as ui.perfetto.dev's importer applies them.
inline void check_schema(const std::string &text) {
  using nlohmann::json;
  json doc = json::parse(text);  // throws on invalid JSON
  EXPECT_TRUE(doc.is_object());
  const json &events = doc.at("traceEvents");
  EXPECT_TRUE(events.is_array());
  using Track = std::pair<int64_t, int64_t>;  // (pid, tid)
  struct Open {
    int64_t end;
    bool zero;
  };
  std::map<Track, std::vector<Open>> stacks;
  std::map<Track, std::pair<int64_t, bool>> last_slice;  // (ts, zero-length) of the last X
  std::set<Track> used, named_threads;
  std::set<int64_t> used_pids, named_pids;
  std::map<std::tuple<int64_t, std::string, std::string>, std::vector<const json *>> flows, asyncs;
  int64_t last_ts = std::numeric_limits<int64_t>::min();
  for (const json &e : events) {
    SCOPED_TRACE(e.dump());
    // Every event has a phase, a pid and a tid.
    const std::string ph = e.at("ph");
    EXPECT_TRUE(e.at("pid").is_number_integer());
    EXPECT_TRUE(e.at("tid").is_number_integer());
    const Track track{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()};
    if (ph == "M") {
      EXPECT_TRUE(e.at("args").at("name").is_string());
      if (e["name"] == "thread_name") named_threads.insert(track);
      if (e["name"] == "process_name") named_pids.insert(track.first);
      continue;
    }
    used.insert(track);
    used_pids.insert(track.first);
    // Timestamps: numbers of us from the trace's first, in order.
    ASSERT_TRUE(e.at("ts").is_number());
    const int64_t ts = ns(e["ts"]);
    EXPECT_GE(ts, 0);
    EXPECT_GE(ts, last_ts) << "events out of time order";
    last_ts = ts;
    EXPECT_TRUE(e.at("name").is_string());
    EXPECT_TRUE(e.at("cat").is_string());
    if (ph == "X") {
      ASSERT_TRUE(e.contains("dur")) << "an X without dur";
      ASSERT_TRUE(e["dur"].is_number());
      const int64_t dur = ns(e["dur"]);
      EXPECT_GE(dur, 0);
      // Nesting on one thread (SliceTracker::MaybeCloseStack): slices that
      // ended before ts (or at it, unless both are zero-length) are closed;
      // the one still open must contain this one.
      auto &st = stacks[track];
      while (!st.empty() && (st.back().end < ts || (st.back().end == ts && !(st.back().zero && dur == 0))))
        st.pop_back();
      if (!st.empty()) EXPECT_LE(ts + dur, st.back().end) << "partial overlap on one thread";
      st.push_back({ts + dur, dur == 0});
      last_slice[track] = {ts, dur == 0};
    } else if (ph == "s" || ph == "f") {
      ASSERT_TRUE(e.at("id").is_number_integer());
      // Bound to the zero-length slice made for it, just before it on its track.
      auto it = last_slice.find(track);
      ASSERT_NE(it, last_slice.end()) << "a flow event with no slice on its thread";
      EXPECT_EQ(it->second.first, ts) << "a flow event not at its slice";
      EXPECT_TRUE(it->second.second);
      if (ph == "f") EXPECT_EQ(e.at("bp"), "e");
      flows[{e["id"].get<int64_t>(), e["cat"], e["name"]}].push_back(&e);
    } else if (ph == "b" || ph == "e") {
      ASSERT_TRUE(e.at("id").is_number_integer());
      asyncs[{e["id"].get<int64_t>(), e["cat"], e["name"]}].push_back(&e);
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }
  // Flows pair up: one s, then one f, by (id, cat, name), Perfetto's v1 key.
  for (const auto &[key, v] : flows) {
    ASSERT_EQ(v.size(), 2u) << "flow " << std::get<0>(key);
    EXPECT_EQ((*v[0])["ph"], "s");
    EXPECT_EQ((*v[1])["ph"], "f");
    EXPECT_LE(ns((*v[0])["ts"]), ns((*v[1])["ts"]));
  }
  // Async slices: b then e, in pairs, on one key.
  for (const auto &[key, v] : asyncs) {
    ASSERT_EQ(v.size() % 2, 0u);
    for (size_t i = 0; i < v.size(); i += 2) {
      EXPECT_EQ((*v[i])["ph"], "b");
      EXPECT_EQ((*v[i + 1])["ph"], "e");
      EXPECT_LE(ns((*v[i])["ts"]), ns((*v[i + 1])["ts"]));
      if (i) EXPECT_LE(ns((*v[i - 1])["ts"]), ns((*v[i])["ts"])) << "overlapping slices on one key";
    }
  }
  // Every thread and process with an event has a name.
  for (const Track &t : used) EXPECT_TRUE(named_threads.count(t)) << "tid " << t.second;
  for (int64_t p : used_pids) EXPECT_TRUE(named_pids.count(p)) << "pid " << p;
}

}  // namespace vprof::testing

#endif  // VPROF_TESTS_SUPPORT_PERFETTO_SCHEMA_H
