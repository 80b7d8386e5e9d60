#!/usr/bin/python3
"""Turn the raw results of bench/suite.sh into a Markdown report with SVG charts.

Usage:
    bench/report.py DIR [--out FILE] [--charts CHARTDIR] [--link-base PREFIX]

Inputs (in the results directory DIR):
  points.tsv  tab-separated, one header line, then one line per measured run:
              dataset n server step test conns pipeline policy repeat duration_s
              requests ops_per_sec p50_us p99_us p999_us p9999_us max_us
              server_cpu_s ops_per_cpu_s client_cpu_s misses errors raw
              server is skerry|redis|skerry-default (Skerry in its default
              configuration, no --threads, at a few pipeline points; its rows go
              beside Skerry's with the ratio defaults / --threads 1 of ops per
              server CPU-second); step is conns|pipeline|durability|hash
              (fill and warmup rows are not tabulated); policy is
              always|everysec|no for durability, else "-"; repeat is 1..R;
              numeric cells may be "nan" or empty; raw is the run's JSON,
              relative to DIR.
  facts.tsv   key<TAB>value lines. DATASET.SERVER.NAME per-server facts
              (fill_ops_per_sec, fill_cpu_s, rss_empty_bytes, rss_filled_bytes,
              bytes_per_key, restart_ping_s, restart_dbsize_s,
              rss_after_restart_bytes, worker_threads, check_after_fill,
              check_after_restart, check_after_points, check_pinned),
              global fio_iops, fio_file_mib, failure (repeatable). Other keys
              go to an "Other facts" table.
  env.txt     free text (its "date:" and "command:" lines feed the intro),
              included verbatim.

Outputs:
  FILE (default DIR/report.md): Markdown with failures, a summary, one table
  per step (every figure the median over the repeats of a point, raw files
  linked per row), the facts, the charts and env.txt.
  CHARTDIR (default DIR/charts): throughput-{get,set}.svg, p999-{get,set}.svg,
  pipeline.svg (a chart without data is skipped). Links in FILE are relative
  to FILE's directory; --link-base PREFIX makes raw links PREFIX/RAW instead.
  Output is deterministic for the same input.

Exit status 2 (one-line message) when DIR/points.tsv is missing or empty.
"""
import argparse
import csv
import math
import os
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullLocator  # noqa: E402


SERVERS = ("skerry", "redis")  # the compared pair: Skerry --threads 1 and Redis
DEFAULTS = "skerry-default"  # Skerry with no --threads, at some points only
ALL_SERVERS = SERVERS + (DEFAULTS,)
NAME = {"skerry": "Skerry", "redis": "Redis", DEFAULTS: "Skerry (defaults)"}
LINK = {"skerry": "s", "redis": "r", DEFAULTS: "d"}  # raw-link prefixes
# The variant column of a table with default-configuration rows, and their extra ratio.
VARIANT = {"skerry": "--threads 1", DEFAULTS: "defaults"}
DEFAULTS_RATIO = "defaults / --threads 1 (ops/CPU-s)"
NUMERIC = ("duration_s requests ops_per_sec p50_us p99_us p999_us p9999_us max_us "
           "server_cpu_s ops_per_cpu_s client_cpu_s misses errors").split()
FIELDS = ("dataset", "step", "test", "policy", "conns", "pipeline")  # a point's row id
TESTS = ("get", "set", "hset", "hdel", "fill")
POLICIES = ("always", "everysec", "no")
SKIPPED_STEPS = ("fill", "warmup")
KNOWN_STEPS = ("conns", "pipeline", "durability", "hash")
GLOBAL_FACTS = ("fio_iops", "fio_file_mib", "failure")
# Per-server facts: (NAME, column header, kind for fmt()).
SERVER_FACTS = (
    ("fill_ops_per_sec", "fill ops/s", "int"), ("fill_cpu_s", "fill CPU-s", "dec"),
    ("rss_empty_bytes", "RSS empty (MiB)", "mib"), ("rss_filled_bytes", "RSS filled (MiB)", "mib"),
    ("bytes_per_key", "bytes/key (RSS)", "int"), ("restart_ping_s", "restart to PING (s)", "dec"),
    ("restart_dbsize_s", "restart to DBSIZE (s)", "dec"),
    ("rss_after_restart_bytes", "RSS after restart (MiB)", "mib"),
    ("worker_threads", "workers", "int"),
    ("check_after_fill", "check after fill", "text"),
    ("check_after_restart", "check after restart", "text"),
    ("check_after_points", "check after points", "text"),
    ("check_pinned", "check pinned", "text"))
