#!/usr/bin/env bash
# What vprof's probes cost PostgreSQL 15 under pgbench, side by
# side with uftrace; scripts/bench-overhead.sh runs it after its db_bench part.
# TPC-B (one compound query per transaction, as `postgres.sh profile` runs it),
# CLIENTS clients x TXNS transactions, against one database (synchronous_commit
# off, no checkpoint or autovacuum during a run: the probes' CPU is what is
# measured, and the disk's noise hid it), built
#   plain      Debian's source unpatched, vprof's flags, recorder off
#   vprof-esq  the interval patch + exec_simple_query's call sites, no sync
#              pack: the functions uftrace's `-F exec_simple_query -D 2` traces
#   vprof-N    the interval patch + about N call sites (10, 100, 500: a prefix
#              of the functions below exec_simple_query in breadth-first order,
#              `vprof callgraph`) + the postgres sync pack in every file, as a
#              `vprof iterate` session records; each run records a trace
#   vprof-sess100, vprof-sess500
#              the sets a `vprof iterate` session instrumented at scale 16
#              (docs/case-studies/postgres.md): iteration 3's 5 functions (129
#              call sites) and iteration 19's 20 (429), + the sync pack in
#              every file, as the session ran them
#   V:P0       variant V run with VPROF_PREEMPT=0 (no context-switch events):
#              what recording preemptions costs, by difference
#   V:S10      variant V recording in windows over 10% of the time
#              (VPROF_SAMPLE=10): vprof-sess100, vprof-sess500, vprof-100
#   V:S10:P0   both (the suffixes combine)
#   V:off      variant V's build run without vprof (no trace directory): what
#              the instrumentation costs while nothing records (ONLY only)
#   pg         built with -pg (what uftrace needs), run plain, and under
#   uftrace    `uftrace record -F exec_simple_query -D 2` (it follows the forks)
# The binaries are built once each (the tree is instrumented, built, installed
# under its own DESTDIR, restored), then the variants run alternately, RUNS
# times each. Printed: median tps, spread, p99 latency (pgbench -l), the loss
# against plain, probes fired per transaction, the machine's busy CPU a
# transaction (/proc/stat, while pgbench ran); then each variant's loss and added
# CPU against the plain run of its own round, with an interval for the median.
# Last line: pgbench_full_iter3=<pct> pgbench_sampled_iter3=<pct> pgbench_sampled_100=<pct>
#   pgbench_uftrace_over_vprof=<x>
# (throughput loss against plain of vprof-sess100, the session's iteration-3
# set, in full and at 10%, and of the breadth-first ~100 set at 10%; the lines
# above it give the others'; uftrace's added time per transaction over
# vprof-esq's, both over plain).
# Usage: scripts/bench-overhead-pgbench.sh [WORK_DIR]   (default /tmp/vprof-overhead-pg)
# Env:   VPROF (build/src/vprof)  RUNS (5)  CLIENTS (4)  TXNS per client (5000)
#        PERF (1: then one run of each under perf record -a: CPU by process and object)
#        YARDSTICK (1: every run under perf record -a, and each variant's postgres CPU a
#        transaction measured against the CPU of functions no variant instruments, in the
#        same run: the host's speed, which moves plain's tps by 30% within minutes here,
#        divides out; see the summary's last column)
#        ONLY (the variants to build and run, e.g. "vprof-sess100 vprof-sess100:P0";
#        plain always runs; default: all)
#        SCALE (16: little row contention, so the probes' CPU shows)  JOBS (2)
#        PGUSER (nobody)  PORT (5498)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-/tmp/vprof-overhead-pg}
vprof=${VPROF:-$here/build/src/vprof}
runs=${RUNS:-5} clients=${CLIENTS:-4} txns=${TXNS:-5000} scale=${SCALE:-16}
jobs=${JOBS:-2} pguser=${PGUSER:-nobody} port=${PORT:-5498}
step() { printf '\n== %s (%ds)\n' "$*" "$SECONDS" >&2; }
die() { echo "bench-overhead-pgbench.sh: $*" >&2; exit 1; }
[ -x "$vprof" ] || die "no vprof at $vprof (build it, or set VPROF)"
command -v uftrace >/dev/null || die "no uftrace (apt-get install uftrace)"
command -v bear >/dev/null || die "bear is not installed (apt-get install bear)"
[ "${YARDSTICK:-0}" != 1 ] || command -v perf >/dev/null || die "YARDSTICK=1: no perf (apt-get install linux-perf)"
. "$here/scripts/targets/postgres-common.sh"
mkdir -p "$work"
cd "$work"
data=$work/data

