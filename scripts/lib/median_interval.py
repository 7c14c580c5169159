"""An interval for a median from its sample's order statistics, shared by the
overhead benches (scripts/bench-overhead.sh, scripts/bench-overhead-pgbench.sh).

The sample's k-th smallest and k-th largest values cover the median with
probability 1 - 2 P(Bin(m, 1/2) < k); k is the largest with that coverage
>= `least` (the widest interval when even k = 1 falls short).
"""
import math
import statistics


def median_interval(values, least=0.9):
    """(median, low, high, coverage) of `values`, or None under 3 of them."""
    ls = sorted(values)
    m = len(ls)
    if m < 3:
        return None
    cover = lambda k: 1 - 2 * sum(math.comb(m, i) for i in range(k)) / 2 ** m
    k = max([k for k in range(1, (m + 1) // 2 + 1) if cover(k) >= least] or [1])
    return statistics.median(ls), ls[k - 1], ls[m - k], cover(k)
