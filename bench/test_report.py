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


def tables(markdown):
    """Every Markdown table as (headers, rows), cells stripped."""
    found, current = [], None
    for line in markdown.splitlines() + [""]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if current is None:
                current = (cells, [])
            elif not all(set(c) <= set("-:") for c in cells):
                current[1].append(cells)
        elif current is not None:
            found.append(current)
            current = None
    return found


def find_table(markdown, *headers):
    """(headers, rows as header -> cell dicts) of the first table having all these headers."""
    for head, rows in tables(markdown):
        if all(h in head for h in headers):
            return head, [dict(zip(head, row)) for row in rows]
    raise AssertionError(f"no table with {headers!r} in:\n{markdown}")


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

    def test_default_configuration_rows(self):
        # Pipeline sweep at 50 connections; Skerry in its default configuration (no
        # --threads) only at pipeline 1 and 16, as bench/suite.sh runs it.
        rows = []
        for pipe, skerry, default, redis in ((1, 100000, 80000, 120000),
                                             (4, 150000, None, 200000),
                                             (16, 300000, 210000, 400000)):
            for server, ops in (("skerry", skerry), ("skerry-default", default),
                                ("redis", redis)):
                if ops is not None:
                    rows.append(run_row("1M", server, "pipeline", "get", 50, pipe, 1, ops, 10,
                                        5000))
        write_results(self.dir, rows, facts=[
            ("1M.skerry.worker_threads", "1"), ("1M.skerry-default.worker_threads", "2"),
            ("1M.skerry-default.fill_ops_per_sec", "123456"),
            ("1M.skerry-default.check_after_fill", "PASS"),
            ("1M.skerry-default.check_pinned", "FAIL: not only on CPU 0: 77(skerry):0-1")])
        rc, md = report(self.dir)
        self.assertEqual(rc, 0, md)
        ratio = "defaults / --threads 1 (ops/CPU-s)"
        head, table = find_table(md, "pipeline", "Skerry", ratio)
        got = {(r["pipeline"], r["Skerry"]): r for r in table}
        self.assertEqual(sorted(got), [("1", "--threads 1"), ("1", "defaults"),
                                       ("16", "--threads 1"), ("16", "defaults"),
                                       ("4", "--threads 1")])
        # Each defaults row right below the --threads 1 row of its point.
        order = [(r["pipeline"], r["Skerry"]) for r in table]
        self.assertEqual(order.index(("1", "defaults")), order.index(("1", "--threads 1")) + 1)
        self.assertEqual(order.index(("16", "defaults")),
                         order.index(("16", "--threads 1")) + 1)
        d1, t1 = got[("1", "defaults")], got[("1", "--threads 1")]
        self.assertEqual((d1["Skerry ops/s"], d1["Redis ops/s"], d1["Skerry/Redis"]),
                         ("80,000", "-", "0.67"))
        self.assertEqual((d1["Skerry ops/CPU-s"], d1["Skerry/Redis (ops/CPU-s)"], d1[ratio]),
                         ("80,000", "0.67", "0.80"))
        self.assertEqual((t1["Skerry ops/s"], t1["Redis ops/s"], t1[ratio]),
                         ("100,000", "120,000", "-"))
        self.assertEqual(got[("16", "defaults")][ratio], "0.70")
        self.assertIn("(raw/1M-skerry-default-pipeline-get-c50-p1-r1.json)", d1["raw"])
        self.assertNotIn("skerry-default", t1["raw"])
        self.assertIn("2 workers", md)
        # The summary's table of the default configuration beside --threads 1 and Redis.
        _, summary = find_table(md, "Skerry defaults ops/CPU-s", ratio)
        self.assertEqual([(r["pipeline"], r["Skerry --threads 1 ops/CPU-s"],
                           r["Skerry defaults ops/CPU-s"], r["Redis ops/CPU-s"], r[ratio],
                           r["defaults / Redis (ops/CPU-s)"]) for r in summary],
                         [("1", "100,000", "80,000", "120,000", "0.80", "0.67"),
                          ("16", "300,000", "210,000", "400,000", "0.70", "0.53")])
        # Its facts in the fill table (not "Other facts"), its failed check listed.
        _, fill = find_table(md, "server", "fill ops/s", "workers", "check pinned")
        fill = {r["server"]: r for r in fill}
        self.assertEqual((fill["Skerry (defaults)"]["fill ops/s"],
                          fill["Skerry (defaults)"]["workers"], fill["Skerry"]["workers"]),
                         ("123,456", "2", "1"))
        self.assertNotIn("## Other facts", md)
        failures = md.split("## Failures", 1)[1].split("\n## ", 1)[0]
        self.assertIn("Skerry (defaults) check_pinned: FAIL", failures)
        with open(os.path.join(self.dir, "charts", "pipeline.svg")) as f:
            self.assertIn("Skerry (defaults)", f.read())

    def test_no_defaults_no_defaults_columns(self):
        write_results(self.dir, [run_row("1M", s, "pipeline", "set", 50, 1, 1, 1000, 1, 5)
                                 for s in ("skerry", "redis")],
                      facts=[("1M.skerry.fill_ops_per_sec", "1000")])
        rc, md = report(self.dir)
        self.assertEqual(rc, 0, md)
        self.assertNotIn("defaults", md)
        head, _ = find_table(md, "pipeline", "Skerry ops/s")
        self.assertEqual(head[:5], ["dataset", "test", "conns", "pipeline", "Skerry ops/s"])
        head, _ = find_table(md, "server", "fill ops/s")
        self.assertNotIn("workers", head)

    def test_no_points_is_an_error(self):
        write_results(self.dir, [])
        rc, err = report(self.dir)
        self.assertEqual(rc, 2)
        self.assertTrue(err.strip())


if __name__ == "__main__":
    unittest.main()
