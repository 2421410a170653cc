// variant_kernels.cu -- the warp-specialised prefill kernel (prefill_ws.cuh; also over
// block-sparse tiles) and decode kernel (decode_tws.cuh) with a program's attention variant (VARIANT = true: the
// score_mod / mask_mod hooks of variant_hooks.cuh), one extern "C" entry per kernel kind,
// head_dim and q dtype (decode: and RoPE or not). Not part of the runtime library: clang
// compiles it to LLVM bitcode at build time (kernels/CMakeLists.txt,
// fi_variant_kernels_sm90a.bc), and fi-to-llvm=backend=cuda links a program's variant
// functions with it, optimises them together (the hooks inlined into the kernel), and
// lowers the result through LLVM's NVPTX backend and ptxas into the program's own cubin,
// which the runtime loads once per context (variant_images.cu) and launches in place of
// its own instance under the same plan. The work split and memory traffic are
// prefill_ws.cuh's and decode_tws.cuh's. The prefill instances have none of the built-in
// extras (XF = 0: soft cap, ALiBi, custom mask, window), which the variant expresses
// instead: with them clang's code for the kernel spilled ~800 bytes per thread, without
// them none; the decode runs refuse them alike (decode.cu).
#include "../decode_tws.cuh"
#include "../prefill_ws.cuh"

// (the names begin with runtime.h's FI_VARIANT_KERNEL_PREFIX / _DECODE_KERNEL_PREFIX: bump
// their v8 here and there when PrefillParams, WsMaps, DecodeParams, TwsMaps, DecodeVariant,
// the shared-memory layouts or the hooks' contract (variant_hooks.cuh) change)
#define FI_VARIANT_PREFILL_KERNEL(HD, NAME, DT)                                          \
  extern "C" __global__ void __launch_bounds__(fi_prefill::WsShape<HD>::THREADS, 1)        \
      fi_variant_v8_prefill_hd##HD##_##NAME(const __grid_constant__ PrefillParams p,         \
                                         const __grid_constant__ fi_prefill::WsMaps maps) { \
    fi_prefill::prefill_ws_body<HD, DT, 0, false, true>(p, maps);                          \
  }

FI_VARIANT_PREFILL_KERNEL(64, f16, __half)
FI_VARIANT_PREFILL_KERNEL(64, bf16, __nv_bfloat16)
FI_VARIANT_PREFILL_KERNEL(128, f16, __half)
FI_VARIANT_PREFILL_KERNEL(128, bf16, __nv_bfloat16)

// Block-sparse attention: the same kernel over the plan's block tiles, with the masks'
// instance (its halves' bounds are masks).
#define FI_VARIANT_BLOCK_SPARSE_KERNEL(HD, NAME, DT)                                          \
  extern "C" __global__ void __launch_bounds__(fi_prefill::WsShape<HD>::THREADS, 1)            \
      fi_variant_v8_block_sparse_hd##HD##_##NAME(                                               \
          const __grid_constant__ PrefillParams p,                                              \
          const __grid_constant__ fi_prefill::WsMaps maps) {                                    \
    fi_prefill::prefill_ws_body<HD, DT, fi_prefill::WS_X_MASKS, true, true>(p, maps);           \
  }

FI_VARIANT_BLOCK_SPARSE_KERNEL(64, f16, __half)
FI_VARIANT_BLOCK_SPARSE_KERNEL(64, bf16, __nv_bfloat16)
FI_VARIANT_BLOCK_SPARSE_KERNEL(128, f16, __half)
FI_VARIANT_BLOCK_SPARSE_KERNEL(128, bf16, __nv_bfloat16)

#define FI_VARIANT_DECODE_KERNEL(HD, NAME, T, ROPE, SUFFIX)                                 \
  extern "C" __global__ void __launch_bounds__(fi::kTcw1MaxWarps * 32, 1)                   \
      fi_variant_v8_decode_hd##HD##_##NAME##SUFFIX(                                         \
          const __grid_constant__ fi::DecodeParams p, const __grid_constant__ fi::TwsMaps maps, \
          const __grid_constant__ fi::DecodeVariant var) {                                  \
    fi::decode_tws_body<T, HD, ROPE, T, true>(p, maps, var);                                \
  }

FI_VARIANT_DECODE_KERNEL(64, f16, fi::f16, false, )
FI_VARIANT_DECODE_KERNEL(64, bf16, fi::bf16, false, )
FI_VARIANT_DECODE_KERNEL(128, f16, fi::f16, false, )
FI_VARIANT_DECODE_KERNEL(128, bf16, fi::bf16, false, )
FI_VARIANT_DECODE_KERNEL(64, f16, fi::f16, true, _rope)
FI_VARIANT_DECODE_KERNEL(64, bf16, fi::bf16, true, _rope)
FI_VARIANT_DECODE_KERNEL(128, f16, fi::f16, true, _rope)
FI_VARIANT_DECODE_KERNEL(128, bf16, fi::bf16, true, _rope)