step "fetch, configure, build PostgreSQL 15 (compile db)"
pg_fetch_and_build >&2
patchfile=$here/scripts/targets/patches/postgres-exec_simple_query-intervals.patch
instrumented() { [ -f src/.vprof/state.json ]; }
patched() { grep -q vprof_interval_begin src/src/backend/tcop/postgres.c; }
unwind() { for d in inst-*; do [ -d "$d" ] && pg_stop "$work/$d" "$data"; done
           if instrumented; then pg_as_user "$vprof" restore -p src >/dev/null; fi
           if patched; then (cd src && pg_as_user patch -p1 -R -s < "$patchfile"); fi; }
unwind
trap unwind EXIT

step "build and install plain; the database (scale $scale)"
[ -x "$work/inst-plain/usr/local/pgsql/bin/postgres" ] || pg_install "$work/inst-plain"
pg_database "$work/inst-plain" "$data" "$port" "$scale"
# What is measured is the probes' CPU: the commit's fsync, checkpoints and
# autovacuum made identical runs of one build vary 7x in tps (721 to 5272)
# on this machine kind, which hid it. The variants share this database.
grep -q '^# vprof bench' "$data/postgresql.conf" ||
  printf '# vprof bench\nsynchronous_commit = off\ncheckpoint_timeout = 1h\nmax_wal_size = 10GB\nautovacuum = off\n' \
    >> "$data/postgresql.conf"

step "choose the function sets (vprof callgraph, breadth-first below exec_simple_query)"
[ -s cg.json ] || "$vprof" callgraph -p src --root exec_simple_query --json cg.json -q >/dev/null
python3 - cg.json > bfs.txt <<'EOF'
import json, sys
g = json.load(open(sys.argv[1]))
fns = {f["name"]: f for f in g["functions"]}
order, seen = [g["root"]], {g["root"]}
for name in order:
    for c in fns[name]["callees"]:
        if c in fns and c not in seen:
            seen.add(c)
            order.append(c)
print("\n".join(order[:400]))
EOF
(cd src && pg_as_user patch -p1 -s < "$patchfile")
# One instrumentation of the first 400 gives every function's own call sites
# (its manifest); a function with no definition to instrument is left out.
if [ ! -s sets.txt ]; then
fnlist=$(cat bfs.txt)
for attempt in $(seq 1 100); do
  args=()
  for f in $fnlist; do args+=(--function "$f"); done
  if err=$(pg_as_user "$vprof" instrument -p src -q "${args[@]}" 2>&1); then break; fi
  gone=$(printf '%s\n' "$err" | sed -n 's/.*--function \([^:]*\): no definition.*/\1/p' | head -1)
  [ -n "$gone" ] || die "instrument failed: $err"
  fnlist=$(printf '%s\n' $fnlist | grep -vxF "$gone" | tr '\n' ' ')
done
cp src/.vprof/manifest.json bfs-manifest.json
pg_as_user "$vprof" restore -p src >&2
python3 - bfs-manifest.json <(printf '%s\n' $fnlist) > sets.txt <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
order = [l.strip() for l in open(sys.argv[2]) if l.strip()]
name = {f["id"]: f["name"] for f in m["functions"]}
own = {}
for s in m["call_sites"]:
    own[name[s["function_id"]]] = own.get(name[s["function_id"]], 0) + 1
print("esq", order[0])
# ~10: the first function below the root with 5 to 20 call sites of its own.
ten = next((f for f in order[1:] if 5 <= own.get(f, 0) <= 20), order[1])
print("10", ten)
for target in (100, 500):
    total, prefix = 0, []
    for f in order:
        prefix.append(f)
        total += own.get(f, 0)
        if total >= target:
            break
    print(target, " ".join(prefix))
