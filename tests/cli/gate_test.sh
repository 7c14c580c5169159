#!/usr/bin/env bash
# vprof analyze --save, vprof diff and vprof gate on real runs of minidb_bench:
# a saved profile compares like its trace, a planted delay fails
# the gate at two runs a side (exit 1, naming the change) and is inconclusive
# at one (exit 3: one run a side is never a sure verdict), the same
# run is inconclusive, and bad baselines are exit 2 with one line naming the
# file and what was wrong.
# The delay (exp, mean 3 ms per transaction, on a run whose transactions
# take tens of microseconds) is far above any machine noise; nothing here
# compares wall-clock times with a bound.
# Usage: gate_test.sh VPROF MINIDB_BENCH
set -uo pipefail
vprof=$1 bench=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL: $*"; failed=$((failed + 1)); }
expect_rc() {  # NAME WANT GOT
  if [ "$2" = "$3" ]; then ok; else bad "$1: exit $3, expected $2 ($(head -c 300 "$tmp/err"))"; fi
}
expect_err() {  # NAME TEXT: stderr is one line and holds TEXT
  if [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -qF -- "$2" "$tmp/err"; then ok; else bad "$1: stderr: $(cat "$tmp/err")"; fi
}
record() {  # DIR [bench flags]
  local d=$1
  shift
  "$vprof" run --trace-dir "$tmp/$d" -- "$bench" --flush lazy --threads 2 --txns 400 \
    --dir "$tmp/data" "$@" >/dev/null 2>&1 || bad "recording $d"
}

record base --seed 1
record slow --seed 2 --inject-delay run_transaction=exp:3ms
record base2 --seed 3
record slow2 --seed 4 --inject-delay run_transaction=exp:3ms
"$vprof" analyze "$tmp/base" --bootstrap 0 --save "$tmp/base.vprof" > /dev/null 2>"$tmp/err"
expect_rc "analyze --save" 0 $?
[ -s "$tmp/base.vprof" ] && ok || bad "analyze --save wrote nothing"

# The same run against itself, as a profile and as a trace directory: 400
# intervals a side cannot rule out +10% of variance (each side resampled; a
# few long transactions make the variance's interval span orders of
# magnitude), so the gate says it cannot tell: exit 3, how many runs would
# decide, a <skipped> JUnit case. --inconclusive maps it.
"$vprof" gate --baseline "$tmp/base.vprof" "$tmp/base" --junit "$tmp/unsure.xml" --json "$tmp/unsure.json" \
  --markdown "$tmp/unsure.md" >"$tmp/out" 2>"$tmp/err"
expect_rc "same run" 3 $?
grep -Eq "^INCONCLUSIVE: .*reaches both sides of .*runs a side would (be needed to )?decide" "$tmp/out" && ok ||
  bad "same run: $(tail -1 "$tmp/out")"
grep -q '<skipped message="INCONCLUSIVE: ' "$tmp/unsure.xml" && ok || bad "inconclusive junit: $(cat "$tmp/unsure.xml")"
python3 - "$tmp/unsure.json" <<'PY' && ok || bad "inconclusive json"
import json, sys
g = json.load(open(sys.argv[1]))["gate"]
assert g["verdict"] == "inconclusive" and g["regression"] is False, g
assert g["runs_needed"] == -1 or g["runs_needed"] > 1, g
assert any(c["unsure"] for c in g["checks"]), g
PY
grep -q "^### vprof gate: .* inconclusive" "$tmp/unsure.md" && ok || bad "markdown: $(head -3 "$tmp/unsure.md")"
"$vprof" gate --baseline "$tmp/base.vprof" "$tmp/base" --inconclusive pass --junit "$tmp/pass.xml" >/dev/null 2>&1
expect_rc "same run, --inconclusive pass" 0 $?
grep -q 'failures="0" errors="0"' "$tmp/pass.xml" && ! grep -q skipped "$tmp/pass.xml" && ok ||
  bad "pass junit: $(cat "$tmp/pass.xml")"
"$vprof" gate --baseline "$tmp/base.vprof" "$tmp/base" --inconclusive fail --junit "$tmp/f.xml" >/dev/null 2>&1
expect_rc "same run, --inconclusive fail" 1 $?
grep -q '<failure message="INCONCLUSIVE: ' "$tmp/f.xml" && ok || bad "fail junit: $(cat "$tmp/f.xml")"

# The planted delay, two runs a side: exit 1, the verdict on stderr and in
# the JUnit file.
"$vprof" gate --baseline-runs "$tmp/base.vprof" "$tmp/base2" --runs "$tmp/slow" "$tmp/slow2" --junit "$tmp/fail.xml" \
  --json "$tmp/gate.json" --markdown "$tmp/gate.md" >"$tmp/out" 2>"$tmp/err"
expect_rc "planted delay" 1 $?
# The verdict, then (below 3 runs a side) the warning that runs' differences are underrated.
head -1 "$tmp/err" | grep -qF "vprof: REGRESSION: variance +" && ok || bad "planted delay: stderr: $(cat "$tmp/err")"
grep -q "^vprof: warning: 2 runs a side: the intervals do not include how runs of one build differ" "$tmp/err" &&
  ok || bad "planted delay: no few-runs warning: $(cat "$tmp/err")"
grep -q '<failure message="REGRESSION: variance' "$tmp/fail.xml" && ok || bad "fail junit: $(cat "$tmp/fail.xml")"
python3 - "$tmp/gate.json" <<'PY' && ok || bad "gate json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema_version"] == 1 and d["gate"]["regression"] is True
assert d["latency"]["variance"]["ci"][0] > 1.1, d["latency"]["variance"]
assert any(n["key"] == "root/outside" for n in d["nodes"])
PY
grep -q "^### vprof gate: .* regression" "$tmp/gate.md" && ok || bad "markdown: $(head -3 "$tmp/gate.md")"

