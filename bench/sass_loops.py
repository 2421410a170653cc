#!/usr/bin/env python3
"""bench/sass_loops.py -- the loops of each kernel in a `cuobjdump -sass` listing.

The build machine has no cuobjdump or nvdisasm in its CUDA toolkit; NVIDIA's wheels on PyPI
carry both (`pip download --no-deps nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm`, unzip,
nvidia/cu13/bin/). With them a kernel's SASS is read here, without a device: which loop is
a warp-specialised consumer's tile loop (the smallest one holding a tile's wgmmas), how
many instructions it issues per tile, and whether ptxas put spills (STL / LDL) inside it or
only in the code around it (bench/NOTES.md, session 75).

A loop is a backward branch `BRA target` with target < the branch's address (a hex address,
or a label `.L_x_N` that a `.L_x_N:` line defines, as nvdisasm prints them); its body is
every instruction in [target, branch] (statically: both sides of the branches inside it).
A function listed again (another ELF section: a fatbin of several architectures, or the same
instance in several objects of a library) is kept apart as NAME#2, NAME#3, ...

  sass_loops.py SASS [--function SUBSTR] [--min-hgmma N] [--top K] [--hist]
      per function: its instruction and spill counts, then its K smallest loops holding at
      least N HGMMA (default 1, K 3) with the counts of HGMMA, MUFU, FFMA, STL and LDL;
      --hist: the opcode histogram of each function's smallest such loop
  sass_loops.py --self-test                checks the parser on bench/testdata/sass_loop.txt
"""
import collections
import os
import re
import signal
import sys

FUNCTION = re.compile(r"Function : (\S+)")
INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
LABEL = re.compile(r"^\s*(\.L_x_\d+):")
BRANCH = re.compile(r"\bBRA\b.*?(0x[0-9a-f]+|\.L_x_\d+)")
CLASSES = ("HGMMA", "MUFU", "FFMA", "STL", "LDL")


def parse(text):
    """{function: [(address, instruction)]} in listing order, each branch to a label
    rewritten to the label's address."""
    funcs, cur, labels, pending = {}, None, {}, []

    def close():
        for i, (a, ins) in enumerate(cur or []):
            m = BRANCH.search(ins)
            if m and m.group(1) in labels:
                cur[i] = (a, re.sub(r"`?\(?" + re.escape(m.group(1)) + r"\)?",
                                    hex(labels[m.group(1)]), ins))

    for line in text.splitlines():
        m = FUNCTION.search(line)
        if m:
            close()
            name, k = m.group(1), 2
            while name in funcs:
                name, k = f"{m.group(1)}#{k}", k + 1
            cur, labels, pending = funcs.setdefault(name, []), {}, []
            continue
        m = LABEL.match(line)
        if m and cur is not None:
            pending.append(m.group(1))  # the next instruction's address
            continue
        m = INSTR.match(line)
        if m and cur is not None:
            addr = int(m.group(1), 16)
            for label in pending:
                labels[label] = addr
            pending = []
            cur.append((addr, m.group(2).strip()))
    close()
    return funcs


def opcode(ins):
    parts = ins.split()
    if parts and parts[0].startswith("@"):  # a predicate
        parts = parts[1:]
    return parts[0] if parts else ""


def loops(ins, min_hgmma=1):
    """[(size, start, end, {class: count})] of the backward branches' bodies, smallest first."""
    out = []
    for addr, i in ins:
        m = BRANCH.search(i)
        if not m or not m.group(1).startswith("0x") or int(m.group(1), 16) >= addr:
            continue
        start = int(m.group(1), 16)
        body = [opcode(x) for a, x in ins if start <= a <= addr]
        counts = {c: sum(op.startswith(c) for op in body) for c in CLASSES}
        if counts["HGMMA"] >= min_hgmma:
            out.append((len(body), start, addr, counts))
    return sorted(out)


def histogram(ins, start, end):
    return collections.Counter(opcode(x) for a, x in ins if start <= a <= end)


