#!/usr/bin/env bash
# What the probes cost PostgreSQL in instructions and in (simulated) cache
# misses, a transaction, under cachegrind: counts that the host's speed does
# not move, where pgbench's tps on these machines moves by a third within
# minutes. Uses the builds scripts/bench-overhead-pgbench.sh installed in its
# work directory (inst-plain, inst-vprof-NAME, manifest-NAME.json).
# For each variant: the server under `valgrind --tool=cachegrind
# --cache-sim=yes` (it follows the backends' forks), one pgbench client
# running N1 and then N2 transactions of the bench's TPC-B script, one server
# each; the backend's counts of the N2 run less the N1 run's, over N2 - N1,
# so that the connection's start and end cancel.
# Usage: scripts/cachegrind-pgbench.sh [WORK_DIR] VARIANT...
#   VARIANT: plain | NAME:off (inst-vprof-NAME, not recording) |
#            NAME:full | NAME:P (recording in windows over P% of the time)
# Env: N1 (500) N2 (2500) SCALE (16: the database the bench made) PGUSER (nobody) PORT (5498)
# Prints a line a variant: Ir I1mr D1mr LLmr Dr Dw a transaction, then each
# variant's Ir and I1 misses in the probes' own code (lines of probes.h,
# wherever they were inlined or copied) and in the rest.
# Takes ~15 s a variant at the defaults on 2 cores.
set -euo pipefail
work=/tmp/vprof-overhead-pg
if [ $# -gt 0 ] && [ -d "$1" ]; then work=$1; shift; fi
[ $# -gt 0 ] || { echo "usage: $0 [WORK_DIR] VARIANT..." >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$0: valgrind is not installed (apt-get install valgrind)" >&2; exit 2; }
n1=${N1:-500} n2=${N2:-2500} scale=${SCALE:-16} pguser=${PGUSER:-nobody} port=${PORT:-5498}
out=$work/cachegrind
# A server already on the database (a bench in progress) would answer the
# readiness check, be measured in place of the variant's, and be stopped.
[ ! -f "$work/data/postmaster.pid" ] ||
  { echo "$0: a server is running on $work/data (postmaster.pid): stop it first" >&2; exit 2; }
mkdir -p "$out"
as_user() { if [ "$(id -u)" = 0 ]; then runuser -u "$pguser" -- "$@"; else "$@"; fi; }
[ "$(id -u)" != 0 ] || chown "$pguser" "$out"
stop() { [ -n "${bin:-}" ] && [ -f "$work/data/postmaster.pid" ] && as_user "$bin/pg_ctl" -D "$work/data" -m fast -w stop >/dev/null 2>&1 || true; }
client=
# Killed or interrupted: the client and the server stopped, nothing left running.
cleanup() { [ -z "$client" ] || kill "$client" 2>/dev/null || true; stop; wait 2>/dev/null || true; }
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
for v in "$@"; do
  case $v in
    plain) inst=$work/inst-plain ;;
    *:*) inst=$work/inst-vprof-${v%%:*} ;;
    *) echo "$0: $v: not plain or NAME:MODE" >&2; exit 2 ;;
  esac
  bin=$inst/usr/local/pgsql/bin lib=$inst/usr/local/pgsql/lib
  [ -x "$bin/postgres" ] || { echo "$0: $v: no build at $inst" >&2; exit 2; }
  env=(-u VPROF_TRACE_DIR LD_LIBRARY_PATH="$lib")
  trace=$out/trace
  case $v in
    plain|*:off) ;;
    *:full) env=(LD_LIBRARY_PATH="$lib" VPROF_TRACE_DIR="$trace" VPROF_PREEMPT=0) ;;
    *) env=(LD_LIBRARY_PATH="$lib" VPROF_TRACE_DIR="$trace" VPROF_PREEMPT=0 VPROF_SAMPLE="${v##*:}") ;;
  esac
  for n in $n1 $n2; do
    rm -rf "$trace" "$out/$v.$n".*; mkdir -p "$trace"
    [ "$(id -u)" != 0 ] || chown "$pguser" "$trace"
    as_user env "${env[@]}" valgrind -q --tool=cachegrind --cache-sim=yes \
      --cachegrind-out-file="$out/$v.$n.%p" "$bin/postgres" -D "$work/data" > "$out/$v.$n.log" 2>&1 &
    server=$!
    until "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"; do
      kill -0 "$server" 2>/dev/null ||
        { echo "$0: $v: the server did not start:" >&2; tail -3 "$out/$v.$n.log" >&2; exit 2; }
      sleep 0.5
    done
    # In the background, so that a signal is taken while it runs (bash defers
    # a trap until a foreground child exits).
    LD_LIBRARY_PATH="$lib" "$bin/pgbench" -h 127.0.0.1 -p "$port" -U postgres -n -c 1 -j 1 -t "$n" \
      -s "$scale" -f "$work/run-plain.sh.sql" postgres > "$out/$v.$n.pgbench" 2>&1 &
    client=$!
    wait "$client"
    client=
    stop
    wait || true
  done
  rm -rf "$trace"
done
python3 - "$out" "$n1" "$n2" "$@" <<'PY'
import collections, glob, sys
out, n1, n2, variants = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
def backend(v, n):  # the process that ran the most instructions: the client's backend
    best = None
    for f in glob.glob(f"{out}/{v}.{n}.[0-9]*"):
        for line in open(f):
            if line.startswith("summary:"):
                s = int(line.split()[1])
                if best is None or s > best[0]: best = (s, f)
    return best[1]
def parse(path):
    ev, tot, probes, fl = None, None, collections.Counter(), ""
    for line in open(path):
        if line.startswith("events:"): ev = line.split()[1:]
        elif line.startswith("summary:"): tot = [int(x) for x in line.split()[1:]]
        elif line.startswith("fl="): fl = line[3:].strip()
        elif line[:1].isdigit() and fl.endswith("vprof/probes.h"):
            p = line.split()
            probes["Ir"] += int(p[1]); probes["I1mr"] += int(p[2]) if len(p) > 2 else 0
    return dict(zip(ev, tot)), probes
for v in variants:
    (a, pa), (b, pb) = parse(backend(v, n1)), parse(backend(v, n2))
    d = {k: (b[k] - a[k]) / (n2 - n1) for k in a}
    p = {k: (pb[k] - pa[k]) / (n2 - n1) for k in ("Ir", "I1mr")}
    print(f"{v:22s} Ir={d['Ir']:.0f} I1mr={d['I1mr']:.1f} D1mr={d['D1mr']:.1f} "
          f"LLmr={d['ILmr'] + d['DLmr']:.1f} Dr={d['Dr']:.0f} Dw={d['Dw']:.0f} "
          f"probes.h: Ir={p['Ir']:.0f} I1mr={p['I1mr']:.1f}")
PY
