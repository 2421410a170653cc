#!/usr/bin/env python3
"""bench/ncu_sums.py -- the time of one run of a row from ncu's per-kernel report.

A row of fi_bench may launch several kernels per run (RoPE and fp8 KV: the stage pass, then
the attention kernel; split-KV: a merge after it). `ncu -k regex:... -c N --print-units base
--metrics gpu__time_duration.sum ./fi_bench SUITE --filter ROW` reports each kernel by
itself, clocks locked and caches flushed (base units: ns, where the default prints
milliseconds to three digits); this script groups them into runs and sums each run, so that
an extra's cost against the plain row is read from kernel times rather than from fi_bench's
per-process timings (which moved by +-8 % between processes on an H100; bench/NOTES.md,
session 74).

A run is every kernel up to and including one whose name matches --last (default: the
prefill attention kernels; a split-KV row's merge runs after its attention kernel, so pass
--last merge for those). Kernels after the last such one (an incomplete run) are ignored.

  ncu_sums.py LOG [LOG ...] [--last REGEX] [--base LOG]
                                             one line per log: its runs' sums (us), their
                                             median and (--base) the base log's median over
                                             it, the row's speed as a fraction of the base's
  ncu_sums.py --self-test                    checks the parser on bench/testdata
"""
import os
import re
import statistics
import sys

UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3,
         "s": 1e6, "second": 1e6}
KERNEL = re.compile(r"^\s+(?:void\s+)?(\S.*?)\(.*\)\s+\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)")
TIME = re.compile(r"^\s+gpu__time_duration\.sum\s+(\S+)\s+([0-9.,]+)\s*$")
DEFAULT_LAST = r"prefill_ws|prefill_kernel"  # the warp-specialised kernels, the mma.sync one


def kernels(text):
    """[(name, microseconds)] in the report's order."""
    out, name = [], None
    for line in text.splitlines():
        m = KERNEL.match(line)
        if m:
            name = m.group(1)
            continue
        m = TIME.match(line)
        if m and name is not None:
            unit, value = m.group(1), float(m.group(2).replace(",", ""))
            if unit not in UNITS:
                raise ValueError(f"unknown time unit {unit!r} for kernel {name}")
            out.append((name, value * UNITS[unit]))
            name = None
    return out


def runs(ks, last=DEFAULT_LAST):
    """Each run's kernels and its total (us)."""
    end = re.compile(last)
    out, cur = [], []
    for name, t in ks:
        cur.append((name, t))
        if end.search(name):
            out.append((cur, sum(x for _, x in cur)))
            cur = []
    return out


def self_test():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
    failures = 0

    def check(what, got, want):
        nonlocal failures
        if abs(got - want) > 1e-6 * max(1.0, abs(want)):
            print(f"FAIL: {what}: {got} != {want}")
            failures += 1

    # RoPE (8, 2048): the stage pass 34.30 us, the attention kernel 779.14 us, then a third
    # kernel (the next run's stage, 31.55 us) that starts a run the capture cut off.
    with open(os.path.join(here, "ncu_rope_b8_l2048.txt")) as f:
        ks = kernels(f.read())
    check("kernels in the RoPE log", len(ks), 3)
    check("its stage pass", ks[0][1], 34.30)
    check("its attention kernel", ks[1][1], 779.14)
    rs = runs(ks)
    check("complete runs in the RoPE log", len(rs), 1)
    check("the run's sum", rs[0][1], 34.30 + 779.14)
    # plain (1, 8192): three runs of the 176-key kernel alone, reported in ms.
    with open(os.path.join(here, "ncu_plain_b1_l8192.txt")) as f:
        rs = runs(kernels(f.read()))
    check("complete runs in the plain log", len(rs), 3)
    check("the first run (1.01 ms)", rs[0][1], 1010.0)
    check("the second run (1.00 ms)", rs[1][1], 1000.0)
    # a unit the parser does not know is an error, not a silent zero
    try:
        kernels("  void k(int) (1, 1, 1)x(32, 1, 1), Context 1\n"
                "    gpu__time_duration.sum          fortnight       2.00\n")
        print("FAIL: an unknown unit was accepted")
        failures += 1
    except ValueError:
        pass
    print("ncu_sums self-test: " + ("passed" if failures == 0 else f"{failures} failed"))
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    last, base, logs = DEFAULT_LAST, None, []
    args = argv[1:]
    while args:
        a = args.pop(0)
        if a == "--last":
            if not args:
                print("ncu_sums.py: --last needs a regular expression", file=sys.stderr)
                return 2
            last = args.pop(0)
        elif a == "--base":
            if not args:
                print("ncu_sums.py: --base needs a log", file=sys.stderr)
                return 2
            base = args.pop(0)
        else:
            logs.append(a)
    if not logs:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        re.compile(last)
    except re.error as e:
        print(f"ncu_sums.py: --last {last!r} is not a regular expression: {e}", file=sys.stderr)
        return 2

    def read_runs(log):
        try:
            with open(log) as f:
                text = f.read()
        except OSError as e:
            print(f"ncu_sums.py: cannot read {log}: {e.strerror}", file=sys.stderr)
            sys.exit(2)
        try:
            return runs(kernels(text), last)
        except ValueError as e:
            print(f"ncu_sums.py: {log}: {e}", file=sys.stderr)
            sys.exit(2)

    base_median = None
    if base is not None:
        brs = read_runs(base)
        if not brs:
            print(f"ncu_sums.py: the base log {base} has no complete run", file=sys.stderr)
            return 2
        base_median = statistics.median(t for _, t in brs)
    for log in logs:
        rs = read_runs(log)
        if not rs:
            print(f"{log}: no complete run (no kernel matching {last!r})")
            continue
        sums = [t for _, t in rs]
        names = " + ".join(n.replace("<unnamed>::", "").split("<")[0].split("::")[-1]
                           for n, _ in rs[0][0])
        print(f"{log}: {len(rs)} run(s) of {names}: "
              + ", ".join(f"{t:.1f}" for t in sums) + f" us; median {statistics.median(sums):.1f}"
              + (f"; x base {base_median / statistics.median(sums):.3f}" if base_median else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
