// wgmma.cuh -- Hopper warpgroup MMA (wgmma.mma_async, sm_90a) for the prefill kernel's
// Hopper tier: shared-memory matrix descriptors, the fences the async proxy needs, and the
// m64nNk16 forms the kernel issues (N = 64, 128, 176 or 256; f16 or bf16 in, fp32 accumulate), and
// m64nNk32 for fp8 e4m3 (below):
//   ss: A and B from shared memory, both K-major (S = Q K^T: Q rows x head dims, K rows x
//       head dims);
//   rs: A from registers (P, the mma.sync A-fragment layout per warp), B from shared memory
//       MN-major (O += P V: V rows are KV tokens = the K dimension, head dims contiguous).
// Shared-memory tiles use the 128-byte swizzle: a tile of R rows x 2-byte elements is kept
// as slabs of 64 elements (128 bytes per row), slab s at s * R * 128 bytes, 16-byte chunk c
// of row r at r * 128 + ((c ^ (r & 7)) * 16) -- the hardware's Swizzle<3,4,3> when each slab
// starts on 1024 bytes. Descriptor strides (bytes): K-major: SBO = 1024 (8 rows), LBO unused;
// MN-major: SBO = 1024 (8 rows of the K dimension), LBO = R * 128 (the next 64 MN elements).
//
// The accumulator layout of m64nN per warp w of the warpgroup is that of mma.sync m16n8k16
// for rows 16w..16w+15: d[j][0..1] = (row g, cols 8j + 2t, +1), d[j][2..3] = (row g + 8, ...),
// with g = lane / 4, t = lane % 4; so the softmax code of the mma.sync kernel applies as is.
#ifndef FI_CUDA_WGMMA_CUH
#define FI_CUDA_WGMMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

// wgmma exists only in the arch-specific sm_90a target.
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define FI_WGMMA_AVAILABLE 1
#else
#define FI_WGMMA_AVAILABLE 0
#endif

namespace fi_wgmma {

// The operand type tag of the fp8 forms (e4m3 bytes; the fp32 accumulators as for 16-bit).
struct e4m3 {};

// A 128-byte-swizzle descriptor in two parts: the low word (address >> 4, leading byte offset)
// of a tile's base, and the descriptor at a constant byte offset from it (one 32-bit add;
// shared-memory addresses stay below 2^18, so the 14-bit address field never carries into
// the LBO). The high word holds the stride byte offset and layout type 1 (128-byte swizzle).
__device__ __forceinline__ uint32_t desc_lo(uint32_t addr, uint32_t lbo_bytes) {
  return ((addr & 0x3FFFF) >> 4) | (((lbo_bytes >> 4) & 0x3FFF) << 16);
}
__device__ __forceinline__ uint64_t desc_at(uint32_t lo, uint32_t byte_off, uint32_t sbo_bytes) {
  const uint32_t hi = ((sbo_bytes >> 4) & 0x3FFF) | (1u << 30);  // layout type 1 at bit 62
  return ((uint64_t)hi << 32) | (uint64_t)(lo + (byte_off >> 4));
}

#if FI_WGMMA_AVAILABLE
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Orders this thread's generic-proxy shared-memory writes (st.shared, cp.async after its
// wait) before later async-proxy reads (wgmma) by any thread that syncs with it.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
#else
__device__ __forceinline__ void fence() { __trap(); }
__device__ __forceinline__ void commit() { __trap(); }
template <int N>
__device__ __forceinline__ void wait() { __trap(); }
__device__ __forceinline__ void fence_proxy_async() { __trap(); }
#endif

// Keeps the compiler from moving reads or writes of accumulator registers across the
// asynchronous MMAs (they are in flight between issue and wait).
template <int NB>
__device__ __forceinline__ void fence_regs(float (&d)[NB][4]) {
#pragma unroll
  for (int j = 0; j < NB; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[j][e])::"memory");
}

template <typename T, int N>
struct Wgmma {
  // d (+)= A(desc_a) * B(desc_b); SCALE_D == 0 overwrites d. (An immediate: a register
  // defined between wgmmas makes ptxas serialise them.)
  template <int SCALE_D>
  static __device__ __forceinline__ void ss(float (&d)[N / 8][4], uint64_t desc_a,
                                            uint64_t desc_b);
  // d += A(a, registers) * B(desc_b, MN-major).
  static __device__ __forceinline__ void rs(float (&d)[N / 8][4], const uint32_t (&a)[4],
                                            uint64_t desc_b);
};

