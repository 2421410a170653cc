# bench/peers/torch_sdpa.py -- PyTorch SDPA (cuDNN and flash backends) on fi_bench prefill's
# ragged causal rows: fp16, hd 128, TFLOP/s over the kept pairs L (L + 1) / 2 as fi_bench
# counts them. GQA=1: 8 KV heads through enable_gqa; else K / V expanded to the query heads.
# Run on the GPU machine (PyTorch there): python3 bench/peers/torch_sdpa.py
# HD=256: fi_bench prefill's head_dim 256 rows (16 / 8 heads) instead.
import os
import torch, torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend
hd = int(os.environ.get("HD", "128"))
rows = ([(1, 8192, 16, 8), (8, 2048, 16, 8)] if hd == 256 else
        [(1, 8192, 32, 8), (8, 2048, 32, 8), (32, 512, 32, 8), (4, 4096, 32, 32)])
gqa = os.environ.get("GQA") == "1"
print(torch.cuda.get_device_name(), torch.__version__)
for b, L, hq, hk in rows:
    q = torch.randn(b, hq, L, hd, device="cuda", dtype=torch.float16)
    k = torch.randn(b, hk, L, hd, device="cuda", dtype=torch.float16)
    v = torch.randn(b, hk, L, hd, device="cuda", dtype=torch.float16)
    if not gqa:
        k = k.repeat_interleave(hq // hk, dim=1); v = v.repeat_interleave(hq // hk, dim=1)
    flops = 4.0 * b * hq * hd * L * (L + 1) / 2
    out = []
    for name, be in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        try:
            with sdpa_kernel(be):
                for _ in range(10): F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                torch.cuda.synchronize()
                s, e = torch.cuda.Event(True), torch.cuda.Event(True)
                s.record()
                for _ in range(50): F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=gqa)
                e.record(); torch.cuda.synchronize()
                ms = s.elapsed_time(e) / 50
                out.append(f"{name} {flops / ms / 1e9:.1f}")
        except Exception as ex:
            out.append(f"{name} n/a ({type(ex).__name__})")
    print(f"({b}, {L}, {hq}, {hk}, hd {hd}) {'gqa' if gqa else 'expanded'}: " + ", ".join(out) + " TFLOP/s")
