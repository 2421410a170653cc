#!/usr/bin/env python3
"""test_block_sparse_torch.py -- block-sparse attention against PyTorch (issue 16, item 4).

fi's block-sparse plan and run (CUDA backend, through bsr_torch_shim.c) against a dense
reference that PyTorch builds from the same BSR arrays on the device: the listed blocks
turned into a [M, N] mask (with the causal diagonal and the sliding window as fi defines
them), float64 scores (scaled, soft-capped), softmax and P V; rows that keep nothing have
o = 0 and lse = -inf. FI_TEST_CONFIGS random configurations (default 200; seed
FI_TEST_SEED; lengths up to FI_TEST_MAXLEN, default 1024): the seeds' patterns (local /
sliding, global + local, random at 2-50 % density, banded, empty block rows, full), block
shapes of 16 to 256 that do and do not divide the lengths, variable block rows and columns
in a quarter, GQA groups 1-16, head_dim 64 and 128, f16 / bf16, causal or not, soft cap,
window, over contiguous K/V or (a third) a paged cache of 1-128-token pages in a shuffled
pool whose unread slots hold NaN; a quarter on forced mma.sync tiles. o and lse are
poisoned with NaN, every element is checked (|o - ref| <= atol + rtol |ref|, rtol 1e-2 f16
/ 2e-2 bf16, atol rtol x the largest |ref| of the element's (row, head); |lse - ref| <= 2e-3
+ 1e-4 |ref| + cap x 1e-3), and a second run must be bit-identical. The summary gives the
largest error over its bound that the passing configurations reached.

Exits 77 (ctest: skipped) without PyTorch or a CUDA device. --host runs the same checks on
the host backend with CPU tensors (to check the test itself on a machine without a GPU).
Usage: test_block_sparse_torch.py --shim path/to/libfi_bsr_torch_shim.so [--host]
"""
import argparse
import ctypes
import math
import os
import random
import sys

SKIP = 77
PATTERNS = ["local", "global+local", "random", "banded", "empty-rows", "full"]
MMA_TILES = [(16, 32), (16, 64), (16, 128), (32, 32), (32, 64), (32, 128), (64, 32),
             (64, 64), (64, 128), (128, 32), (128, 64)]


def make_bsr(rng, pattern, rows, cols):
    """indptr, indices of `pattern` over rows x cols blocks (as test_block_sparse_gpu.c)."""
    width = rng.randint(1, 4)
    density = rng.choice([0.02, 0.1, 0.5])
    indptr, indices = [0], []
    for i in range(rows):
        diag = (i * cols) // max(rows, 1)
        for j in range(cols):
            keep = {
                "local": diag - width < j <= diag,
                "global+local": j == 0 or diag - width < j <= diag,
                "random": rng.random() < density,
                "banded": diag - width <= j <= diag + width,
                "empty-rows": i % 3 != 1 and rng.random() < 0.6,
                "full": True,
            }[pattern]
            if keep:
                indices.append(j)
        indptr.append(len(indices))
    return indptr, indices


def random_offsets(rng, total, least):
    """Variable blocks over `total`, each >= least and <= 3 least (the last up to 4 least)."""
    least = max(1, min(least, total))
    off, pos = [0], 0
    while total - pos >= 2 * least:
        pos += rng.randint(least, min(total - pos - least, 3 * least))
        off.append(pos)
    off.append(total)
    return off


def reference(torch, q, k, v, allow, scale, cap):
    """o, lse in float64 of q [M, hq, D] over k, v [N, hk, D] where allow [M, N] keeps."""
    m, hq, d = q.shape
    group = hq // k.shape[1]
    kd = k.double().repeat_interleave(group, dim=1)
    vd = v.double().repeat_interleave(group, dim=1)
    s = torch.einsum("mhd,nhd->hmn", q.double(), kd) * scale
    if cap > 0:
        s = cap * torch.tanh(s / cap)
    s = s.masked_fill(~allow.unsqueeze(0), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)  # -inf where a row keeps nothing
    p = torch.exp(s - lse.unsqueeze(-1))
    p = torch.nan_to_num(p, nan=0.0)  # (-inf) - (-inf) on empty rows
    o = torch.einsum("hmn,nhd->mhd", p, vd)
    return o, lse.transpose(0, 1).contiguous()  # lse as [M, hq]


