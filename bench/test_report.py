#!/usr/bin/python3
"""Tests of bench/report.py: run it on small results directories made here and check the
figures it prints (medians over repeats, ratios, links to the raw files, failures, exit
status). Run: /usr/bin/python3 -m unittest discover -s bench -p 'test_*.py'
"""

import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPORT = os.path.join(HERE, "report.py")
HEADER = ("dataset n server step test conns pipeline policy repeat duration_s requests "
          "ops_per_sec p50_us p99_us p999_us p9999_us max_us server_cpu_s ops_per_cpu_s "
          "client_cpu_s misses errors raw").split()


def run_row(dataset, server, step, test, conns, pipeline, repeat, ops, cpu_s, p999_us,
            policy="-", misses=0, errors=0):
    """One points.tsv row of a 10-second run."""
    raw = f"raw/{dataset}-{server}-{step}-{test}-c{conns}-p{pipeline}-r{repeat}.json"
    return {"dataset": dataset, "n": 1000000, "server": server, "step": step, "test": test,
            "conns": conns, "pipeline": pipeline, "policy": policy, "repeat": repeat,
            "duration_s": 10, "requests": ops * 10, "ops_per_sec": ops, "p50_us": 100,
            "p99_us": 1000, "p999_us": p999_us, "p9999_us": 3000, "max_us": 4000,
            "server_cpu_s": cpu_s, "ops_per_cpu_s": round(ops * 10 / cpu_s),
            "client_cpu_s": 5, "misses": misses, "errors": errors, "raw": raw}


def write_results(directory, rows, facts=(), env="date: 2026-12-01 00:00:00 UTC\n"):
    """A results directory as bench/suite.sh writes it, with empty raw files."""
    os.makedirs(os.path.join(directory, "raw"), exist_ok=True)
    with open(os.path.join(directory, "points.tsv"), "w") as f:
        f.write("\t".join(HEADER) + "\n")
        for row in rows:
            f.write("\t".join(str(row[h]) for h in HEADER) + "\n")
            open(os.path.join(directory, row["raw"]), "w").close()
    with open(os.path.join(directory, "facts.tsv"), "w") as f:
        f.writelines(f"{k}\t{v}\n" for k, v in facts)
    with open(os.path.join(directory, "env.txt"), "w") as f:
        f.write(env)


def report(directory, *args):
    """Runs report.py; returns (exit status, Markdown text or stderr)."""
    p = subprocess.run([sys.executable, REPORT, directory, *args], capture_output=True,
                       text=True, check=False)
    if p.returncode != 0:
        return p.returncode, p.stderr
    out = args[args.index("--out") + 1] if "--out" in args else os.path.join(directory,
                                                                           "report.md")
    with open(out) as f:
        return 0, f.read()


def table_row(markdown, first_cell):
    """The cells of the first table row starting with first_cell."""
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_cell:
            return cells
    raise AssertionError(f"no row {first_cell!r} in:\n{markdown}")


class ReportTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "results")

    def tearDown(self):
        self.tmp.cleanup()

    def test_medians_ratios_and_links(self):
        rows = []
        # Three repeats: the median is the middle value, not the mean.
        for r, (s_ops, r_ops) in enumerate([(90000, 100000), (120000, 110000),
                                            (60000, 300000)], 1):
            rows.append(run_row("1M", "skerry", "conns", "get", 16, 1, r, s_ops, 10, 2000 + r))
            rows.append(run_row("1M", "redis", "conns", "get", 16, 1, r, r_ops, 10, 1000 + r))
        write_results(self.dir, rows, facts=[("1M.fio_iops", "100000"),
                                             ("1M.skerry.bytes_per_key", "38.9")])
        rc, md = report(self.dir)
        self.assertEqual(rc, 0, md)
        cells = table_row(md, "16")
        self.assertEqual(cells[1:4], ["90,000", "110,000", "0.82"])  # medians, then the ratio
        self.assertEqual(cells[5:8], ["1,000", "2,002", "1,002"])  # p99s, p99.9s
        self.assertIn("Median of 3", md)
        for r in (1, 2, 3):
            self.assertIn(f"(raw/1M-skerry-conns-get-c16-p1-r{r}.json)", cells[-1])
        self.assertIn("All checks passed", md)
        summary = table_row(md, "Skerry best GET / fio ceiling")
        self.assertEqual(summary[1], "0.90")
        self.assertTrue(os.path.exists(os.path.join(self.dir, "charts", "throughput-get.svg")))

    def test_published_links_are_relative_to_the_output(self):
        write_results(self.dir, [run_row("1M", "skerry", "conns", "set", 80, 1, 1, 1000, 1, 5),
                                 run_row("1M", "redis", "conns", "set", 80, 1, 1, 2000, 1, 5)])
        out = os.path.join(self.tmp.name, "docs", "benchmarks.md")
        charts = os.path.join(self.tmp.name, "docs", "benchmarks")
        rc, md = report(self.dir, "--out", out, "--charts", charts)
        self.assertEqual(rc, 0, md)
        links = re.findall(r"\]\(([^)]+)\)", md)
        self.assertTrue(links)
        for link in links:
            path = os.path.normpath(os.path.join(os.path.dirname(out), link))
            self.assertTrue(os.path.exists(path), f"broken link {link}")
        self.assertIn("(benchmarks/throughput-set.svg)", md)

    def test_failures_are_listed(self):
        rows = [run_row("1M", "skerry", "conns", "get", 16, 1, 1, 1000, 1, 5, misses=7),
                run_row("1M", "redis", "conns", "get", 16, 1, 1, 1000, 1, 5)]
        write_results(self.dir, rows, facts=[("1M.redis.check_after_fill", "FAIL: DBSIZE 5"),
                                             ("failure", "fill failed")])
        rc, md = report(self.dir)
        self.assertEqual(rc, 0, md)
        failures = md.split("## Failures", 1)[1].split("\n## ", 1)[0]
        self.assertNotIn("All checks passed", failures)
        self.assertIn("misses 7", failures)
        self.assertIn("DBSIZE 5", failures)
        self.assertIn("fill failed", failures)

    def test_no_points_is_an_error(self):
        write_results(self.dir, [])
        rc, err = report(self.dir)
        self.assertEqual(rc, 2)
        self.assertTrue(err.strip())


if __name__ == "__main__":
    unittest.main()
