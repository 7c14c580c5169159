#include "iterate/state.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/schema.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vprof::iterate {

bool State::is_broken_down(const std::string &f) const {
  return std::any_of(broken_down.begin(), broken_down.end(),
                     [&](const BrokenDown &b) { return b.function == f; });
}

std::vector<std::string> State::chain(const std::string &f) const {
  std::vector<std::string> out;
  std::vector<std::string> todo{f};
  while (!todo.empty()) {
    std::string cur = todo.back();
    todo.pop_back();
    if (cur.empty() || std::find(out.begin(), out.end(), cur) != out.end()) continue;
    out.push_back(cur);
    auto it = std::find_if(broken_down.begin(), broken_down.end(),
                           [&](const BrokenDown &b) { return b.function == cur; });
    if (it != broken_down.end()) todo.insert(todo.end(), it->parents.rbegin(), it->parents.rend());
  }
  return out;
}

namespace {

json decision_json(const Decision &d, bool with_iteration) {
  json j = {{"factor", d.factor}, {"decision", d.decision}, {"reason", d.reason},
            {"value", d.value ? json(*d.value) : json(nullptr)}, {"fragile", d.fragile}};
  if (with_iteration) j["iteration"] = d.iteration;
  return j;
}

}  // namespace

Expected<State> load_state(const std::string &path) {
  State s;
  if (!fs::exists(path)) return s;
  std::ifstream in(path);
  try {
    json j = json::parse(in);
    if (auto v = schema::check(j, path, schema::kSessionState); !v) return v.error();
    for (const auto &b : j.at("broken_down"))
    {
      BrokenDown d{b.at("function"), {}, b.at("iteration")};
      if (b.contains("parents")) d.parents = b.at("parents").get<std::vector<std::string>>();
      else if (!b.value("parent", "").empty()) d.parents = {b.at("parent")};  // sessions before parents
      d.holder = b.value("holder", false);  // sessions before causes: none
      d.cause_place = b.value("cause_place", false);
      d.ahead = b.value("ahead", false);
      s.broken_down.push_back(std::move(d));
    }
    for (const auto &i : j.at("iterations")) {
      Iteration it;
      it.number = i.at("number");
      it.instrumented = i.at("instrumented").get<std::vector<std::string>>();
      it.trace_dir = i.at("trace_dir");
      it.failed = i.value("failed", "");
      if (i.contains("phase")) {
        const std::string p = i.at("phase");
        if (p == phase_name(Phase::Ran)) it.phase = Phase::Ran;
        else if (p == phase_name(Phase::Decided)) it.phase = Phase::Decided;
        else if (p != phase_name(Phase::Planned)) throw std::invalid_argument("iteration phase '" + p + "'");
      } else if (i.at("analyzed").get<bool>()) {  // states saved before the phase: two booleans
        it.phase = i.value("decided", true) ? Phase::Decided : Phase::Ran;
      }
      it.files_changed = i.value("files_changed", -1);
      it.build_seconds = i.value("build_seconds", -1.0);
      it.prebuilt = i.value("prebuilt", std::vector<std::string>{});
      it.ran_on_build_of = i.value("ran_on_build_of", 0);
      it.again_of = i.value("again_of", 0);
      s.iterations.push_back(std::move(it));
    }
    for (const auto &d : j.at("decisions")) {
      Decision x{d.at("iteration"), d.at("factor"), d.at("decision"), d.at("reason"), {}, false};
      if (d.contains("value") && d.at("value").is_number()) x.value = d.at("value").get<double>();
      x.fragile = d.value("fragile", false);
      s.decisions.push_back(std::move(x));
    }
    s.pending = j.at("pending").get<std::vector<std::string>>();
    s.again = j.value("again", 0);
    s.sync_packs_added = j.value("sync_packs_added", std::vector<std::string>{});
    s.done = j.at("done");
    s.stop_reason = j.value("stop_reason", "");
  } catch (const std::exception &e) {  // json's, and a phase no vprof writes
    return Error{fmt::format("{}: the session state is damaged ({}); remove it to start over",
                             path, e.what())};
  }
  return s;
}

const char *phase_name(Phase p) {
  switch (p) {
    case Phase::Planned: return "planned";
    case Phase::Ran: return "ran";
    case Phase::Decided: return "decided";
  }
  return "planned";
}

namespace {

std::string minutes(double s) {
  const long t = std::lround(s);
  return t >= 60 ? fmt::format("{} min {} s", t / 60, t % 60) : fmt::format("{} s", t);
}

}  // namespace