EOF
fi
# What a session instruments: a chain, not a breadth-first prefix into the
# allocator. The scale-16 session's iterations 3 and 19.
grep -q '^sess100 ' sets.txt || cat >> sets.txt <<'EOF'
sess100 exec_simple_query CommitTransactionCommand finish_xact_command PortalRunMulti PortalRun
sess500 exec_simple_query ProcSleep WaitOnLock LockAcquireExtended LockAcquire XactLockTableWait heap_update heapam_tuple_update table_tuple_update ExecUpdateAct ExecUpdate ExecModifyTable ExecProcNode ExecutePlan standard_ExecutorRun ExecutorRun ProcessQuery PortalRunMulti PortalRun ExecProcNodeFirst
EOF
cat sets.txt | cut -c1-150 >&2

# With ONLY, only the builds it names are made (and plain's).
wanted() { [ -z "${ONLY:-}" ] || case " $ONLY " in *" $1 "*|*" $1:"*) true ;; *) false ;; esac; }
variants="plain"
while read -r name fns; do
  variants="$variants vprof-$name"
  wanted "vprof-$name" || continue
  # Built by an earlier run of this script (delete inst-vprof-* to rebuild).
  [ -x "$work/inst-vprof-$name/usr/local/pgsql/bin/postgres" ] && [ -s "manifest-$name.json" ] && continue
  step "instrument, build and install vprof-$name"
  args=()
  for f in $fns; do args+=(--function "$f"); done
  [ "$name" = esq ] || args+=(--sync postgres --all-files)
  pg_as_user "$vprof" instrument -p src -q "${args[@]}" >&2
  python3 -c "import json;m=json.load(open('src/.vprof/manifest.json'));print('$name', len(m['call_sites']), len(m.get('sync_sites', [])))" > "sites-$name.txt"
  cp src/.vprof/manifest.json "manifest-$name.json"
  pg_install "$work/inst-vprof-$name"
  pg_as_user "$vprof" restore -p src >&2
done < sets.txt
(cd src && pg_as_user patch -p1 -R -s < "$patchfile")

step "build and install with -pg (a copy of the tree: uftrace needs mcount)"
if [ ! -x "$work/inst-pg/usr/local/pgsql/bin/postgres" ] && { wanted pg || wanted uftrace; }; then
  rm -rf src-pg && cp -a src src-pg
  (cd src-pg && pg_as_user make -s distclean >/dev/null 2>&1 || true
   pg_as_user ./configure --without-icu --enable-debug --enable-cassert=no \
     CFLAGS="-O2 -pg $("$vprof" config --cflags)" LIBS="$("$vprof" config --libs)" >/dev/null
   pg_as_user make -s -j "$jobs" >/dev/null 2>&1 && pg_as_user make -s install DESTDIR="$work/inst-pg" >/dev/null)
  rm -rf src-pg
fi
variants="$variants pg uftrace"
for v in ${variants% uftrace}; do
  d=inst-$v
  [ -x "$work/$d/usr/local/pgsql/bin/postgres" ] || continue
  pg_write_run "$work/$d" "$data" "$port" "$clients" "$txns" "$scale" "$work/run-$v.sh" -l --log-prefix="$work/lat/log"
done
# uftrace starts the postmaster itself (pg_ctl would start it outside uftrace),
# with pg's script.
if [ -f "$work/run-pg.sh.sql" ]; then
cp "$work/run-pg.sh.sql" "$work/run-uftrace.sh.sql"
bin=$work/inst-pg/usr/local/pgsql/bin
cat > "$work/run-uftrace.sh" <<RUN
#!/bin/sh
set -e
uftrace record -d "$work/uftrace.data" -F exec_simple_query -D 2 "$bin/postgres" -D "$data" > "$data.log" 2>&1 &
up=\$!
until "$bin/pg_isready" -q -h 127.0.0.1 -p $port; do sleep 0.1; done
LD_LIBRARY_PATH="$work/inst-pg/usr/local/pgsql/lib" "$bin/pgbench" -h 127.0.0.1 -p $port -U postgres -n \\
  -c $clients -j $clients -t $txns -s $scale -f "$work/run-uftrace.sh.sql" -l --log-prefix="$work/lat/log" postgres
"$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null
wait \$up
RUN
fi
if [ "$(id -u)" = 0 ]; then chown -R "$pguser" "$work"; fi

busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8}' /proc/stat; }  # user nice system irq softirq
# The yardstick (YARDSTICK=1): pure-CPU functions of PostgreSQL's parser,
# planner caches, allocator and btree code that no variant's set names and
# that take no lock of the sync pack. Their CPU a transaction moves with the
# host's speed only, so postgres's CPU over theirs is the host's drift divided
# out. A lower bound of vprof's cost: if recording evicts their cache lines,
# they slow down too, and that part is taken for the host's.
yardstick_fns="base_yyparse core_yylex _bt_compare AllocSetAlloc hash_search_with_hash_value SearchCatCacheInternal hash_bytes ScanKeywordLookup"
# postgres_ns: the CPU of the postgres processes and of the recorder's writer
# threads in them (the writer's copies compete for the same cores).
yardstick() {  # PERF_DATA MANIFEST|- -> "postgres_ns yardstick_ns" (sampled, the whole run)
  perf report -i "$1" --comm postgres,vprof-writer --sort dso,sym -F period,dso,sym 2>/dev/null | grep -v '^#' |
    python3 -c '
import json, sys
fns = set(sys.argv[1].split())
if sys.argv[2] != "-":  # a name a variant instruments is no yardstick
    fns -= {f["name"] for f in json.load(open(sys.argv[2]))["functions"]}
pg = yard = 0
for line in sys.stdin:
    p = line.split()
    if len(p) < 4 or not p[0].isdigit():
        continue
    pg += int(p[0])
    if p[1] == "postgres" and p[3] in fns:
        yard += int(p[0])
print(pg, yard)' "$yardstick_fns" "$2"
}

one_run() {  # VARIANT -> "tps p99_ms records dropped busy_ticks postgres_ns yardstick_ns"
  local v=$1 out rec="0 0" build=${1%%:*} env=() busy perf_pid=
  if [ "${YARDSTICK:-0}" = 1 ]; then
    perf record -a -q -F 4000 -e cpu-clock -o "$work/yard.data" >/dev/null 2>&1 &
    perf_pid=$!
    sleep 1
  fi
  busy=$(busy_ticks)
  local opt
  for opt in $(printf '%s' "${v#*:}" | tr ':' ' '); do  # V:P0, V:S10, V:S10:P0
    case $opt in
      P*) env+=(VPROF_PREEMPT=${opt#P}) ;;
      S*) env+=(VPROF_SAMPLE=${opt#S}) ;;
    esac
  done
  pg_as_user rm -rf "$work/lat" trace-run "$work/uftrace.data"
  pg_as_user mkdir -p "$work/lat"
  case $v in
    vprof-*:off)  # the instrumented build not recording (no trace directory)
      out=$(pg_as_user env -u VPROF_TRACE_DIR sh "$work/run-$build.sh" 2>&1) ;;
    vprof-*)
      out=$(pg_as_user env "${env[@]}" "$vprof" run --trace-dir trace-run --manifest "manifest-${build#vprof-}.json" -- \
        sh "$work/run-$build.sh" 2>&1)
      rec=$(printf '%s\n' "$out" | sed -n 's/.*: \([0-9]*\) records, \([0-9]*\) dropped.*/\1 \2/p' | tail -1) ;;
    *) out=$(pg_as_user env -u VPROF_TRACE_DIR sh "$work/run-$v.sh" 2>&1) ;;
  esac
  local tps p99
  tps=$(printf '%s\n' "$out" | sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
  [ -n "$tps" ] || { printf '%s\n' "$out" | tail -5 >&2; die "$v: no tps line"; }
  # pgbench -l: one line per transaction, its latency in µs in the third column.
  p99=$(cat "$work"/lat/log* | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {print a[int(NR*0.99)]/1000}')
  # The machine's busy CPU while pgbench ran (the run script notes it; over
  # the whole run where it does not: uftrace's): a cost in CPU, which a slow
  # spell of the host moves less than it moves tps.
  local b=$work/run-$build.sh.busy
  if [ "$(wc -l < "$b" 2>/dev/null)" = 2 ]; then busy=$(awk 'NR == 1 {a = $1} NR == 2 {print $1 - a}' "$b")
  else busy=$(( $(busy_ticks) - busy )); fi
  rm -f "$b"
  local yard="0 0"
  if [ -n "$perf_pid" ]; then
    kill -INT "$perf_pid"
    wait "$perf_pid" || true
    local m=-
    case $build in vprof-*) m=manifest-${build#vprof-}.json ;; esac
    yard=$(yardstick "$work/yard.data" "$m")
    rm -f "$work/yard.data"
  fi
  echo "$tps $p99 ${rec:-0 0} $busy $yard"
}

for b in $variants; do case $b in vprof-*) variants="$variants $b:P0" ;; esac; done
for b in vprof-sess100 vprof-sess500 vprof-100; do
  case " $variants " in *" $b "*) variants="$variants $b:S10" ;; esac
