#!/usr/bin/env bash
# Do merged saved profiles agree with each other? (docs/analyze.md, "Intervals
# over runs"; figures in docs/performance.md.) Splits a pool of saved profiles
# of one build (default: scripts/gate-history.sh's same-build pool) into
# NGROUPS disjoint groups of SIZE, merges each (`vprof analyze --json`), and
# counts how often each group's top-3 factor shares lie inside every other
# group's interval: the between-run bootstrap vprof prints, and beside it the
# mean of per-run shares with a t-interval. Also times the merge of the first
# 100 profiles (`/usr/bin/time`).
# Usage: scripts/merge-agreement.sh [POOL_DIR]   (default /tmp/vprof-gate-history/same)
#   env: VPROF (build/src/vprof), NGROUPS (6), SIZE (20)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pool=${1:-/tmp/vprof-gate-history/same}
vprof=${VPROF:-$root/build/src/vprof}
[ -d "$pool" ] || { echo "merge-agreement: no pool at $pool (scripts/gate-history.sh makes one)" >&2; exit 2; }
first=$(ls "$pool" | sort -n | head -100 | sed "s|^|$pool/|")
for b in 0 200; do
  /usr/bin/time -f "merge of $(echo "$first" | wc -l) profiles, --bootstrap $b: %e s, peak %M KB" \
    "$vprof" analyze --bootstrap "$b" $first >/dev/null
done
python3 - "$vprof" "$pool" "${NGROUPS:-6}" "${SIZE:-20}" <<'PY'
import itertools, json, math, os, random, statistics, subprocess, sys, tempfile
vprof, pool, G, S = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
runs = sorted(os.listdir(pool), key=lambda f: int(f.split('.')[0]))
random.Random(3).shuffle(runs)
if len(runs) < G * S:
    sys.exit(f'merge-agreement: {len(runs)} profiles, {G} groups of {S} need {G * S}')
out = os.path.join(tempfile.mkdtemp(), 'm.json')
def merged(files, *extra):
    subprocess.run([vprof, 'analyze', *extra, '--json', out, *files], capture_output=True, check=True)
    return json.load(open(out))
def factor_shares(j):
    d = {}
    for n in j['nodes']:
        if n['leaf'] and n['factor']:
            d[n['factor']] = d.get(n['factor'], 0) + n['share']
    return d
per = {f: factor_shares(merged([os.path.join(pool, f)], '--bootstrap', '0')) for f in runs[:G * S]}
groups = [runs[i * S:(i + 1) * S] for i in range(G)]
boot, mean = [], []
for g in groups:
    j = merged([os.path.join(pool, f) for f in g])
    shares = factor_shares(j)
    boot.append({f['factor']: (shares[f['factor']], *f['ci95']) for f in j['factors'] if f['ci95']})
    t = {}
    for fac in set().union(*(per[f].keys() for f in g)):
        v = [per[f].get(fac, 0.0) for f in g]
        m, h = statistics.mean(v), 2.093 * statistics.stdev(v) / math.sqrt(len(v))  # t(0.975, 19)
        t[fac] = (m, m - h, m + h)
    mean.append(t)
def agreement(stats):
    inside = total = 0
    for a, b in itertools.combinations(range(G), 2):
        for x, y in ((stats[a], stats[b]), (stats[b], stats[a])):
            for f in sorted(x, key=lambda k: -x[k][0])[:3]:
                total += 1
                inside += x[f][1] <= y.get(f, (0.0,))[0] <= x[f][2]
    return inside, total
i, n = agreement(boot)
print(f'between-run bootstrap of the pooled shares: {i}/{n} top-3 shares inside the other group\'s interval ({100 * i / n:.0f}%)')
i, n = agreement(mean)
print(f'mean of per-run shares, t-interval: {i}/{n} ({100 * i / n:.0f}%)')
PY
