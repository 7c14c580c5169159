"""scripts/lib/median_interval.py: the order-statistic interval of a median,
against coverages worked by hand."""
import sys
import unittest

sys.path.insert(0, sys.argv.pop(1))
from median_interval import median_interval  # noqa: E402


class MedianInterval(unittest.TestCase):
    def test_eleven_rounds_take_the_third_from_each_end(self):
        # P(Bin(11, 1/2) < 3) = (1 + 11 + 55) / 2048; coverage 1 - 2 * 67/2048 = 0.9346;
        # k = 4 would give 1 - 2 * 232/2048 = 0.773 < 0.9
        med, lo, hi, cover = median_interval([9, 1, 7, 3, 5, 0, 10, 2, 8, 4, 6])
        self.assertEqual((med, lo, hi), (5, 2, 8))
        self.assertAlmostEqual(cover, 1 - 2 * 67 / 2048)

    def test_too_few_rounds_for_the_coverage_give_the_whole_range(self):
        # Three or four rounds never reach 90% (0.75, 0.875): the widest there is,
        # where the benches' summaries used to stop with an empty max().
        self.assertEqual(median_interval([3.0, -1.0, 2.0]), (2.0, -1.0, 3.0, 0.75))
        self.assertEqual(median_interval([4, 1, 3, 2])[1:], (1, 4, 0.875))

    def test_under_three_values_there_is_none(self):
        self.assertIsNone(median_interval([1.0, 2.0]))

    def test_a_lower_coverage_narrows_it(self):
        # k = 4: 1 - 2 * 232/2048 = 0.773 >= 0.5; k = 5: 1 - 2 * 562/2048 = 0.451
        self.assertEqual(median_interval(list(range(11)), least=0.5)[1:3], (3, 7))


if __name__ == "__main__":
    unittest.main()
