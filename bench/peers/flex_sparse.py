# PyTorch FlexAttention as a peer for `fi_bench sparse` (issue 16): block-sparse attention
# over the rows the fi suite measures -- one sequence of 16384 queries and keys, 32 / 8 heads,
# head_dim 128, fp16, no causal mask -- with random BSR matrices built as fi_bench builds them
# (every block row lists the same count of blocks, round((1 - sparsity) * blocks), at random
# columns, sorted). TFLOP/s count only the listed pairs (4 * hd * qo_heads * pairs), as the
# fi rows do; "x dense" is over FlexAttention's own dense run (no block mask) of the same call.
# Each sparse result is checked against a float32 masked reference built from the same BSR
# arrays on the first 512 query rows (every element; bound 5e-3 on fp16 outputs).
# Run on the GPU machine: python3 flex_sparse.py [block ...] (default: 64 128).
# FI_FLEX_SEQ=<n> FI_FLEX_DEVICE=cpu: a small dry run of the script itself (no timing value).
import os, sys, time, random
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
from torch.nn.attention.flex_attention import flex_attention, BlockMask

SEQ, HQ, HK, HD = int(os.environ.get("FI_FLEX_SEQ", "16384")), 32, 8, 128
DEV = os.environ.get("FI_FLEX_DEVICE", "cuda")
blocks_arg = [int(a) for a in sys.argv[1:]] or [64, 128]
flex = torch.compile(flex_attention, dynamic=False)


def sync():
    if DEV == "cuda":
        torch.cuda.synchronize()


def bench(fn, iters=30):
    for _ in range(3):
        fn()
    sync()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.05:
        fn()
    sync()
    ts = []
    for _ in range(iters):
        if DEV == "cuda":
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record(); b.synchronize()
            ts.append(a.elapsed_time(b))
        else:
            t = time.perf_counter(); fn(); ts.append((time.perf_counter() - t) * 1e3)
    ts.sort()
    return ts[len(ts) // 2]


def random_bsr(nb, sparsity, rng):
    keep = max(1, int((1.0 - sparsity) * nb + 0.5))
    rows = [sorted(rng.sample(range(nb), keep)) for _ in range(nb)]
    return keep, rows


def block_mask_of(rows, nb, block):
    # every listed block is whole: pass them as FlexAttention's "full" blocks (no mask_mod call)
    num = torch.tensor([len(r) for r in rows], dtype=torch.int32, device=DEV).view(1, 1, nb)
    idx = torch.zeros(1, 1, nb, nb, dtype=torch.int32, device=DEV)
    for i, r in enumerate(rows):
        idx[0, 0, i, :len(r)] = torch.tensor(r, dtype=torch.int32)
    zero_num = torch.zeros_like(num)
    zero_idx = torch.zeros_like(idx)
    return BlockMask.from_kv_blocks(zero_num, zero_idx, num, idx, BLOCK_SIZE=block)


def check(o, q, k, v, rows, block, nq=512):
    # float32 reference on the first nq query rows, masked by the same BSR rows
    g = HQ // HK
    kk = k.float().repeat_interleave(g, 1)
    vv = v.float().repeat_interleave(g, 1)
    s = q[:, :, :nq].float() @ kk.transpose(-1, -2) / HD ** 0.5
    allow = torch.zeros(nq, SEQ, dtype=torch.bool, device=DEV)
    for i in range(nq // block):
        for c in rows[i]:
            allow[i * block:(i + 1) * block, c * block:(c + 1) * block] = True
    s = s.masked_fill(~allow, float("-inf"))
    ref = torch.softmax(s, -1) @ vv
    err = (o[:, :, :nq].float() - ref).abs().max().item()
    return err


print(torch.cuda.get_device_name() if DEV == "cuda" else DEV, "torch", torch.__version__, flush=True)
torch.manual_seed(1)
q = torch.randn(1, HQ, SEQ, HD, device=DEV, dtype=torch.float16)
k = torch.randn(1, HK, SEQ, HD, device=DEV, dtype=torch.float16)
v = torch.randn(1, HK, SEQ, HD, device=DEV, dtype=torch.float16)
dense_flops = 4.0 * HD * HQ * SEQ * SEQ
for name, be in [("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]:
    try:
        with sdpa_kernel([be]):
            ms = bench(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
        print(f"| SDPA {name} dense L{SEQ} | {dense_flops / ms / 1e9:.1f} | |", flush=True)
    except Exception as e:
        print(f"| SDPA {name} dense | n/a ({type(e).__name__}) | |", flush=True)
try:
    ms = bench(lambda: flex(q, k, v, enable_gqa=True))
    flex_dense = dense_flops / ms / 1e9
    print(f"| flex dense L{SEQ} h{HQ}/{HK} | {flex_dense:.1f} | 1.00 |", flush=True)
except Exception as e:  # (the sparse rows still run; their "x dense" column reads n/a)
    flex_dense = float("nan")
    print(f"| flex dense L{SEQ} h{HQ}/{HK} | n/a | | {type(e).__name__}: {str(e)[:200]} |", flush=True)
rng = random.Random(20261204)
for block in blocks_arg:
    nb = SEQ // block
    for sparsity in (0.5, 0.9, 0.98):
        keep, rows = random_bsr(nb, sparsity, rng)
        try:
            bm = block_mask_of(rows, nb, block)
            # the kernel's tiles as the blocks (its default query tile, 128 on Hopper, must
            # divide the mask's block size)
            opts = {"BLOCK_M": block, "BLOCK_N": block} if block < 128 else None
            o = flex(q, k, v, block_mask=bm, enable_gqa=True, kernel_options=opts)
            err = check(o, q, k, v, rows, block)
            ms = bench(lambda: flex(q, k, v, block_mask=bm, enable_gqa=True, kernel_options=opts))
            flops = 4.0 * HD * HQ * nb * keep * block * block
            rate = flops / ms / 1e9
            print(f"| flex bsr {block}x{block} random {sparsity * 100:.0f}% | {rate:.1f} | "
                  f"{rate / flex_dense:.2f} | {ms * 1e3:.1f} us, max err {err:.2e}"
                  f"{' FAIL' if not err < 5e-3 else ''} |", flush=True)
        except Exception as e:
            print(f"| flex bsr {block}x{block} random {sparsity * 100:.0f}% | n/a | | "
                  f"{type(e).__name__}: {str(e)[:200]} |", flush=True)
