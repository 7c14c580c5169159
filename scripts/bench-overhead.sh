#!/usr/bin/env bash
# What vprof's probes cost a real server, side by side with uftrace:
# db_bench fillrandom (one thread, µs operations, so every probe shows) built
#   plain      no instrumentation (vprof's flags, libvprof linked, recorder off)
#   vprof-N    instrumented at three sizes, chosen from `vprof callgraph` below
#              leveldb::DBImpl::Write: the function alone (its call sites: what
#              uftrace's `-F DBImpl::Write -D 2` traces), + its callees in the
#              tree, + every function below it; each run records a trace
#   vprof-iv   vprof-write's set with one interval per write (the patch
#              `leveldb.sh profile` applies): windows open and close only at
#              intervals' begins and ends, so a sampled run needs them
#   vprof-iv:S10  vprof-iv recording in windows over 10% of the time
#              (vprof run --sample 10, 10 ms windows: a run lasts half a second)
#   vprof-iv:off  vprof-iv's build run without vprof: what the instrumented
#              build costs while nothing records
#   pg         built with -pg (what uftrace needs); run plain, and under
#              `uftrace record -F leveldb::DBImpl::Write -D 2`
# The binaries are built once each (the tree is instrumented, built, restored),
# then the variants run alternately, RUNS rounds of each; medians and spread of
# µs/op are printed, with the added time per op over plain's run of the same
# round (median and range over the rounds: the host drifts within minutes),
# probes fired per op (records kept + dropped: vprof-all writes past the
# default 1 GiB budget) and the added ns per probe. A ratio whose vprof side's
# rounds do not all add time prints "unresolved".
# Then PostgreSQL under pgbench: scripts/bench-overhead-pgbench.sh (WORK_DIR-pg).
# The last line:
#   pgbench_full_iter3=<pct> pgbench_sampled_iter3=<pct> pgbench_sampled_100=<pct> dbbench_uftrace_over_vprof=<x>
# where the pgbench figures are the throughput lost by the scale-16 session's
# iteration-3 set in full and at 10% (windowed recording) and by the
# breadth-first ~100 set at 10% (scripts/bench-overhead-pgbench.sh), and x = (uftrace's added µs/op) / (vprof's
# added µs/op) on the same functions (vprof-write), both over the plain build,
# as the overhead goal counts it (uftrace needs the -pg build; its recording alone,
# over the -pg build, is printed too). A part not run prints n/a.
# Usage: scripts/bench-overhead.sh [WORK_DIR]   (default /tmp/vprof-overhead)
# Env:   VPROF (build/src/vprof)  RUNS (5)  BENCH_NUM (200000)  JOBS (2)
#        PARTS ("dbbench pgbench": which parts run)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/vprof-overhead}
vprof=${VPROF:-$here/build/src/vprof}
runs=${RUNS:-5}
num=${BENCH_NUM:-200000}
jobs=${JOBS:-2}
step() { printf '\n== %s (%ds)\n' "$*" "$SECONDS" >&2; }
die() { echo "bench-overhead.sh: $*" >&2; exit 1; }
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
command -v uftrace >/dev/null || die "no uftrace (apt-get install uftrace)"
parts=${PARTS:-dbbench pgbench}
has_part() { [[ " $parts " == *" $1 "* ]]; }
mkdir -p "$work/bin"
cd "$work"
db_ratio=n/a
if has_part dbbench; then

step "fetch Debian's leveldb source"
"$here/scripts/targets/deb-source.sh" leveldb src >&2
instrumented() { [ -f src/.vprof/state.json ]; }
if instrumented; then "$vprof" restore -p build >&2; fi
trap 'instrumented && "$vprof" restore -p build >/dev/null' EXIT

. "$here/scripts/targets/leveldb-configure.sh"
build() { nice cmake --build "$1" -j "$jobs" --target db_bench >/dev/null; }

step "build plain and -pg"
leveldb_configure build OFF
build build
cp build/db_bench bin/db_bench-plain
leveldb_configure build-pg OFF -pg
build build-pg
cp build-pg/db_bench bin/db_bench-pg

step "choose the function sets (vprof callgraph)"
"$vprof" callgraph -p build --root leveldb::DBImpl::Write --json cg.json -q >/dev/null
python3 - cg.json > sets.txt <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
fns = {f["name"]: f for f in g["functions"]}
root = g["root"]
level2 = [root] + sorted(c for c in fns[root]["callees"] if c in fns and c != root)
everything = [root] + sorted(n for n in fns if n != root)
print("write", root)
print("level2", " ".join(level2))
print("all", " ".join(everything))
EOF

