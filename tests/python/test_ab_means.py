"""tools/bench/ab_means.awk: multi_ab.sh's per-case means over rounds and
ratios to the first binary, in BINS order, with rounds that were not
correct flagged and lines that are not "ab" rows ignored."""

import os
import subprocess
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench",
                      "ab_means.awk")

SUMMARY = """NVIDIA H100 80GB HBM3, 37, 1980 MHz
ab new seed 2048 0.5000 2.88e-03 yes
ab base seed 2048 0.4000 2.88e-03 yes
ab new seed 4096 0.7000 2.88e-03 yes
ab base seed 4096 0.7000 2.88e-03 yes
ab base seed 2048 0.6000 2.88e-03 yes
ab new seed 2048 0.4000 2.88e-03 yes
ab new seed 4096 0.9000 2.88e-03 NO
ab base seed 4096 0.7000 2.88e-03 yes
ab new k=8,hidden=4096 2048 1.2000 2.90e-03 yes
ab 12 s
"""


def means(bins: str, text: str) -> list:
    run = subprocess.run(["awk", "-v", "bins=" + bins, "-f", SCRIPT], input=text,
                         capture_output=True, text=True, check=True)
    return run.stdout.splitlines()


class AbMeans(unittest.TestCase):
    def test_means_ratios_and_flags_in_bins_order(self):
        self.assertEqual(means("base new", SUMMARY), [
            "mean base seed 2048 0.5000 1.000 x2",
            "mean new seed 2048 0.4500 0.900 x2",
            "mean base seed 4096 0.7000 1.000 x2",
            "mean new seed 4096 0.8000 1.143 x2 NOT-CORRECT",
            # The first binary has no figure here: no ratio.
            "mean new k=8,hidden=4096 2048 1.2000 - x1",
        ])

    def test_a_binary_not_in_bins_is_left_out(self):
        self.assertEqual(means("new", SUMMARY)[0], "mean new seed 2048 0.4500 1.000 x2")
        self.assertEqual(len(means("new", SUMMARY)), 3)

    def test_rows_without_a_positive_time_are_not_figures(self):
        rows = ("ab base seed 1 timeout 0 NO\nab base seed 1 0 0 yes\nab base seed 1 -1 0 yes\n"
                "ab new seed 1 0.5000 2.88e-03 yes\n")
        self.assertEqual(means("base new", rows), ["mean new seed 1 0.5000 - x1"])

    def test_no_rows_no_output(self):
        self.assertEqual(means("base new", "ab 12 s\nsomething else\n"), [])


if __name__ == "__main__":
    unittest.main()