def report(funcs, substr, min_hgmma, top, hist):
    for name, ins in funcs.items():
        if substr and substr not in name:
            continue
        spills = sum(opcode(i).startswith("STL") for _, i in ins), \
            sum(opcode(i).startswith("LDL") for _, i in ins)
        print(f"{name}: {len(ins)} instructions, STL {spills[0]}, LDL {spills[1]}")
        found = loops(ins, min_hgmma)
        for size, start, end, c in found[:top]:
            print(f"  loop {start:#x}-{end:#x}: {size} instructions, " +
                  ", ".join(f"{k} {c[k]}" for k in CLASSES))
        if hist and found:
            for op, n in histogram(ins, found[0][1], found[0][2]).most_common():
                print(f"    {n:6d} {op}")


def self_test():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
    with open(os.path.join(here, "sass_loop.txt")) as f:
        funcs = parse(f.read())
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: {got} != {want}")

    check("functions", sorted(funcs),
          ["_Z4tileP6__half", "_Z4tileP6__half#2", "_Z5setupPi"])
    tile = funcs["_Z4tileP6__half"]
    check("instructions of tile", len(tile), 15)
    found = loops(tile, 1)
    # the inner loop (0x60-0xb0: six instructions) first, then the outer one (0x30-0xd0,
    # eleven); the branch to a label (0xc0) goes forward to 0xe0 and is no loop
    check("loops with a wgmma", [(n, hex(a), hex(b)) for n, a, b, _ in found],
          [(6, "0x60", "0xb0"), (11, "0x30", "0xd0")])
    check("the inner loop's counts", found[0][3],
          {"HGMMA": 2, "MUFU": 1, "FFMA": 1, "STL": 0, "LDL": 1})
    check("a predicated opcode", opcode("@!P0 BRA 0x60"), "BRA")
    check("loops of at least 3 wgmmas", [(n, c["HGMMA"], c["STL"]) for n, _, _, c in loops(tile, 3)],
          [(11, 3, 1)])
    check("setup has no loop", loops(funcs["_Z5setupPi"], 0), [])
    check("the forward branch to a label, resolved", tile[12][1], "BRA 0xe0")
    # the same kernel listed again (another section), as nvdisasm prints it: its loop is a
    # branch to a label, and its addresses do not mix with the first listing's
    again = funcs["_Z4tileP6__half#2"]
    check("the second listing's loops", [(n, hex(a), hex(b)) for n, a, b, _ in loops(again, 1)],
          [(3, "0x10", "0x30")])
    check("histogram of the inner loop", histogram(tile, 0x60, 0xb0)["HGMMA.64x176x16.F32"], 2)
    for f in failures:
        print("FAIL:", f)
    print("sass_loops self-test:", "FAILED" if failures else "passed")
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    args, opts = [], {"--function": "", "--min-hgmma": "1", "--top": "3"}
    hist, it = False, iter(argv[1:])
    for a in it:
        if a == "--hist":
            hist = True
        elif a in opts:
            opts[a] = next(it, None)
            if opts[a] is None:
                print(f"sass_loops.py: {a} needs a value", file=sys.stderr)
                return 2
        elif a.startswith("--"):
            print(f"sass_loops.py: unknown option {a} (see the header)", file=sys.stderr)
            return 2
        else:
            args.append(a)
    if len(args) != 1:
        print("usage: sass_loops.py SASS [--function SUBSTR] [--min-hgmma N] [--top K] "
              "[--hist] | --self-test", file=sys.stderr)
        return 2
    try:
        min_hgmma, top = int(opts["--min-hgmma"]), int(opts["--top"])
        with open(args[0]) as f:
            funcs = parse(f.read())
    except (ValueError, OSError) as e:
        print(f"sass_loops.py: {e}", file=sys.stderr)
        return 2
    if not funcs:
        print(f"sass_loops.py: no function in {args[0]} (a cuobjdump -sass listing?)",
              file=sys.stderr)
        return 2
    report(funcs, opts["--function"], min_hgmma, top, hist)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # (| head: stop quietly)
    sys.exit(main(sys.argv))