# The same delay at one run a side: never a sure verdict: its
# intervals come from that run's intervals alone and miss how runs differ
# (minidb's same build against itself said regression 7 times in 20 so).
# Inconclusive, exit 3, with the change and its interval and the reason;
# the one-run warning is then not said twice.
"$vprof" gate --baseline "$tmp/base.vprof" "$tmp/slow" --junit "$tmp/one.xml" --json "$tmp/one.json" \
  >"$tmp/out" 2>"$tmp/err"
expect_rc "planted delay, one run a side" 3 $?
reason="; one run a side: its intervals cannot include how runs differ; give the gate at least 2 runs a side (--baseline-runs/--runs)"
head -1 "$tmp/err" | grep -q "^vprof: INCONCLUSIVE: variance +[0-9.]*% \[+[0-9.]*%, +[0-9.]*%\] > +10%" &&
  head -1 "$tmp/err" | grep -qF -- "$reason" && ok || bad "one run a side: stderr: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/err")" -eq 1 ] && ok || bad "one run a side: more than the verdict on stderr: $(cat "$tmp/err")"
grep -q '<skipped message="INCONCLUSIVE: variance' "$tmp/one.xml" && ok || bad "one run junit: $(cat "$tmp/one.xml")"
python3 - "$tmp/one.json" <<'PY' && ok || bad "one run json"
import json, sys
g = json.load(open(sys.argv[1]))["gate"]
assert g["verdict"] == "inconclusive" and g["regression"] is False, g
assert g["runs"] == 1 and g["runs_needed"] == 2, g
assert g["checks"][0]["failed"] is True, g  # the interval as it is, above +10%
PY
"$vprof" gate --baseline "$tmp/base.vprof" "$tmp/slow" --inconclusive fail >/dev/null 2>&1
expect_rc "one run a side, --inconclusive fail" 1 $?
# Without intervals (--bootstrap 0) the point estimates decide, as before.
"$vprof" gate --baseline "$tmp/base.vprof" "$tmp/slow" --bootstrap 0 >/dev/null 2>"$tmp/err"
expect_rc "one run a side, --bootstrap 0" 1 $?