std::string builds_summary(const State &s) {
  size_t builds = 0, reused = 0;
  double total = 0;
  const Iteration *first = nullptr, *longest = nullptr;
  size_t longest_joined = 0, longest_left = 0;
  // What a build held: its set and the functions built ahead of it.
  auto held = [](const Iteration &it) {
    std::vector<std::string> all = it.instrumented;
    all.insert(all.end(), it.prebuilt.begin(), it.prebuilt.end());
    return all;
  };
  std::vector<std::string> before;  // what the last build before this one held
  bool any_before = false;
  for (const Iteration &it : s.iterations) {
    if (it.ran_on_build_of > 0) ++reused;
    if (it.build_seconds < 0) {
      if (it.ran_on_build_of == 0) {  // a state saved before builds were kept: its set was built
        before = held(it);
        any_before = true;
      }
      continue;
    }
    ++builds;
    total += it.build_seconds;
    if (!first) first = &it;
    const std::vector<std::string> now = held(it);
    if (any_before && (!longest || it.build_seconds > longest->build_seconds)) {
      longest = &it;
      longest_joined = longest_left = 0;
      for (const auto &f : now) longest_joined += std::find(before.begin(), before.end(), f) == before.end();
      for (const auto &f : before) longest_left += std::find(now.begin(), now.end(), f) == now.end();
    }
    before = now;
    any_before = true;
  }
  if (!builds) return "";
  std::string out = fmt::format("Builds: {} in {}: iteration {}, the {} ({} files rewritten, {})", builds,
                                minutes(total), first->number, first == &s.iterations.front() ? "first" : "first this session",
                                first->files_changed, minutes(first->build_seconds));
  if (builds > 1 && longest)
    out += fmt::format("; {} as functions joined or left the build (the longest: iteration {}, {} joined, {} left, {} "
                       "files rewritten, {})",
                       builds - 1, longest->number, longest_joined, longest_left, longest->files_changed,
                       minutes(longest->build_seconds));
  if (reused)
    out += reused == 1 ? "; 1 iteration ran on an earlier build (its own probes on, the rest dormant)"
                       : fmt::format("; {} iterations ran on an earlier build (their own probes on, the rest dormant)",
                                     reused);
  return out + ".";
}

Status save_state(const State &s, const std::string &path) {
  json j = schema::versioned(schema::kSessionState);
  j["broken_down"] = json::array();
  for (const auto &b : s.broken_down)
    j["broken_down"].push_back(
        {{"function", b.function}, {"parents", b.parents}, {"iteration", b.iteration}, {"holder", b.holder},
         {"cause_place", b.cause_place}, {"ahead", b.ahead}});
  j["iterations"] = json::array();
  for (const auto &i : s.iterations)
    j["iterations"].push_back({{"number", i.number}, {"instrumented", i.instrumented},
                               {"trace_dir", i.trace_dir}, {"phase", phase_name(i.phase)}, {"failed", i.failed},
                               {"files_changed", i.files_changed}, {"build_seconds", i.build_seconds},
                               {"prebuilt", i.prebuilt}, {"ran_on_build_of", i.ran_on_build_of},
                               {"again_of", i.again_of}});
  j["decisions"] = json::array();
  for (const auto &d : s.decisions)
    j["decisions"].push_back(decision_json(d, true));
  j["pending"] = s.pending;
  j["again"] = s.again;
  j["sync_packs_added"] = s.sync_packs_added;
  j["done"] = s.done;
  j["stop_reason"] = s.stop_reason;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) return Error{fmt::format("{}: cannot write the session state", tmp)};
    out << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    if (!out.flush()) return Error{fmt::format("{}: write failed", tmp)};
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Error{fmt::format("{}: {}", path, ec.message())};
  return Status::Ok();
}

json report_json(const State &s, const std::string &session_dir) {
  json iterations = json::array();
  int run = 0;  // the analysis numbers the analyzed iterations' traces from 0 (session.cc)
  for (const auto &it : s.iterations) {
    json decisions = json::array();
    for (const auto &d : s.decisions)
      if (d.iteration == it.number) decisions.push_back(decision_json(d, false));
    iterations.push_back({{"iteration", it.number},
                          {"run", it.analyzed() ? json(run++) : json(nullptr)},
                          {"instrumented", it.instrumented},
                          {"trace_dir", it.trace_dir},
                          {"again_of", it.again_of > 0 ? json(it.again_of) : json(nullptr)},
                          {"decisions", std::move(decisions)}});
  }
  return {{"session", {{"dir", session_dir}, {"done", s.done}, {"stop_reason", s.stop_reason}}},
          {"iterations", std::move(iterations)}};
}

}  // namespace vprof::iterate