OPTIONAL_FACTS = ("worker_threads", "check_pinned")
CHECK_FACTS = tuple(name for name, _, _ in SERVER_FACTS if name.startswith("check_"))
# Per-dataset facts (DATASET.NAME): the device's ceiling measured for that dataset.
DATASET_FACTS = ("fio_iops", "fio_file_mib")
SUMMARY_FACTS = ("fill_ops_per_sec", "bytes_per_key", "restart_ping_s", "restart_dbsize_s")
# Comparison table columns: (label, points.tsv column, kind for fmt(), ratio column label).
COLUMNS = (("ops/s", "ops_per_sec", "int", "Skerry/Redis"),
           ("p99 (us)", "p99_us", "int", None), ("p99.9 (us)", "p999_us", "int", None),
           ("server CPU-s", "server_cpu_s", "dec", None),
           ("ops/CPU-s", "ops_per_cpu_s", "int", "Skerry/Redis (ops/CPU-s)"))
NUMBER = re.compile(r"^(-|[0-9][0-9,]*(\.[0-9]+)?( \(c=[0-9]+\))?)$")


def num(text, integer=False):
    """Parse a numeric cell (as int if integer); None for empty, nan, inf or garbage."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    if math.isnan(value) or math.isinf(value):
        return None
    return int(value) if integer else value


def fmt(kind, value):
    """Format a value (number or text cell) as kind: int (thousands separators), dec
    (2 decimals), mib (bytes as MiB, 1 decimal) or text (as is); '-' when unknown."""
    if kind == "text":
        return value or "-"
    value = num(value)
    if value is None:
        return "-"
    if kind == "int":
        return f"{round(value):,}"
    return f"{value / 1048576:,.1f}" if kind == "mib" else f"{value:,.2f}"


def ratio(a, b):
    """a / b, None when either is unknown or b is zero."""
    return None if a is None or b is None or b == 0 else a / b


def cell(text):
    """Escape a value for a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def code(text):
    """Inline code span that survives backticks inside text."""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def md_table(headers, rows):
    """Markdown table lines; columns holding only numbers (or '-') are right-aligned."""
    numeric = [i > 0 and all(NUMBER.match(str(r[i])) for r in rows) for i in range(len(headers))]
    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines + [""]


def die(message):
    """Print a one-line error and exit with status 2."""
    print(f"report.py: {message}", file=sys.stderr)
    sys.exit(2)


def load_points(directory):
    """Read DIR/points.tsv into a list of run dicts; exit 2 if missing or empty."""
    path = os.path.join(directory, "points.tsv")
    if not os.path.isfile(path):
        die(f"{path}: missing")
    runs = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if not any((v or "").strip() for v in row.values()) or not row.get("server"):
                continue
            run = {k: (row.get(k) or "").strip() for k in
                   ("dataset", "server", "step", "test", "policy", "raw")}
            run["policy"] = run["policy"] or "-"
            for k in ("n", "conns", "pipeline", "repeat"):
                run[k] = num(row.get(k), integer=True)
            for k in NUMERIC:
                run[k] = num(row.get(k))
            runs.append(run)
    if not runs:
        die(f"{path}: no data rows")
    return runs


def read_text(path):
    """Contents of a text file, '' when it does not exist."""
    if not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read()


def load_facts(directory):
    """Read DIR/facts.tsv as an ordered list of (key, value); empty if missing."""
    lines = read_text(os.path.join(directory, "facts.tsv")).splitlines()
    facts = [(k.strip(), v.strip()) for k, _, v in (line.partition("\t") for line in lines)]
    return [f for f in facts if f[0] and f != ("key", "value")]