# Several runs a side (--baseline-runs / --runs): one decision over both.
# The same data as the one-run case, twice a side: a regression again.
"$vprof" gate --baseline-runs "$tmp/base.vprof" "$tmp/base" --runs "$tmp/slow" "$tmp/slow" >/dev/null 2>"$tmp/err"
expect_rc "runs" 1 $?
grep -q "(2 runs, 800 intervals) -> head" <("$vprof" diff "$tmp/base" "$tmp/slow" 2>/dev/null; \
  "$vprof" gate --baseline-runs "$tmp/base" "$tmp/base" --runs "$tmp/slow" 2>/dev/null) && ok || bad "runs: intervals pooled"

# The gate runs the workloads itself: base and head in
# turn, deciding from --min-runs a side on, until decided or --max-runs. At
# --min-runs 1 the first decision is inconclusive (one run a side), the
# second decides.
w="$bench --flush lazy --threads 2 --txns 400 --dir $tmp/data"
"$vprof" gate --base-cmd "$w >/dev/null" --head-cmd "$w --inject-delay run_transaction=exp:3ms >/dev/null" \
  --min-runs 1 --max-runs 3 --work-dir "$tmp/runs" --junit "$tmp/cmd.xml" >/dev/null 2>"$tmp/err"
expect_rc "--base-cmd/--head-cmd" 1 $?
grep -q "^vprof: gate: 1 run a side: INCONCLUSIVE: .*; one run a side: " "$tmp/err" &&
  grep -q "^vprof: gate: 2 runs a side: REGRESSION: variance" "$tmp/err" && ok || bad "--base-cmd: $(cat "$tmp/err")"
[ -d "$tmp/runs/base-1" ] && [ -d "$tmp/runs/head-2" ] && [ ! -e "$tmp/runs/base-3" ] && ok ||
  bad "--base-cmd: runs recorded: $(ls "$tmp/runs")"
grep -q 'failures="1"' "$tmp/cmd.xml" && ok || bad "--base-cmd: junit"
"$vprof" gate --base-cmd false --head-cmd true --work-dir "$tmp/runs-f" >/dev/null 2>"$tmp/err"
expect_rc "failing --base-cmd" 2 $?
grep -qF "error: --base-cmd failed (exit 1) in its run 1; its output is in $tmp/runs-f/base-1.log" "$tmp/err" && ok ||
  bad "failing --base-cmd: $(cat "$tmp/err")"
# --timeout: a run that hangs is stopped, with what it started in its process
# group, and the gate fails naming it (there was no limit: a hung workload
# held the gate, and SIGTERM left it running under pid 1).
start=$(date +%s)
"$vprof" gate --base-cmd "sleep 300 & echo \$! > $tmp/bg.pid; sleep 300" --head-cmd true --timeout 2 \
  --work-dir "$tmp/runs-t" >/dev/null 2>"$tmp/err"
expect_rc "--timeout" 2 $?
grep -qF "error: --base-cmd did not finish in 2 s (--timeout) in its run 1; it was stopped" "$tmp/err" && ok ||
  bad "--timeout: $(cat "$tmp/err")"
[ $(( $(date +%s) - start )) -lt 30 ] && ok || bad "--timeout: the gate waited $(( $(date +%s) - start )) s"
bgpid=$(cat "$tmp/bg.pid" 2>/dev/null)
sleep 0.2
if [ -n "$bgpid" ] && kill -0 "$bgpid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$bgpid/status" 2>/dev/null; then
  bad "--timeout: the workload's background child runs on"; kill -9 "$bgpid"
else ok; fi
# SIGTERM to the gate while a run hangs: the gate ends, and the run with it
# (it went on under pid 1).
"$vprof" gate --base-cmd "echo \$\$ > $tmp/hang.pid; exec sleep 300" --head-cmd true \
  --work-dir "$tmp/runs-s" >/dev/null 2>&1 &
gpid=$!
for _ in $(seq 100); do [ -s "$tmp/hang.pid" ] && break; sleep 0.1; done
kill -TERM "$gpid"; wait "$gpid" 2>/dev/null
hpid=$(cat "$tmp/hang.pid" 2>/dev/null)
sleep 0.5
if [ -n "$hpid" ] && kill -0 "$hpid" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$hpid/status" 2>/dev/null; then
  bad "SIGTERM to the gate: its workload runs on"; kill -9 "$hpid"