#if FI_WGMMA_AVAILABLE
// The operands of m64nNk16: the accumulators (N / 2 fp32 registers per thread) as a PTX list
// and the matching constraints, then the positions of the operands that follow them:
// ss: descriptors of A and B, scale-d; rs: the A fragment and B's descriptor, scale-d.
// The accumulators of each form are the first of the next wider one (64, 128, 176, 256).
#define FI_WGMMA_REGS32 \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define FI_WGMMA_D64 "{" FI_WGMMA_REGS32 "}"
#define FI_WGMMA_SS64 "%32, %33"
#define FI_WGMMA_SS_SCALE64 "%34"
#define FI_WGMMA_RS64 "{%32, %33, %34, %35}, %36"
#define FI_WGMMA_RS_SCALE64 "%37"
#define FI_WGMMA_C64 \
  "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]), "+f"(d[1][0]), \
  "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]), "+f"(d[2][0]), "+f"(d[2][1]), \
  "+f"(d[2][2]), "+f"(d[2][3]), "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), \
  "+f"(d[3][3]), "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]), \
  "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]), "+f"(d[6][0]), \
  "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]), "+f"(d[7][0]), "+f"(d[7][1]), \
  "+f"(d[7][2]), "+f"(d[7][3])
#define FI_WGMMA_REGS64 \
  FI_WGMMA_REGS32 ", " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define FI_WGMMA_D128 "{" FI_WGMMA_REGS64 "}"
#define FI_WGMMA_SS128 "%64, %65"
#define FI_WGMMA_SS_SCALE128 "%66"
#define FI_WGMMA_RS128 "{%64, %65, %66, %67}, %68"
#define FI_WGMMA_RS_SCALE128 "%69"
#define FI_WGMMA_C128 \
  FI_WGMMA_C64, "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]), "+f"(d[9][0]), \
  "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]), "+f"(d[10][0]), "+f"(d[10][1]), \
  "+f"(d[10][2]), "+f"(d[10][3]), "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), \
  "+f"(d[11][3]), "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]), \
  "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]), "+f"(d[14][0]), \
  "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]), "+f"(d[15][0]), "+f"(d[15][1]), \
  "+f"(d[15][2]), "+f"(d[15][3])

// m64n176k16 (S over the wide KV tiles of 176 keys): 88 accumulators, the first 64 those
// of m64n128k16.
#define FI_WGMMA_REGS88 \
  FI_WGMMA_REGS64 ", " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87"
#define FI_WGMMA_D176 "{" FI_WGMMA_REGS88 "}"
#define FI_WGMMA_SS176 "%88, %89"
#define FI_WGMMA_SS_SCALE176 "%90"
#define FI_WGMMA_RS176 "{%88, %89, %90, %91}, %92"
#define FI_WGMMA_RS_SCALE176 "%93"
#define FI_WGMMA_C176 \
  FI_WGMMA_C128, \
  "+f"(d[16][0]), "+f"(d[16][1]), "+f"(d[16][2]), "+f"(d[16][3]), \
  "+f"(d[17][0]), "+f"(d[17][1]), "+f"(d[17][2]), "+f"(d[17][3]), \
  "+f"(d[18][0]), "+f"(d[18][1]), "+f"(d[18][2]), "+f"(d[18][3]), \
  "+f"(d[19][0]), "+f"(d[19][1]), "+f"(d[19][2]), "+f"(d[19][3]), \
  "+f"(d[20][0]), "+f"(d[20][1]), "+f"(d[20][2]), "+f"(d[20][3]), \
  "+f"(d[21][0]), "+f"(d[21][1]), "+f"(d[21][2]), "+f"(d[21][3])
// m64n256k16 (the P V of head_dim 256): 128 accumulators, the first 88 those of m64n176k16.
#define FI_WGMMA_D256 \
  "{" FI_WGMMA_REGS88 ", %88, %89, %90, %91, %92, %93, %94, %95, " \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define FI_WGMMA_SS256 "%128, %129"
#define FI_WGMMA_SS_SCALE256 "%130"
#define FI_WGMMA_RS256 "{%128, %129, %130, %131}, %132"
#define FI_WGMMA_RS_SCALE256 "%133"
#define FI_WGMMA_C256 \
  FI_WGMMA_C176, \
  "+f"(d[22][0]), "+f"(d[22][1]), "+f"(d[22][2]), "+f"(d[22][3]), \
  "+f"(d[23][0]), "+f"(d[23][1]), "+f"(d[23][2]), "+f"(d[23][3]), \
  "+f"(d[24][0]), "+f"(d[24][1]), "+f"(d[24][2]), "+f"(d[24][3]), \
  "+f"(d[25][0]), "+f"(d[25][1]), "+f"(d[25][2]), "+f"(d[25][3]), \
  "+f"(d[26][0]), "+f"(d[26][1]), "+f"(d[26][2]), "+f"(d[26][3]), \
  "+f"(d[27][0]), "+f"(d[27][1]), "+f"(d[27][2]), "+f"(d[27][3]), \
  "+f"(d[28][0]), "+f"(d[28][1]), "+f"(d[28][2]), "+f"(d[28][3]), \
  "+f"(d[29][0]), "+f"(d[29][1]), "+f"(d[29][2]), "+f"(d[29][3]), \
  "+f"(d[30][0]), "+f"(d[30][1]), "+f"(d[30][2]), "+f"(d[30][3]), \
  "+f"(d[31][0]), "+f"(d[31][1]), "+f"(d[31][2]), "+f"(d[31][3])