def elements_off(torch, got, ref, bf16):
    """o elements off: |o - ref| <= atol + rtol |ref|, atol rtol x the largest |ref| of the
    element's own (row, head): a bound over the whole tensor let a long row (|o| small)
    lose a 64-key piece unnoticed beside a short row's large values."""
    rtol = 2e-2 if bf16 else 1e-2
    g = got.double()
    maxref = ref.abs().amax(dim=-1, keepdim=True)
    atol = rtol * torch.where(maxref > 0, maxref, torch.ones_like(maxref))
    ok = (g - ref).abs() <= atol + rtol * ref.abs()  # NaN compares False
    return int((~ok).sum().item())


def lse_bound(ref, cap):
    """The LSE bound: the kernels' LSE errors are ~1e-5 (fp32 sums of exact fp16 products,
    ex2.approx), so 2e-3 + 1e-4 |lse| has a wide margin and still sees a 64-key piece of a
    4096-key row (about -log(1 - 1/64) = 0.016); a soft cap adds its tanh.approx's error,
    cap x 2^-11 at most on every logit (cap x 1e-3 here)."""
    return 2e-3 + 1e-4 * ref.abs() + cap * 1e-3


def lse_off(torch, got, ref, cap):
    g = got.double()
    neg_inf_ref = torch.isinf(ref) & (ref < 0)
    neg_inf_got = torch.isinf(g) & (g < 0)
    finite_ok = (g - ref).abs() <= lse_bound(ref, cap)
    ok = torch.where(neg_inf_ref, neg_inf_got, finite_ok & ~neg_inf_got)
    return int((~ok).sum().item())