def split_facts(facts):
    """Split facts into per-server {(dataset, server): {name: value}}, per-dataset
    {dataset: {name: value}}, globals, others."""
    per_server, per_dataset, global_facts, other = {}, {}, {}, []
    known = {name for name, _, _ in SERVER_FACTS}
    for key, value in facts:
        parts = key.rsplit(".", 2)
        if len(parts) == 3 and parts[1] in ALL_SERVERS and parts[2] in known:
            per_server.setdefault((parts[0], parts[1]), {})[parts[2]] = value
        elif len(key.rsplit(".", 1)) == 2 and key.rsplit(".", 1)[1] in DATASET_FACTS:
            dataset, name = key.rsplit(".", 1)
            per_dataset.setdefault(dataset, {})[name] = value
        elif key in GLOBAL_FACTS:
            global_facts.setdefault(key, []).append(value)
        else:
            other.append((key, value))
    return per_server, per_dataset, global_facts, other


def aggregate(runs):
    """Group runs into points {(row id, server): point}; a point has median values."""
    points = {}
    for run in runs:
        if run["step"] in SKIPPED_STEPS:
            continue
        rid = tuple(run[f] for f in FIELDS)
        points.setdefault((rid, run["server"]), {"runs": []})["runs"].append(run)
    for point in points.values():
        point["runs"].sort(key=lambda r: (r["repeat"] or 0, r["raw"]))
        for k in NUMERIC:
            values = [r[k] for r in point["runs"] if r[k] is not None]
            point[k] = statistics.median(values) if values else None
    return points


def key_cell(rid, field):
    """Table cell for one field of a row id (tests upper-cased, unknown as '-')."""
    value = rid[FIELDS.index(field)]
    return "-" if value is None else value.upper() if field == "test" else str(value)


def rank(value, order):
    """Position of value in order, unknown values after the known ones (by name)."""
    return (order.index(value), "") if value in order else (len(order), value)