// Both forms for one (C type, PTX type, N).
#define FI_WGMMA_FORMS(CTYPE, PTX, N)                                                        \
  template <>                                                                                \
  template <int SCALE_D>                                                                     \
  __device__ __forceinline__ void Wgmma<CTYPE, N>::ss(float (&d)[N / 8][4], uint64_t desc_a,  \
                                                      uint64_t desc_b) {                     \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " FI_WGMMA_SS_SCALE##N ", 0;\n"            \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX "." PTX " "            \
                 FI_WGMMA_D##N ", " FI_WGMMA_SS##N ", p, 1, 1, 0, 0;\n}\n"                    \
                 : FI_WGMMA_C##N                                                             \
                 : "l"(desc_a), "l"(desc_b), "n"(SCALE_D));                                  \
  }                                                                                          \
  template <>                                                                                \
  __device__ __forceinline__ void Wgmma<CTYPE, N>::rs(float (&d)[N / 8][4],                   \
                                                      const uint32_t (&a)[4], uint64_t desc_b) { \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " FI_WGMMA_RS_SCALE##N ", 0;\n"            \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PTX "." PTX " "            \
                 FI_WGMMA_D##N ", " FI_WGMMA_RS##N ", p, 1, 1, 1;\n}\n"                       \
                 : FI_WGMMA_C##N                                                             \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(1));        \
  }
// fp8 e4m3 (m64nNk32, 32 bytes of K per instruction). fp8 takes no transpose: both
// operands are K-major (the fp8 prefill stages V transposed, prefill_stage.cu), and the
// register A fragment holds 4 consecutive K elements per register (bytes, low K first):
// a[0] = (row g, k 4t..4t+3), a[1] = (row g + 8, same k), a[2] / a[3] the same at k + 16.
#define FI_WGMMA_FORMS_FP8(N)                                                                \
  template <>                                                                                \
  template <int SCALE_D>                                                                     \
  __device__ __forceinline__ void Wgmma<fi_wgmma::e4m3, N>::ss(float (&d)[N / 8][4],         \
                                                               uint64_t desc_a,              \
                                                               uint64_t desc_b) {            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " FI_WGMMA_SS_SCALE##N ", 0;\n"           \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 "                  \
                 FI_WGMMA_D##N ", " FI_WGMMA_SS##N ", p, 1, 1;\n}\n"                          \
                 : FI_WGMMA_C##N                                                             \
                 : "l"(desc_a), "l"(desc_b), "n"(SCALE_D));                                  \
  }                                                                                          \
  template <>                                                                                \
  __device__ __forceinline__ void Wgmma<fi_wgmma::e4m3, N>::rs(                              \
      float (&d)[N / 8][4], const uint32_t (&a)[4], uint64_t desc_b) {                       \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " FI_WGMMA_RS_SCALE##N ", 0;\n"           \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32.e4m3.e4m3 "                  \
                 FI_WGMMA_D##N ", " FI_WGMMA_RS##N ", p, 1, 1;\n}\n"                          \
                 : FI_WGMMA_C##N                                                             \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "n"(1));        \
  }
FI_WGMMA_FORMS_FP8(64)
FI_WGMMA_FORMS_FP8(128)
#undef FI_WGMMA_FORMS_FP8
FI_WGMMA_FORMS(__half, "f16", 64)
FI_WGMMA_FORMS(__half, "f16", 128)
FI_WGMMA_FORMS(__nv_bfloat16, "bf16", 64)
FI_WGMMA_FORMS(__nv_bfloat16, "bf16", 128)
FI_WGMMA_FORMS(__half, "f16", 256)
FI_WGMMA_FORMS(__nv_bfloat16, "bf16", 256)
FI_WGMMA_FORMS(__half, "f16", 176)
FI_WGMMA_FORMS(__nv_bfloat16, "bf16", 176)
#undef FI_WGMMA_FORMS
#else
template <typename T, int N>
template <int SCALE_D>
__device__ __forceinline__ void Wgmma<T, N>::ss(float (&)[N / 8][4], uint64_t, uint64_t) {
  __trap();
}
template <typename T, int N>
__device__ __forceinline__ void Wgmma<T, N>::rs(float (&)[N / 8][4], const uint32_t (&)[4],
                                                uint64_t) {
  __trap();
}
#endif

}  // namespace fi_wgmma

#endif