done
if [ -n "${ONLY:-}" ]; then  # any variant, V:P<n> for VPROF_PREEMPT=n, V:S<pct> for VPROF_SAMPLE=pct, V:off
  keep="plain"
  for v in $ONLY; do
    case " $variants " in *" ${v%%:*} "*) ;; *) die "ONLY: no variant $v (have: $variants)" ;; esac
    [ "$v" = plain ] || keep="$keep $v"
  done
  variants=$keep
fi
step "run alternately: $runs x ($variants), $clients clients x $txns transactions, scale $scale"
: > results.txt
for r in $(seq 1 "$runs"); do
  for v in $variants; do
    echo "$v $(one_run "$v")" >> results.txt
  done
done
# PERF=1: where the CPU went, one more run of each vprof variant and of plain
# under `perf record -a` (cpu-clock samples of the whole machine): busy
# microseconds a transaction by process name and object (the probes inlined
# in postgres's own code count as postgres's).
if [ "${PERF:-0}" = 1 ]; then
  command -v perf >/dev/null || die "PERF=1: no perf (apt-get install linux-perf)"
  step "PERF=1: CPU a transaction by process and object, one run each under perf record -a"
  for v in $variants; do
    case $v in plain|vprof-*) ;; *) continue ;; esac
    perf record -a -q -o "$work/perf.data" >/dev/null 2>&1 &
    rec=$!
    sleep 1
    YARDSTICK=0 one_run "$v" >/dev/null
    kill -INT "$rec"
    wait "$rec" || true
    perf report -i "$work/perf.data" --sort comm,dso -F period,comm,dso 2>/dev/null | grep -v '^#' |
      awk -v v="$v" -v n="$((clients * txns))" '
        NF >= 3 && $2 != "swapper" { ns = $1; busy += ns; k = $2 "/" $3; s[k] += ns }
        END { printf "%-17s busy %6.1f us/tx:", v, busy / n / 1000
              for (k in s) if (s[k] / n / 1000 >= 0.5) printf " %s %.1f", k, s[k] / n / 1000
              print "" }'
  done | tee perf-split.txt
  rm -f "$work/perf.data"
fi
pg_as_user rm -rf trace-run "$work/uftrace.data" "$work/lat"

python3 - "$((clients * txns))" "$clients" "$here/scripts/lib" <<'EOF'
import math, statistics, sys
n, clients = int(sys.argv[1]), int(sys.argv[2])
sys.path.insert(0, sys.argv[3])
from median_interval import median_interval
res, rounds, cur = {}, [], {}
import os
tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
busy = {}
for line in open("results.txt"):
    v, tps, p99, rec, drop, ticks, pg_ns, yard_ns = line.split()
    res.setdefault(v, []).append((float(tps), float(p99), int(rec) + int(drop), int(drop)))
    busy.setdefault(v, []).append(int(ticks) * tick_us / n)
    if v == "plain":  # each round begins with plain (the variants alternate)
        cur = {}
        rounds.append(cur)
    # postgres's CPU in yardsticks (YARDSTICK=1; nan without)
    cur[v] = (float(tps), int(ticks) * tick_us / n, int(pg_ns) / int(yard_ns) if int(yard_ns) else float("nan"))
yard = any(not math.isnan(r[v][2]) for r in rounds for v in r)

def paired(v, base, diff):
    """diff(variant's (tps, busy), base's) in each round (the machine's slow
    spells hit both), its median over the rounds and an interval for that
    median from the order statistics (the binomial's, widest k with >= 90%)."""
    return median_interval([diff(r[v], r[base]) for r in rounds if v in r and base in r])
import glob
sites = {}
for path in glob.glob("sites-*.txt"):
    name, calls, syncs = open(path).read().split()
    sites["vprof-" + name] = f"{calls}+{syncs}"