else ok; fi
# Runs replace WORK/base-N: a --work-dir that holds anything is refused, untouched.
"$vprof" gate --base-cmd true --head-cmd true --work-dir "$tmp/runs" >/dev/null 2>"$tmp/err"
expect_rc "non-empty --work-dir" 2 $?
expect_err "non-empty --work-dir" "$tmp/runs: the --work-dir is not empty"
[ -d "$tmp/runs/base-1" ] && ok || bad "non-empty --work-dir: base-1 removed"
"$vprof" gate --base-cmd true >/dev/null 2>"$tmp/err"
expect_rc "--base-cmd alone" 2 $?
expect_err "--base-cmd alone" "--base-cmd and --head-cmd go together"

# Bad baselines: exit 2, one line naming the file.
"$vprof" gate --baseline "$tmp/nope.vprof" "$tmp/slow" --junit "$tmp/err.xml" >/dev/null 2>"$tmp/err"
expect_rc "missing baseline" 2 $?
expect_err "missing baseline" "baseline $tmp/nope.vprof: no such file or directory"
grep -q 'errors="1"' "$tmp/err.xml" && ok || bad "error junit"
cp "$tmp/base.vprof" "$tmp/v99.vprof"
printf '\x63\x00\x00\x00\x63\x00\x00\x00' | dd of="$tmp/v99.vprof" bs=1 seek=8 conv=notrunc status=none
"$vprof" gate --baseline "$tmp/v99.vprof" "$tmp/slow" >/dev/null 2>"$tmp/err"
expect_rc "other version" 2 $?
expect_err "other version" "$tmp/v99.vprof: saved profile format version 99"
echo "not a profile" > "$tmp/text.vprof"
"$vprof" diff "$tmp/text.vprof" "$tmp/slow" >/dev/null 2>"$tmp/err"
expect_rc "not a profile" 2 $?
expect_err "not a profile" "$tmp/text.vprof: neither a saved profile"
"$vprof" gate --baseline "$tmp/base.vprof" "$tmp/slow" --max-var-increase ten >/dev/null 2>"$tmp/err"
expect_rc "bad threshold" 2 $?
expect_err "bad threshold" "--max-var-increase: 'ten' is not a percentage"
"$vprof" gate "$tmp/slow" >/dev/null 2>"$tmp/err"
expect_rc "no baseline" 2 $?

# Saved profiles merged (vprof analyze A.vprof B.vprof): one profile's tree
# has its trace's shares, two merge into one tree over both runs'
# intervals; mixed inputs and options that need trace directories are exit 2.
"$vprof" analyze "$tmp/base" --bootstrap 0 --json "$tmp/trace.json" >/dev/null 2>&1
"$vprof" analyze "$tmp/base.vprof" --json "$tmp/merged1.json" >/dev/null 2>"$tmp/err"
expect_rc "analyze one profile" 0 $?
python3 - "$tmp/trace.json" "$tmp/merged1.json" <<'PY' && ok || bad "one profile's shares differ from its trace's"
import json, sys
a, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
shares = {}
def walk(n):
    if n.get('kind') != 'Cov':
        shares.setdefault(n['label'], n['share'])
    for c in n.get('children', []):
        walk(c)
walk(a['tree'])
merged = {x['label']: x['share'] for x in m['nodes']}
assert m['intervals'] == a['intervals'], (m['intervals'], a['intervals'])
for label, share in shares.items():
    if share is None or label not in merged:
        continue
    assert abs(merged[label] - share) < 1e-9, (label, share, merged[label])