class Report:
    """Builds the Markdown lines and charts from the loaded results."""

    def __init__(self, args, runs, facts, env):
        self.dir, self.runs, self.env = args.dir, runs, env
        self.out_dir = os.path.dirname(os.path.abspath(args.out))
        self.charts, self.link_base = args.charts, args.link_base
        self.points = aggregate(runs)
        self.datasets = list(dict.fromkeys(r["dataset"] for r in runs))
        self.sizes = {r["dataset"]: r["n"] for r in runs if r["n"] is not None}
        facts, self.dataset_facts, self.global_facts, self.other_facts = split_facts(facts)
        self.facts = dict(sorted(facts.items(), key=self.fact_order))

    def rel(self, path):
        """Path relative to the output file's directory, with forward slashes."""
        return os.path.relpath(os.path.abspath(path), self.out_dir).replace(os.sep, "/")

    def raw_link(self, raw):
        """Link target of a raw file named in points.tsv."""
        if self.link_base:
            return self.link_base.rstrip("/") + "/" + raw
        return self.rel(os.path.join(self.dir, raw))

    def rows(self, step, dataset=None, test=None):
        """Row ids of a step (optionally one dataset / test), sorted by dataset, policy, test,
        then numerically by conns and pipeline."""
        rids = {rid for rid, _ in self.points if rid[1] == step
                and (dataset is None or rid[0] == dataset) and (test is None or rid[2] == test)}
        return sorted(rids, key=lambda r: (rank(r[0], self.datasets), r[1], rank(r[3], POLICIES),
                                           rank(r[2], TESTS), r[4] or -1, r[5] or -1))

    def get(self, rid, server, column):
        """Median of column for a point, None when the point or value is missing."""
        point = self.points.get((rid, server))
        return None if point is None else point[column]

    def runs_of(self, rid, server):
        """The repeats of a point (empty when the server has no such point)."""
        return self.points.get((rid, server), {"runs": []})["runs"]

    def repeats_note(self, rids):
        """'Median of R' (or 'Median of A-B' if repeat counts differ) for these rows."""
        counts = sorted({len(self.runs_of(rid, s)) for rid in rids for s in ALL_SERVERS} - {0})
        if not counts:
            return ""
        text = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
        return f"Median of {text} repeat{'s' if counts[-1] > 1 else ''} per point."

    def has_defaults(self, rids):
        """Whether any of these rows has a point of Skerry in its default configuration."""
        return any((rid, DEFAULTS) in self.points for rid in rids)

    def compare_table(self, rids, keys):
        """Skerry-vs-Redis table lines for rows rids, led by the row-id fields keys. A row
        with a default-configuration point gets a second row right below it: Skerry's
        columns from that point, Redis's left out (they are in the row above; the ratios
        use them), and the ratio defaults / --threads 1 of ops per server CPU-second."""
        defaults = self.has_defaults(rids)
        headers = list(keys) + ["Skerry"] * defaults
        for label, _, _, ratio_label in COLUMNS:
            headers += [f"{NAME[s]} {label}" for s in SERVERS] + [ratio_label] * bool(ratio_label)
        headers += [DEFAULTS_RATIO] * defaults
        rows = []
        for rid in rids:
            variants = ["skerry"] + [DEFAULTS] * ((rid, DEFAULTS) in self.points)
            for skerry in variants:
                row = [key_cell(rid, k) for k in keys] + [VARIANT[skerry]] * defaults
                for _, column, kind, ratio_label in COLUMNS:
                    values = [self.get(rid, skerry, column), self.get(rid, "redis", column)]
                    row += [fmt(kind, values[0]),
                            fmt(kind, values[1]) if skerry == "skerry" else "-"]
                    row += [fmt("dec", ratio(*values))] * bool(ratio_label)
                if defaults:
                    row.append(fmt("dec", ratio(self.get(rid, DEFAULTS, "ops_per_cpu_s"),
                                                self.get(rid, "skerry", "ops_per_cpu_s")))
                               if skerry == DEFAULTS else "-")
                servers = SERVERS if skerry == "skerry" else (DEFAULTS,)
                links = [f"[{LINK[s]}{r['repeat'] or i + 1}]({self.raw_link(r['raw'])})"
                         for s in servers for i, r in enumerate(self.runs_of(rid, s)) if r["raw"]]
                rows.append(row + [" ".join(links) or "-"])
        note = [self.repeats_note(rids), ""]
        if defaults:
            note += [f"Rows \"defaults\": {self.defaults_text()}, at the same point, right "
                     "after Skerry --threads 1; their Redis figures are those of the row "
                     "above, which their Skerry/Redis ratios use.", ""]
        return note + md_table(headers + ["raw"], rows)

    def defaults_text(self):
        """What the default configuration is, with its worker count when recorded."""
        workers = sorted({fmt("int", v["worker_threads"]) for (_, s), v in self.facts.items()
                          if s == DEFAULTS and num(v.get("worker_threads")) is not None})
        count = f"{' or '.join(workers)} workers, " if workers else ""
        return (f"Skerry started with no --threads (one worker per CPU: {count}every "
                "thread of it then pinned on the CPU the other servers run on)")

    def dataset_title(self, dataset):
        """Dataset label with its key count."""
        n = self.sizes.get(dataset)
        return dataset if n is None else f"{dataset} ({n:,} keys)"

    def intro(self):
        """Title, run description from env.txt and the generation note."""
        found = {}
        for line in self.env.splitlines():
            key, sep, value = line.partition(":")
            if sep and value.strip():
                found.setdefault(key.strip().lower(), []).append(value.strip())
        text = "Measured" + (f" on {found['date'][0]}" if "date" in found else "")
        if "command" in found:
            text += " with " + ", ".join(code(c) for c in found["command"])
        lines = ["# Skerry benchmarks", ""] + ([text + ".", ""] if text != "Measured" else [])
        lines += [f"Generated by bench/report.py from {display_path(self.dir)}; every figure "
                  "is a median over the repeats of a point; raw files are linked per row.", ""]
        return lines

    def failures(self):
        """Failure facts, failed checks and runs with misses or errors."""
        items = list(self.global_facts.get("failure", []))
        for (dataset, server), values in self.facts.items():
            for name in CHECK_FACTS:
                if values.get(name, "PASS").upper() != "PASS":
                    items.append(f"{dataset} {NAME[server]} {name}: {values[name]}")
        for r in self.runs:
            if (r["misses"] or 0) > 0 or (r["errors"] or 0) > 0:
                link = f" ([raw]({self.raw_link(r['raw'])}))" if r["raw"] else ""
                policy = "" if r["policy"] == "-" else f" policy={r['policy']}"
                items.append(f"{r['dataset']} {NAME.get(r['server'], r['server'])} {r['step']} "
                             f"{r['test'].upper()} c={r['conns']} P={r['pipeline']}{policy} "
                             f"repeat {r['repeat']}: misses {fmt('int', r['misses'])}, "
                             f"errors {fmt('int', r['errors'])}{link}")
        lines = ["## Failures", ""]
        lines += [f"- {item}" for item in items] if items else ["All checks passed."]
        return lines + [""]

    def fact_order(self, item):
        """Sort key for per-server facts: dataset order, then Skerry before Redis."""
        (dataset, server), _ = item
        return rank(dataset, self.datasets), ALL_SERVERS.index(server)

    def summary(self):
        """Per dataset: best GET/SET ops/s over conns, ops/CPU-s there, fill, memory, restart."""
        lines = ["## Summary", "",
                 "Best ops/s over the connection sweep (pipeline 1) of each server, and its "
                 "ops per server CPU-second at that same point.", ""]
        for dataset in dict.fromkeys(self.datasets + [d for d, _ in self.facts]):
            if not self.rows("conns", dataset) and not any(
                    (dataset, s) in self.facts for s in SERVERS):
                continue
            rows = []
            for test in ("get", "set"):
                best = [max(((self.get(r, s, "ops_per_sec"), r) for r in
                             self.rows("conns", dataset, test)
                             if self.get(r, s, "ops_per_sec") is not None),
                            default=(None, None), key=lambda c: c[0])[1] for s in SERVERS]
                ops = [self.get(b, s, "ops_per_sec") for b, s in zip(best, SERVERS)]
                eff = [self.get(b, s, "ops_per_cpu_s") for b, s in zip(best, SERVERS)]
                rows.append([f"{test.upper()} ops/s, best"]
                            + [fmt("int", o) + (f" (c={b[4]})" if b else "")
                               for o, b in zip(ops, best)]
                            + [fmt("dec", ratio(*ops))])
                rows.append([f"{test.upper()} ops/CPU-s at that point"]
                            + [fmt("int", e) for e in eff] + [fmt("dec", ratio(*eff))])
            fio = num(self.dataset_facts.get(dataset, {}).get("fio_iops"))
            if fio:
                get_best = self.get(max(((self.get(r, "skerry", "ops_per_sec"), r)
                                         for r in self.rows("conns", dataset, "get")
                                         if self.get(r, "skerry", "ops_per_sec") is not None),
                                        default=(None, None), key=lambda c: c[0])[1],
                                    "skerry", "ops_per_sec")
                rows.append(["device ceiling: fio 4 KiB random reads/s (iodepth 32)",
                             fmt("int", fio), "-", "-"])
                rows.append(["Skerry best GET / fio ceiling", fmt("dec", ratio(get_best, fio)),
                             "-", "-"])
            for name, label, kind in (f for f in SERVER_FACTS if f[0] in SUMMARY_FACTS):
                vals = [self.facts.get((dataset, s), {}).get(name) for s in SERVERS]
                rows.append([label] + [fmt(kind, v) for v in vals]
                            + [fmt("dec", ratio(*map(num, vals)))])
            lines += [f"### {self.dataset_title(dataset)}", ""]
            lines += md_table(["", "Skerry", "Redis", "Skerry/Redis"], rows)
            lines += self.defaults_summary(dataset)
        return lines

    def defaults_summary(self, dataset):
        """The default-configuration points of a dataset beside Skerry --threads 1 (and
        Redis) at the same points; [] when it has none."""
        steps = dict.fromkeys(rid[1] for rid, _ in self.points)
        rids = [rid for step in steps for rid in self.rows(step, dataset)
                if (rid, DEFAULTS) in self.points]
        if not rids:
            return []
        rows = []
        for rid in rids:
            ops = [self.get(rid, s, "ops_per_sec") for s in ("skerry", DEFAULTS, "redis")]
            eff = [self.get(rid, s, "ops_per_cpu_s") for s in ("skerry", DEFAULTS, "redis")]
            rows.append([rid[1], key_cell(rid, "test"), key_cell(rid, "conns"),
                         key_cell(rid, "pipeline")] + [fmt("int", v) for v in ops + eff]
                        + [fmt("dec", ratio(eff[1], eff[0])), fmt("dec", ratio(eff[1], eff[2]))])
        headers = ["step", "test", "conns", "pipeline"]
        headers += [f"{who} {what}" for what in ("ops/s", "ops/CPU-s")
                    for who in ("Skerry --threads 1", "Skerry defaults", "Redis")]
        headers += [DEFAULTS_RATIO, "defaults / Redis (ops/CPU-s)"]
        return ([f"Default configuration: {self.defaults_text()}. "
                 "Ops per server CPU-second beside Skerry --threads 1 at the same points.", ""]
                + md_table(headers, rows))

    def sweeps(self):
        """Connection sweep tables, then the pipeline, durability, hash (and unknown) steps."""
        lines = ["## Connection sweep", ""] if self.rows("conns") else []
        for dataset in self.datasets:
            for test in dict.fromkeys(r[2] for r in self.rows("conns", dataset)):
                rids = self.rows("conns", dataset, test)
                pipes = sorted({r[5] for r in rids if r[5] is not None})
                lines += [f"### {self.dataset_title(dataset)}: {test.upper()}, pipeline "
                          f"{', '.join(map(str, pipes)) or '-'}", ""]
                lines += self.compare_table(rids, ["conns"])
        keys = ["dataset", "test", "conns", "pipeline"]
        specs = [("pipeline", "Pipeline sweep", keys),
                 ("durability", "Durability (SET under an fsync policy)",
                  keys[:1] + ["policy"] + keys[1:]),
                 ("hash", "Hash (HSET/HDEL)", keys)]
        steps = dict.fromkeys(rid[1] for rid, _ in self.points)
        specs += [(step, f"Step {step}", list(FIELDS)) for step in steps if step not in KNOWN_STEPS]
        for step, title, keys in specs:
            if self.rows(step):
                lines += [f"## {title}", ""] + self.compare_table(self.rows(step), keys)
        return lines

    def facts_section(self):
        """Fill, memory and restart facts per dataset x server, global and other facts."""
        lines = []
        if self.facts:
            # Columns of facts older runs did not record are left out when no row has them.
            facts = [f for f in SERVER_FACTS if f[0] not in OPTIONAL_FACTS
                     or any(f[0] in v for v in self.facts.values())]
            rows = [[d, NAME[s]] + [fmt(kind, v.get(n)) for n, _, kind in facts]
                    for (d, s), v in self.facts.items()]
            lines += ["## Fill, memory and restart", ""]
            lines += md_table(["dataset", "server"] + [h for _, h, _ in facts], rows)
        fio = {k: num(v[0]) for k, v in self.global_facts.items() if k.startswith("fio_")}
        if fio:
            lines += [f"Disk (fio): {fmt('int', fio.get('fio_iops'))} IOPS on a "
                      f"{fmt('int', fio.get('fio_file_mib'))} MiB file.", ""]
        if self.other_facts:
            lines += ["## Other facts", ""] + md_table(["key", "value"], self.other_facts)
        return lines

    def chart_series(self, step, tests, column, scale=1.0):
        """(label, style, points) per (test, dataset, server) of a step; x = conns or pipeline."""
        xcol = 4 if step == "conns" else 5
        groups = [(t, d) for t in tests for d in self.datasets if self.rows(step, d, t)]
        many_ds = len(tests) == 1 or len({d for _, d in groups}) > 1
        series = []
        for i, (test, dataset) in enumerate(groups):
            for server in ALL_SERVERS:
                pts = [(r[xcol], self.get(r, server, column))
                       for r in self.rows(step, dataset, test)]
                pts = [(x, y * scale) for x, y in pts if x and x > 0 and y is not None]
                words = [NAME[server]] + [test.upper()] * (len(tests) > 1) + [dataset] * many_ds
                style = {"color": {"skerry": "C0", "redis": "C1"}.get(server, "C2"),
                         "linestyle": ("-", "--", ":", "-.")[i % 4], "marker": "os^v"[i % 4]}
                if pts:
                    series.append((" ".join(words), style, pts))
        return series

    def chart(self, name, title, xlabel, ylabel, series, logy=False):
        """Write one line chart as CHARTDIR/name.svg; return its embed line or []."""
        if not series:
            return []
        fig, ax = plt.subplots(figsize=(7, 4))
        xs = sorted({x for _, _, pts in series for x, _ in pts})
        for label, style, pts in series:
            ax.plot([x for x, _ in pts], [y for _, y in pts], label=label, **style)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_yscale("log" if logy else "linear")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}" if logy else f"{v:,.0f}"))
        # On a log axis label only the 2x and 5x minor ticks, to keep them readable.
        ax.yaxis.set_minor_formatter(
            FuncFormatter(lambda v, _: f"{v:,g}" if f"{v:e}"[0] in "25" else ""))
        if not logy:
            ax.set_ylim(bottom=0)
        ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
        ax.grid(True, which="major", alpha=0.4)
        ax.legend(fontsize="small")
        fig.tight_layout()
        os.makedirs(self.charts, exist_ok=True)
        path = os.path.join(self.charts, name + ".svg")
        fig.savefig(path, format="svg", metadata={"Date": None})
        plt.close(fig)
        return [f"![{title}]({self.rel(path)})", ""]

    def charts_section(self):
        """Render all charts that have data and return the Charts section lines."""
        lines = []
        for test in ("get", "set"):
            lines += self.chart(f"throughput-{test}", f"{test.upper()} throughput, pipeline 1",
                                "connections", "ops/s (median)",
                                self.chart_series("conns", [test], "ops_per_sec"))
        for test in ("get", "set"):
            lines += self.chart(f"p999-{test}", f"{test.upper()} p99.9 latency, pipeline 1",
                                "connections", "p99.9 latency (ms, median)",
                                self.chart_series("conns", [test], "p999_us", 1e-3), logy=True)
        tests = list(dict.fromkeys(r[2] for r in self.rows("pipeline")))
        conns = ", ".join(map(str, sorted({r[4] for r in self.rows("pipeline") if r[4]})))
        lines += self.chart("pipeline", f"Throughput vs pipeline depth, {conns} connections",
                            "pipeline depth",
                            "ops/s (median)", self.chart_series("pipeline", tests, "ops_per_sec"))
        return (["## Charts", ""] + lines) if lines else []

    def machine(self):
        """env.txt verbatim in a fence longer than any backtick run inside it."""
        fence = "```"
        while fence in self.env:
            fence += "`"
        return ["## Machine and commands", "", fence + "text",
                self.env.rstrip("\n") or "(env.txt missing)", fence, ""]

    def markdown(self):
        """The whole report as one string."""
        lines = (self.intro() + self.failures() + self.summary() + self.sweeps()
                 + self.facts_section() + self.charts_section() + self.machine())
        return "\n".join(lines).rstrip("\n") + "\n"


def display_path(path):
    """DIR as shown in the report: relative to the repository root when inside it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    full = os.path.abspath(path)
    inside = os.path.commonpath([root, full]) == root
    return os.path.relpath(full, root) if inside else os.path.normpath(path)


def main():
    """Parse arguments, read DIR, write the report and the charts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dir", help="results directory (with points.tsv, facts.tsv, env.txt)")
    parser.add_argument("--out", help="Markdown output file (default DIR/report.md)")
    parser.add_argument("--charts", help="directory for SVG charts (default DIR/charts)")
    parser.add_argument("--link-base", help="prefix for raw-file links instead of relative paths")
    args = parser.parse_args()
    args.out = args.out or os.path.join(args.dir, "report.md")
    args.charts = args.charts or os.path.join(args.dir, "charts")
    runs, facts = load_points(args.dir), load_facts(args.dir)
    env = read_text(os.path.join(args.dir, "env.txt"))
    matplotlib.rcParams.update({"svg.hashsalt": "skerry-bench-report", "svg.fonttype": "none"})
    text = Report(args, runs, facts, env).markdown()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