tps = {v: statistics.median(t for t, _, _, _ in r) for v, r in res.items()}
p99 = {v: statistics.median(p for _, p, _, _ in r) for v, r in res.items()}
print(f"{'variant':<11} {'sites+sync':>10} {'median tps':>11} {'min':>8} {'max':>8} {'loss':>7} "
      f"{'p99 ms':>7} {'p99 x':>6} {'added us/tx':>12} {'probes/tx':>10} {'dropped':>8} {'busy us/tx':>11}")
for v, r in res.items():
    base = "pg" if v == "uftrace" else "plain"
    ts = [t for t, _, _, _ in r]
    loss = 1 - tps[v] / tps[base]
    added = (clients / tps[v] - clients / tps[base]) * 1e6  # µs a transaction takes longer
    probes = statistics.median(x for _, _, x, _ in r) / n if v.startswith("vprof-") else float("nan")
    print(f"{v:<11} {sites.get(v, ''):>10} {tps[v]:>11.1f} {min(ts):>8.1f} {max(ts):>8.1f} {loss:>7.1%} "
          f"{p99[v]:>7.2f} {p99[v] / p99[base]:>6.2f} {added:>12.1f} {probes:>10.1f} "
          f"{sum(d for _, _, _, d in r):>8} {statistics.median(busy[v]):>11.1f}")
print("paired round by round with plain (pg for uftrace), median [interval, its coverage]:"
      " the loss of tps; the busy CPU added a transaction"
      + ("; postgres's CPU added, in the same run's yardstick (YARDSTICK=1)" if yard else ""))
normalized = {}
for v in res:
    base = "pg" if v == "uftrace" else "plain"
    if v == base:
        continue
    p = paired(v, base, lambda a, b: 1 - a[0] / b[0])
    c = paired(v, base, lambda a, b: a[1] - b[1])
    y = paired(v, base, lambda a, b: a[2] / b[2] - 1) if yard else None
    if p:
        print(f"  {v:<18} {p[0]:>6.1%} [{p[1]:.1%}, {p[2]:.1%}] ({p[3]:.0%})   "
              f"{c[0]:>+7.1f} us [{c[1]:+.1f}, {c[2]:+.1f}]"
              + (f"   {y[0]:>+6.1%} [{y[1]:+.1%}, {y[2]:+.1%}]" if y and not math.isnan(y[0]) else ""))
    if y and not math.isnan(y[0]):
        normalized[v] = y[0] * 100
per_tx = lambda v: clients / tps[v] - clients / tps["plain"]
ratio = float("nan")
if "uftrace" in tps and "vprof-esq" in tps:
    ratio = per_tx("uftrace") / per_tx("vprof-esq") if per_tx("vprof-esq") > 0 else float("inf")
    print(f"uftrace adds {per_tx('uftrace') * 1e6:.1f} us of wall time per transaction over plain; "
          f"vprof-esq, the same functions, {per_tx('vprof-esq') * 1e6:.1f}: {ratio:.1f}x")
loss = lambda v: (1 - tps[v] / tps["plain"]) * 100 if v in tps else float("nan")
if "vprof-100" in tps or "vprof-500" in tps:
    print(f"breadth-first prefixes (functions called thousands of times a transaction): "
          f"~100 sites {loss('vprof-100'):.1f}%, ~500 sites {loss('vprof-500'):.1f}%")
print(f"the sessions' sets: iteration 3 {loss('vprof-sess100'):.1f}% in full, "
      f"{loss('vprof-sess100:S10'):.1f}% at 10%; iteration 19 {loss('vprof-sess500'):.1f}% in full, "
      f"{loss('vprof-sess500:S10'):.1f}% at 10%")
# The overhead goals' figures: the sets a session instruments, as a session records them.
if normalized:
    nz = lambda v: normalized.get(v, float("nan"))
    print(f"postgres's CPU added, in yardsticks: iteration 3 {nz('vprof-sess100'):.1f}% in full, "
          f"{nz('vprof-sess100:S10'):.1f}% at 10%; breadth-first ~100 at 10% {nz('vprof-100:S10'):.1f}%")
print(f"pgbench_full_iter3={loss('vprof-sess100'):.1f} pgbench_sampled_iter3={loss('vprof-sess100:S10'):.1f} "
      f"pgbench_sampled_100={loss('vprof-100:S10'):.1f} pgbench_uftrace_over_vprof={ratio:.1f}")
EOF