PY
"$vprof" analyze "$tmp/base2" --bootstrap 0 --save "$tmp/base2.vprof" >/dev/null 2>&1
"$vprof" analyze "$tmp/base.vprof" "$tmp/base2.vprof" >"$tmp/out" 2>"$tmp/err"
expect_rc "analyze two profiles" 0 $?
grep -q "^vprof analyze: 2 saved profiles merged: 2 runs, 800 intervals" "$tmp/out" && ok || bad "merged: $(head -3 "$tmp/out")"
# A merged tree's JSON merges again: (base) + (base2) is base + base2.
"$vprof" analyze "$tmp/base.vprof" "$tmp/base2.vprof" --json "$tmp/m12.json" >/dev/null 2>&1
"$vprof" analyze "$tmp/base2.vprof" --json "$tmp/m2.json" >/dev/null 2>&1
"$vprof" analyze "$tmp/merged1.json" "$tmp/m2.json" --json "$tmp/m1_2.json" >/dev/null 2>"$tmp/err"
expect_rc "analyze: merged trees' JSON" 0 $?
python3 - "$tmp/m12.json" "$tmp/m1_2.json" <<'PY' && ok || bad "a merge of merges differs from one merge"
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert (a['profiles'], a['runs'], a['intervals']) == (b['profiles'], b['runs'], b['intervals']), (a['runs'], b['runs'])
sa = {n['key']: n['share'] for n in a['nodes']}
sb = {n['key']: n['share'] for n in b['nodes']}
assert sa.keys() == sb.keys()
assert all(abs(sa[k] - sb[k]) < 1e-9 for k in sa), max(abs(sa[k] - sb[k]) for k in sa)
PY
"$vprof" analyze "$tmp/base.vprof" "$tmp/base" >/dev/null 2>"$tmp/err"
expect_rc "analyze: profile and trace" 2 $?
expect_err "analyze: profile and trace" "$tmp/base: a trace directory among saved profiles"
"$vprof" analyze "$tmp/base.vprof" --html "$tmp/m.html" >/dev/null 2>"$tmp/err"
expect_rc "analyze: profile --html" 2 $?
expect_err "analyze: profile --html" "--html needs trace directories"
"$vprof" analyze "$tmp/base.vprof" "$tmp/base2.vprof" "$tmp/base.vprof" >/dev/null 2>"$tmp/err"
expect_rc "analyze: a profile twice" 2 $?
expect_err "analyze: a profile twice" "$tmp/base.vprof: given twice"
head -c $(( $(wc -c < "$tmp/m2.json") * 6 / 10 )) "$tmp/m2.json" > "$tmp/cut.json"
"$vprof" analyze "$tmp/base.vprof" "$tmp/cut.json" >/dev/null 2>"$tmp/err"
expect_rc "analyze: a merged JSON cut short" 2 $?
expect_err "analyze: a merged JSON cut short" "$tmp/cut.json: a merged tree's JSON that does not parse"
"$vprof" analyze "$tmp/text.vprof" >/dev/null 2>"$tmp/err"
expect_rc "analyze: a text file" 2 $?
expect_err "analyze: a text file" "$tmp/text.vprof: neither a trace directory, a saved profile nor a merged tree's JSON"

# Against a history: twelve same-build runs recorded into it, then three
# planted runs fail naming the delay (3 runs against 12: 1 arrangement in 455,
# below 1% / 3; against 4, nothing could be caught, and it says so); the
# history keeps --history-keep runs; --changes lists steps; misuse is exit 2.
record slow3 --seed 40 --inject-delay run_transaction=exp:3ms
hist=()
for k in $(seq 5 17); do record "h$k" --seed "$k"; [ "$k" -le 16 ] && hist+=("$tmp/h$k"); done
"$vprof" gate --history "$tmp/H4" --record --runs "${hist[@]:0:4}" >/dev/null 2>&1
"$vprof" gate --history "$tmp/H4" --runs "$tmp/slow" "$tmp/slow2" "$tmp/slow3" >"$tmp/out" 2>"$tmp/err"
expect_rc "history of 4: too few" 0 $?
grep -q "with 3 runs against 4, nothing could be caught: .* 12 history runs would do" "$tmp/out" && ok ||
  bad "history of 4: $(cat "$tmp/out")"