variants="plain"
while read -r name fnlist; do
  step "instrument and build vprof-$name"
  # A function the call graph lists may have no definition to instrument (a
  # defaulted operator=, a constructor made by the compiler): dropped, retried.
  for attempt in $(seq 1 50); do
    args=()
    for f in $fnlist; do args+=(--function "$f"); done
    if err=$("$vprof" instrument -p build -q "${args[@]}" 2>&1); then break; fi
    gone=$(printf '%s\n' "$err" | sed -n 's/.*--function \([^:]*\(::[^:]*\)*\): no definition.*/\1/p' | head -1)
    [ -n "$gone" ] || die "instrument failed: $err"
    echo "  $gone: no definition to instrument, left out" >&2
    fnlist=$(printf '%s\n' $fnlist | grep -vxF "$gone" | tr '\n' ' ')
  done
  sites=$(python3 -c "import json;print(len(json.load(open('build/.vprof/manifest.json'))['call_sites']))")
  build build
  cp build/db_bench "bin/db_bench-vprof-$name"
  cp build/.vprof/manifest.json "bin/manifest-$name.json"
  "$vprof" restore -p build >&2
  echo "$name $sites" >> sites.txt
  variants="$variants vprof-$name"
done < sets.txt
step "instrument and build vprof-iv (vprof-write's set, one interval per write)"
patchfile=$here/scripts/targets/patches/leveldb-db_bench-intervals.patch
patched() { grep -q vprof_interval_begin src/benchmarks/db_bench.cc; }
trap 'instrumented && "$vprof" restore -p build >/dev/null; if patched; then (cd src && patch -p1 -R -s < "$patchfile"); fi' EXIT
(cd src && patch -p1 -s < "$patchfile")
"$vprof" instrument -p build -q --function leveldb::DBImpl::Write
build build
cp build/db_bench "bin/db_bench-vprof-iv"
cp build/.vprof/manifest.json "bin/manifest-iv.json"
"$vprof" restore -p build >&2
(cd src && patch -p1 -R -s < "$patchfile")
build build  # back to the plain sources
variants="$variants vprof-iv vprof-iv:S10 vprof-iv:off pg uftrace"

one_run() {  # VARIANT -> "µs/op records"
  local v=$1 db="$work/db-$1" out rec=0
  rm -rf "$db" trace-run uftrace.data
  case $v in
    plain) out=$(env -u VPROF_TRACE_DIR bin/db_bench-plain --benchmarks=fillrandom --num="$num" --db="$db" 2>&1) ;;
    *:off) out=$(env -u VPROF_TRACE_DIR "bin/db_bench-${v%%:*}" --benchmarks=fillrandom --num="$num" --db="$db" 2>&1) ;;
    vprof-*)
      local b=${v%%:*} sample=()
      case $v in *:S*) sample=(--sample "${v##*:S}") ;; esac
      out=$(VPROF_SAMPLE_WINDOW_MS=10 "$vprof" run "${sample[@]}" --trace-dir trace-run \
        --manifest "bin/manifest-${b#vprof-}.json" -- \
        "bin/db_bench-$b" --benchmarks=fillrandom --num="$num" --db="$db" 2>&1)
      # Records kept plus dropped (past VPROF_BUFFER_MB): every probe that fired.
      rec=$(printf '%s\n' "$out" | sed -n 's/.*): \([0-9]*\) records, \([0-9]*\) dropped.*/\1 \2/p' | tail -1) ;;
    pg) out=$(bin/db_bench-pg --benchmarks=fillrandom --num="$num" --db="$db" 2>&1) ;;
    uftrace)
      out=$(uftrace record -d uftrace.data -F 'leveldb::DBImpl::Write' -D 2 \
        bin/db_bench-pg --benchmarks=fillrandom --num="$num" --db="$db" 2>&1) ;;
  esac
  local us
  us=$(printf '%s\n' "$out" | sed -n 's/^fillrandom *: *\([0-9.]*\) micros\/op.*/\1/p')
  [ -n "$us" ] || { printf '%s\n' "$out" | tail -5 >&2; die "$v: no fillrandom line"; }
  echo "$us ${rec:-0 0}"
}

step "run alternately: $runs x ($variants), fillrandom --num=$num"
: > results.txt
for r in $(seq 1 "$runs"); do
  for v in $variants; do
    echo "$v $(one_run "$v")" >> results.txt
  done
done
rm -rf trace-run uftrace.data "$work"/db-*