def worst_ratios(torch, got_o, ref_o, got_lse, ref_lse, bf16, cap):
    """The largest error of o over its bound and of lse over its bound (finite rows): how
    close a passing run came (calibration data for the bounds)."""
    rtol = 2e-2 if bf16 else 1e-2
    maxref = ref_o.abs().amax(dim=-1, keepdim=True)
    bound = rtol * torch.where(maxref > 0, maxref, torch.ones_like(maxref)) + rtol * ref_o.abs()
    ro = ((got_o.double() - ref_o).abs() / bound).max().item()
    fin = torch.isfinite(ref_lse)
    rl = 0.0
    if bool(fin.any()):
        rl = ((got_lse.double() - ref_lse).abs() / lse_bound(ref_lse, cap))[fin].max().item()
    return ro, rl


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True, help="libfi_bsr_torch_shim.so")
    ap.add_argument("--host", action="store_true", help="host backend, CPU tensors")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("test_block_sparse_torch: skipped (PyTorch is not installed)")
        return SKIP
    use_cuda = not args.host
    if use_cuda and not torch.cuda.is_available():
        print("test_block_sparse_torch: skipped (no CUDA device)")
        return SKIP
    dev = "cuda" if use_cuda else "cpu"
    lib = ctypes.CDLL(args.shim)
    run = lib.fi_bsr_shim_run
    run.restype = ctypes.c_int
    i32p = ctypes.POINTER(ctypes.c_int32)
    run.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_int64), i32p, ctypes.c_float,
                    i32p, i32p, i32p, i32p, i32p, i32p, ctypes.c_void_p, ctypes.c_void_p,
                    ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p,
                    ctypes.c_int32]

    def arr(values):
        values = list(values) or [0]
        return (ctypes.c_int32 * len(values))(*values)

    configs = int(os.environ.get("FI_TEST_CONFIGS", "200" if use_cuda else "24"))
    seed = int(os.environ.get("FI_TEST_SEED", "20261204"))
    maxlen = int(os.environ.get("FI_TEST_MAXLEN", "1024" if use_cuda else "192"))
    rng = random.Random(seed)
    torch.manual_seed(seed)
    print(f"test_block_sparse_torch: {configs} configurations, seed {seed}, lengths <= {maxlen}, "
          f"{'CUDA (' + torch.cuda.get_device_name() + ')' if use_cuda else 'host backend'}, "
          f"torch {torch.__version__}", flush=True)
    failed = elements = paged_count = variable_count = mma_count = 0
    worst_o = worst_l = 0.0  # largest error / bound over the passing configurations
    rs = [16, 32, 48, 64, 100, 128, 256]
    cs = [16, 32, 64, 96, 128, 200, 256]
    for idx in range(configs):
        pattern = PATTERNS[idx % len(PATTERNS)]
        group = rng.choice([1, 2, 3, 4, 5, 6, 7, 8, 12, 16])
        hk = 1 if group >= 8 else rng.randint(1, 3)
        hq = hk * group
        hd = 128 if rng.random() < 2 / 3 else 64
        bf16 = rng.random() < 0.5
        dt = torch.bfloat16 if bf16 else torch.float16
        causal = rng.random() < 0.5
        cap = rng.uniform(5.0, 50.0) if rng.random() < 0.25 else 0.0
        m, n = rng.randint(1, maxlen), rng.randint(1, maxlen)
        window = rng.randint(0, n) if rng.random() < 0.2 else -1
        variable = rng.random() < 0.25
        R, C = rng.choice(rs), rng.choice(cs)
        if variable:
            row_off = random_offsets(rng, m, rng.choice([1, 16, 32, 64])) if rng.random() < 0.75 else None
            col_off = random_offsets(rng, n, rng.choice([3, 16, 48, 64])) if rng.random() < 0.75 or row_off is None else None
            if row_off:
                R = min(b - a for a, b in zip(row_off, row_off[1:]))
            if col_off:
                C = min(b - a for a, b in zip(col_off, col_off[1:]))
            variable_count += 1
        else:
            row_off = col_off = None
        row_b = row_off or [min(i * R, m) for i in range(-(-m // R) + 1)]
        col_b = col_off or [min(j * C, n) for j in range(-(-n // C) + 1)]
        nbr, nbc = len(row_b) - 1, len(col_b) - 1
        indptr, indices = make_bsr(rng, pattern, nbr, nbc)
        page = rng.choice([1, 8, 16, 24, 32, 64, 128]) if rng.random() < 1 / 3 else 0
        # (drawn on the host too, so that a seed gives the same shapes on both backends)
        mma_draw, mma_pick = rng.random() < 0.25, rng.choice(MMA_TILES)
        mma = use_cuda and mma_draw
        q_tile, kv_tile = mma_pick if mma else (0, 0)
        mma_count += mma

        # The dense mask of the listed blocks, then the causal diagonal and the window.
        allow = torch.zeros(m, n, dtype=torch.bool)
        for i in range(nbr):
            r0, r1 = row_b[i], row_b[i + 1]
            for e in range(indptr[i], indptr[i + 1]):
                j = indices[e]
                allow[r0:r1, col_b[j]:col_b[j + 1]] = True
        qpos = torch.arange(m).unsqueeze(1) + (n - m)
        kpos = torch.arange(n).unsqueeze(0)
        if causal:
            allow &= kpos <= qpos
        if window >= 0:
            allow &= kpos >= qpos - window
        allow = allow.to(dev)

        q = torch.randn(m, hq, hd, device=dev).to(dt)
        k = torch.randn(n, hk, hd, device=dev).to(dt)
        v = torch.randn(n, hk, hd, device=dev).to(dt)
        pages = []
        pool = 0
        if page:
            num_pages = -(-n // page)
            pool = num_pages + rng.randint(0, 4)
            order = list(range(pool))
            rng.shuffle(order)
            pages = order[:num_pages]
            # Unread slots (spare pages, the last page's tail) hold NaN: a read would show.
            kc = torch.full((pool, page, hk, hd), float("nan"), device=dev).to(dt)
            vc = torch.full((pool, page, hk, hd), float("nan"), device=dev).to(dt)
            for t in range(num_pages):
                a, b = t * page, min(n, (t + 1) * page)
                kc[pages[t], :b - a] = k[a:b]
                vc[pages[t], :b - a] = v[a:b]
            kk, vv = kc, vc
            paged_count += 1
        else:
            num_pages = 0
            kk, vv = k, v
        ref_o, ref_lse = reference(torch, q, k, v, allow, 1.0 / math.sqrt(hd), cap)

        dims = (ctypes.c_int64 * 5)(m, n, hq, hk, hd)
        opts = arr([1 if bf16 else 0, 1 if causal else 0, window, q_tile, kv_tile, page,
                    num_pages, pool])
        blocks = arr([R, C, nbr if row_off else 0, nbc if col_off else 0])
        err = ctypes.create_string_buffer(2048)
        outs = []
        desc = (f"config {idx}: {pattern}, M {m} N {n}, heads {hq}/{hk}, hd {hd}, "
                f"{'bf16' if bf16 else 'f16'}, blocks {R}x{C}{' variable' if variable else ''}"
                f"{', causal' if causal else ''}{f', cap {cap:.1f}' if cap else ''}"
                f"{f', window {window}' if window >= 0 else ''}"
                f"{f', pages of {page} (pool {pool})' if page else ''}"
                f"{f', mma.sync {q_tile}x{kv_tile}' if mma else ''}")
        ok = True
        for attempt in range(2):
            o = torch.full((m, hq, hd), float("nan"), device=dev).to(dt)
            lse = torch.full((m, hq), float("nan"), device=dev, dtype=torch.float32)
            rc = run(1 if use_cuda else 0, dims, opts, ctypes.c_float(cap), blocks, arr(indptr),
                     arr(indices), arr(row_off or []), arr(col_off or []), arr(pages),
                     q.data_ptr(), kk.data_ptr(), vv.data_ptr(), o.data_ptr(), lse.data_ptr(),
                     err, len(err))
            if rc != 0:
                print(f"FAIL {desc}: {err.value.decode()}", flush=True)
                ok = False
                break
            outs.append((o, lse))
        if ok:
            o, lse = outs[0]
            bad_o = elements_off(torch, o, ref_o, bf16)
            bad_l = lse_off(torch, lse, ref_lse, cap)
            same = torch.equal(outs[0][0].view(torch.int16), outs[1][0].view(torch.int16)) and \
                torch.equal(outs[0][1].view(torch.int32), outs[1][1].view(torch.int32))
            elements += o.numel() + lse.numel()
            if not (bad_o or bad_l) and o.numel():
                ro, rl = worst_ratios(torch, o, ref_o, lse, ref_lse, bf16, cap)
                worst_o, worst_l = max(worst_o, ro), max(worst_l, rl)
            if bad_o or bad_l or not same:
                err_max = (o.double() - ref_o).abs().nan_to_num(float("inf")).max().item() if o.numel() else 0
                print(f"FAIL {desc}: {bad_o} of {o.numel()} o elements off (max |o - ref| "
                      f"{err_max:.3g}), {bad_l} lse off{'' if same else ', second run differs'}",
                      flush=True)
                ok = False
        failed += not ok
    print(f"test_block_sparse_torch: {configs - failed} of {configs} configurations passed "
          f"({paged_count} paged, {variable_count} variable blocks, {mma_count} on mma.sync "
          f"tiles; {elements} elements checked), {failed} failed; largest error / bound of the "
          f"passing ones: o {worst_o:.3g}, lse {worst_l:.3g}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