"$vprof" gate --history "$tmp/H" --record --runs "${hist[@]}" >"$tmp/out" 2>"$tmp/err"
expect_rc "history: first record" 0 $?
grep -q "nothing to judge against yet" "$tmp/out" && ok || bad "history: first record: $(cat "$tmp/out")"
[ "$(ls "$tmp/H" | wc -l)" = 12 ] && ok || bad "history: $(ls "$tmp/H")"
"$vprof" gate --history "$tmp/H" --runs "$tmp/slow" "$tmp/slow2" "$tmp/slow3" --json "$tmp/hv.json" >"$tmp/out" 2>"$tmp/err"
expect_rc "history: planted delay" 1 $?
grep -q "REGRESSION: p90 .*p99 .*against the last 12 runs of the history" "$tmp/err" && ok || bad "history: planted: $(cat "$tmp/err" "$tmp/out")"
grep -Eq "with 3 runs against 12, a p90 increase of [0-9]+% or more" "$tmp/out" && ok || bad "history: detectable: $(cat "$tmp/out")"
grep -q '"verdict": "regression"' "$tmp/hv.json" && ok || bad "history: json"
# A level threshold beyond the planted delay's move: p90 and p99 do not fail
# (whether the runs' p99 cross the outlier line depends on the history's spread).
"$vprof" gate --history "$tmp/H" --max-level-increase 1000000% --runs "$tmp/slow" "$tmp/slow2" "$tmp/slow3" >"$tmp/out" 2>"$tmp/err"
rc=$?
grep -E "^  p9[09] " "$tmp/out" | grep -q REGRESSION && bad "history: --max-level-increase: exit $rc: $(cat "$tmp/out")" || ok
"$vprof" gate --max-level-increase 50% --runs "$tmp/slow" >/dev/null 2>"$tmp/err"
expect_rc "--max-level-increase alone" 2 $?
expect_err "--max-level-increase alone" "--max-level-increase goes with --history DIR"
# The new build's workload run by the gate (--head-cmd, --min-runs of it),
# with the Markdown report a CI posts.
"$vprof" gate --history "$tmp/H" --min-runs 3 --work-dir "$tmp/hw" --markdown "$tmp/hv.md" \
  --head-cmd "$bench --flush lazy --threads 2 --txns 400 --dir $tmp/data --seed 41 --inject-delay run_transaction=exp:3ms" \
  >"$tmp/out" 2>"$tmp/err"
expect_rc "history: --head-cmd" 1 $?
[ -s "$tmp/hw/head-3.vprof" ] && [ ! -e "$tmp/hw/head-4.vprof" ] && ok || bad "history: --head-cmd runs: $(ls "$tmp/hw")"
grep -q "^### vprof gate: ❌ regression" "$tmp/hv.md" && grep -q "^| p90 | " "$tmp/hv.md" &&
  grep -Eq "^\| p90/p50 \| [0-9]+\.[0-9]{3} \| " "$tmp/hv.md" &&
  grep -q "with 3 runs against 12" "$tmp/hv.md" && ok || bad "history: markdown: $(cat "$tmp/hv.md")"
"$vprof" gate --history "$tmp/H" --base-cmd true --head-cmd true >/dev/null 2>"$tmp/err"
expect_rc "history: --base-cmd" 2 $?
expect_err "history: --base-cmd" "--history is the baseline"
"$vprof" gate --history "$tmp/H" --record --history-keep 4 --runs "$tmp/h17" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] && ok || bad "history: same build: exit $rc"
[ "$(ls "$tmp/H" | wc -l)" = 4 ] && [ -e "$tmp/H/run-000013.vprof" ] && [ ! -e "$tmp/H/run-000009.vprof" ] && ok ||
  bad "history: --history-keep 4: $(ls "$tmp/H")"
"$vprof" gate --history "$tmp/nohist" --runs "$tmp/slow" >/dev/null 2>"$tmp/err"
expect_rc "history: missing" 2 $?
expect_err "history: missing" "$tmp/nohist: no such history"
"$vprof" gate --record --runs "$tmp/slow" >/dev/null 2>"$tmp/err"
expect_rc "--record alone" 2 $?
expect_err "--record alone" "--record goes with --history DIR"
"$vprof" gate --history "$tmp/H" --baseline "$tmp/base.vprof" "$tmp/slow" >/dev/null 2>"$tmp/err"
expect_rc "history and baseline" 2 $?
expect_err "history and baseline" "--history is the baseline"
"$vprof" gate --history "$tmp/H" --changes >/dev/null 2>"$tmp/err"
expect_rc "--changes: too short" 2 $?
expect_err "--changes: too short" "change points need at least 8"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
