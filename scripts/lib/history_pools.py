# Shared by scripts/gate-history.sh and scripts/gate-history-leveldb.sh: pools
# of saved profiles (WORK/NAME/K.vprof), histories made of them, one gate
# decision, and random splits (a history drawn from the same-build pool, a
# head from the rest or from another pool: the false-alarm rate where runs
# are exchangeable, and power).
import json, os, shutil, subprocess, sys


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
        det.append(next(c for c in v['checks'] if c['quantity'] == 'p99')['detectable'])
    return reg, sorted(det)[len(det) // 2]
