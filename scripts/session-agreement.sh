#!/usr/bin/env bash
# Do sessions of one mode agree within their intervals? (docs/method.md, "How
# runs differ"; figures in docs/performance.md.) Analyses each session's runs
# as the session's final analysis does (`vprof analyze --root ROOT --json`, its
# iterations' traces in order), and counts, over every ordered pair of
# sessions, how often each top-3 factor's share of one lies inside the other's
# interval for that factor: `ci95` (with the spread between the runs that hold
# the factor) and, beside it, `ci95_within_run` (one run's bootstrap). An
# interval is shown as the terminal table shows it, scaled from the run that
# measured the factor to its merged share.
# Usage: scripts/session-agreement.sh ROOT SESSION_DIR SESSION_DIR...
#   (a SESSION_DIR is a .vprof-session directory, moved or not)
#   env: VPROF (build/src/vprof)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
vprof=${VPROF:-$root/build/src/vprof}
[ $# -ge 3 ] || { echo "usage: $0 ROOT SESSION_DIR SESSION_DIR..." >&2; exit 2; }
fn=$1
shift
python3 - "$vprof" "$fn" "$@" <<'PY'
import itertools, json, os, subprocess, sys, tempfile
vprof, fn, sessions = sys.argv[1], sys.argv[2], sys.argv[3:]
tmp = tempfile.mkdtemp()
def analysis(session):
    state = json.load(open(os.path.join(session, 'state.json')))
    dirs = [os.path.join(session, f"iter-{it['number']}", 'trace') for it in state['iterations']
            if it.get('phase') in ('ran', 'decided')]
    for d in dirs:
        if not os.path.isdir(d):
            sys.exit(f'session-agreement: {d}: no trace (was it deleted?)')
    out = os.path.join(tmp, f'{len(os.listdir(tmp))}.json')
    subprocess.run([vprof, 'analyze', '--root', fn, '--json', out, *dirs], capture_output=True, check=True)
    j = json.load(open(out))
    got = {}
    for f in j['factors']:
        scale = 1.0
        if f['run'] and f['run_value'] and f['share'] / f['run_value'] > 0:
            scale = f['share'] / f['run_value']
        iv = lambda ci: (scale * ci[0], scale * ci[1]) if ci else None
        got[f['name']] = dict(rank=f['rank'], share=f['share'], runs=f.get('runs_measured', 0),
                              ci=iv(f['ci95']), within=iv(f.get('ci95_within_run')))
    print(f"{session}: {len(dirs)} runs; top 3: " +
          '; '.join(f"{n} {100 * g['share']:.1f}% [{100 * g['ci'][0]:.1f}, {100 * g['ci'][1]:.1f}] in {g['runs']} runs"
                    if g['ci'] else f"{n} {100 * g['share']:.1f}% (no interval)"
                    for n, g in sorted(got.items(), key=lambda x: x[1]['rank']) if 0 < g['rank'] <= 3))
    return got
got = [analysis(s) for s in sessions]
for kind in ('ci', 'within'):
    inside = total = held = held_inside = 0
    for a, b in itertools.permutations(range(len(got)), 2):
        for name, g in got[a].items():
            if not 0 < g['rank'] <= 3:
                continue
            total += 1
            other = got[b].get(name)
            iv = other and other[kind]
            ok = bool(iv and iv[0] <= g['share'] <= iv[1])
            inside += ok
            held += bool(iv)  # the other session has the factor, with an interval
            held_inside += ok
    what = 'ci95 (with the spread between runs)' if kind == 'ci' else 'ci95_within_run (one run\'s bootstrap)'
    print(f'{what}: {inside}/{total} top-3 shares inside the other session\'s interval'
          f' ({100 * inside / max(total, 1):.0f}%); {held_inside}/{held} where the other has the factor'
          f' with an interval')
PY
