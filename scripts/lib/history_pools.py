# Shared by scripts/gate-history.sh, gate-history-leveldb.sh and
# gate-history-postgres.sh: pools of saved profiles (WORK/NAME/K.vprof),
# histories made of them, one gate decision, random splits (a history drawn
# from the same-build pool, a head from the rest or from another pool: the
# false-alarm rate where runs are exchangeable, and power), and what settles
# on a real tree (each statistic's run-to-run spread, a slower build's move).
import json, math, os, random, shutil, statistics, subprocess, sys


def pool(work, name):
    """The pool's profiles, by their run number."""
    d = os.path.join(work, name)
    return sorted((os.path.join(d, f) for f in os.listdir(d)), key=lambda p: int(os.path.basename(p).split('.')[0]))


def make_history(d, runs):
    """A history directory holding runs, oldest first (links to the pool's files)."""
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for i, p in enumerate(runs, 1):
        os.symlink(os.path.abspath(p), os.path.join(d, f'run-{i:06d}.vprof'))
    return d


def gate(vprof, hist_dir, runs, out, *extra):
    """One decision's JSON (exit 0 or 1; anything else stops the script)."""
    r = subprocess.run([vprof, 'gate', '--history', hist_dir, '--json', out, *extra, '--runs', *runs],
                       capture_output=True, text=True)
    if r.returncode not in (0, 1):
        sys.exit(f'gate failed ({r.returncode}): {r.stderr}')
    return json.load(open(out))


def random_splits(vprof, work, same, head_pool, m, trials, rng, H=20):
    """Regressions in `trials` decisions of m head runs against H, and the median printed p99 detectable."""
    reg, det = 0, []
    for _ in range(trials):
        if head_pool is same:
            s = rng.sample(same, H + m)
            h_runs, runs = s[:H], s[H:]
        else:
            h_runs, runs = rng.sample(same, H), rng.sample(head_pool, m)
        v = gate(vprof, make_history(os.path.join(work, 'split'), h_runs), runs, os.path.join(work, 'verdict.json'))
        reg += v['verdict'] == 'regression'
        d = next(c for c in v['checks'] if c['quantity'] == 'p99')['detectable']
        det.append(float('inf') if d is None else d)  # none: no p99 move these runs could catch
    return reg, sorted(det)[len(det) // 2]


def settle_report(vprof, work, same_name='same', slow_name='slow'):
    """Prints each statistic's run-to-run spread over the same-build pool (the
    standard deviation of its log), the slow pool's move (ratio of medians),
    and random splits of 20 same-build runs against 3 and 5 same or slow ones."""
    same, slow = pool(work, same_name), pool(work, slow_name)
    hist3 = make_history(os.path.join(work, 'split'), same[:3])

    def stats(p):  # one run judged against the first 3: its own values are "new"
        v = gate(vprof, hist3, [p], os.path.join(work, 'verdict.json'))
        return {c['quantity']: c['new'] for c in v['checks'] if not c['quantity'].startswith('outlier')}

    vals = [stats(p) for p in same]
    qs = ('p50', 'mean', 'p90', 'p99', 'p99.9', 'variance')
    spread = {q: statistics.stdev(math.log(max(v[q], 1)) for v in vals) for q in qs}
    print('per-run spread, standard deviation of the log over', len(same), 'same-build runs:',
          ', '.join(f'{q} {s:.3f}' for q, s in spread.items()))
    slow_vals = [stats(p) for p in slow]
    print('slow against same, ratio of medians:',
          ', '.join(f'{q} {statistics.median(v[q] for v in slow_vals) / statistics.median(v[q] for v in vals) - 1:+.1%}'
                    for q in ('p50', 'p90', 'p99', 'variance')))
    rng = random.Random(7)
    splits = lambda head_pool, m, trials: random_splits(vprof, work, same, head_pool, m, trials, rng)
    s3, d3 = splits(same, 3, 100)
    s5, d5 = splits(same, 5, 100)
    w3, _ = splits(slow, 3, 40)
    w5, _ = splits(slow, 5, 40)
    print(f'random splits against 20: same build regression {s3}/100 at 3 runs, {s5}/100 at 5; '
          f'slow {w3}/40 at 3, {w5}/40 at 5; detectable p99 at 3 runs {d3:+.0%}, at 5 {d5:+.0%}')