(python3 - "$num" "$here/scripts/lib" <<'EOF'
import statistics, sys
num = int(sys.argv[1])
sys.path.insert(0, sys.argv[2])
from median_interval import median_interval
res = {}
dropped = {}
for line in open("results.txt"):
    v, us, rec, *drop = line.split()
    drop = drop[0] if drop else 0
    res.setdefault(v, []).append((float(us), int(rec) + int(drop)))
    dropped[v] = dropped.get(v, 0) + int(drop)
sites = {}
for line in open("sites.txt"):
    parts = line.split()
    if len(parts) == 2 and parts[1].isdigit():
        sites["vprof-" + parts[0]] = int(parts[1])
med = {v: statistics.median(u for u, _ in r) for v, r in res.items()}
# The host's speed drifts within minutes: each variant's added time is taken
# against plain's run of the same round (uftrace's recording alone against
# -pg's), its median over the rounds with an interval for that median.
def added(v, base="plain"):
    return median_interval([u - b for (u, _), (b, _) in zip(res[v], res[base])])
print(f"{'variant':<14} {'sites':>6} {'median us/op':>13} {'min':>7} {'max':>7} {'added us/op':>12} "
      f"{'[interval, coverage]':>26} {'probes/op':>10} {'ns/probe':>9} {'dropped':>10}")
for v, r in res.items():
    us = [u for u, _ in r]
    a = added(v, "pg" if v == "uftrace" else "plain") if v != "plain" else None
    add = a[0] if a else (0.0 if v == "plain" else float("nan"))
    span = f"[{a[1]:.3f}, {a[2]:.3f}, {a[3]:.0%}]" if a else ""
    probes = statistics.median(x for _, x in r) / num if v.startswith("vprof-") else float("nan")
    # A sampled run fires every probe but records only its windows': no cost per record.
    per = add * 1000 / probes if probes == probes and probes > 0 and ":S" not in v else float("nan")
    print(f"{v:<14} {sites.get(v, ''):>6} {med[v]:>13.3f} {min(us):>7.3f} {max(us):>7.3f} "
          f"{add:>12.3f} {span:>26} {probes:>10.1f} {per:>9.1f} {dropped[v]:>10}")
# uftrace's added time over the plain build (as the overhead goal counts it: uftrace
# needs the -pg build) and over -pg (its recording alone), against vprof's on
# the same functions. A ratio over an added time whose interval reaches zero
# says nothing: "unresolved".
def ratio(u, v):
    a = added(v)
    if a is None or a[1] <= 0:
        return None, "unresolved" + (f" (its interval {a[1]:.3f} to {a[2]:.3f} us/op)" if a else "")
    return u / a[0], f"{u / a[0]:.1f}x less"
u_plain, u_pg = added("uftrace")[0], added("uftrace", "pg")[0]
write, text = ratio(u_plain, "vprof-write")
print(f"uftrace adds {u_plain:.3f} us/op over the plain build ({u_pg:.3f} over its -pg build); "
      f"vprof-write, the same functions, adds {added('vprof-write')[0]:.3f}: {text}; "
      f"against uftrace's recording alone: {ratio(u_pg, 'vprof-write')[1]}")
if "vprof-iv:S10" in med:
    print(f"with one interval per write: vprof-iv adds {added('vprof-iv')[0]:.3f} us/op in full "
          f"(against uftrace: {ratio(u_plain, 'vprof-iv')[1]}), {added('vprof-iv:S10')[0]:.3f} at 10% "
          f"({ratio(u_plain, 'vprof-iv:S10')[1]}; the goal: 100x less than uftrace), "
          f"{added('vprof-iv:off')[0] if 'vprof-iv:off' in res else float('nan'):.3f} not recording")
print(f"dbbench_uftrace_over_vprof={'unresolved' if write is None else f'{write:.1f}'}")
EOF
) | tee db.out
db_ratio=$(tail -1 db.out | sed 's/.*=//')
fi

pg_line="pgbench_full_iter3=n/a pgbench_sampled_iter3=n/a pgbench_sampled_100=n/a"
if has_part pgbench; then
  step "PostgreSQL under pgbench (scripts/bench-overhead-pgbench.sh)"
  VPROF=$vprof RUNS=$runs JOBS=$jobs "$here/scripts/bench-overhead-pgbench.sh" "$work-pg" | tee pg.out
  pg_line=$(tail -1 pg.out | sed 's/ pgbench_uftrace_over_vprof=.*//')
fi
echo "$pg_line dbbench_uftrace_over_vprof=$db_ratio"
