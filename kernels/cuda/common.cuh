// kernels/cuda/common.cuh -- device helpers shared by the CUDA microkernels: element types
// and conversions (f16, bf16, fp8 e4m3/e5m2), 16-byte vectors, cp.async wrappers with zero
// fill, ldmatrix and mma.sync m16n8k16 wrappers, warp reductions, and the host-side helpers
// every .cu entry point needs (stream of a context, launch checks, alignment checks).
//
// Stable interface: other kernel files include this; add to it, do not change what exists.
// Plain CUDA C plus templates for element types, so clang's CUDA front end builds it too.
#ifndef FI_CUDA_COMMON_CUH
#define FI_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include <type_traits>

#include "backend.h"
#include "context.h"
#include "pdl.cuh"

namespace fi {

// ----------------------------------------------------------------- element types ------

typedef __half f16;
typedef __nv_bfloat16 bf16;
struct e4m3 { uint8_t bits; };
struct e5m2 { uint8_t bits; };

static constexpr float kLog2e = 1.4426950408889634f;
static constexpr float kLn2 = 0.6931471805599453f;

template <typename T> struct elem_size { static constexpr int value = sizeof(T); };

// The calling thread's warp in its block, as a value the compiler knows to be the same in
// every lane (threadIdx.x / 32 is, but the compiler cannot tell): role branches become
// uniform branches and what derives from the warp (a warpgroup's wgmma descriptors, its
// shared-memory rows) lives in uniform registers instead of one vector register per lane
// (CUTLASS's canonical_warp_idx_sync). Call it where every lane of the warp is active.
__device__ __forceinline__ int warp_index() {
  return __shfl_sync(0xffffffffu, (int)(threadIdx.x >> 5), 0);
}

// float <-> 16-bit pairs.
template <typename T> __device__ __forceinline__ uint32_t pack2(float a, float b);
template <> __device__ __forceinline__ uint32_t pack2<f16>(float a, float b) {
  __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<uint32_t *>(&h);
}
template <> __device__ __forceinline__ uint32_t pack2<bf16>(float a, float b) {
  __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  return *reinterpret_cast<uint32_t *>(&h);
}
template <typename T> __device__ __forceinline__ float2 unpack2(uint32_t u);
template <> __device__ __forceinline__ float2 unpack2<f16>(uint32_t u) {
  return __half22float2(*reinterpret_cast<__half2 *>(&u));
}
template <> __device__ __forceinline__ float2 unpack2<bf16>(uint32_t u) {
  return __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&u));
}

template <typename T> __device__ __forceinline__ float to_float(T x);
template <> __device__ __forceinline__ float to_float<f16>(f16 x) { return __half2float(x); }
template <> __device__ __forceinline__ float to_float<bf16>(bf16 x) { return __bfloat162float(x); }
template <> __device__ __forceinline__ float to_float<float>(float x) { return x; }
template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ f16 from_float<f16>(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ bf16 from_float<bf16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }

// Two fp8 values (the low 16 bits, low byte first) -> the bits of an f16x2 (low half
// first), exactly (every e4m3 / e5m2 value is an f16 one).
template <typename F8> __device__ __forceinline__ uint32_t fp8x2_to_h2(uint32_t lo16) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(
      (__nv_fp8x2_storage_t)(lo16 & 0xffffu),
      std::is_same<F8, e4m3>::value ? __NV_E4M3 : __NV_E5M2);
  return (uint32_t)h.x | (uint32_t)h.y << 16;
}
// Two fp8 values (low byte first) -> float2.
template <typename F8> __device__ __forceinline__ float2 fp8x2_to_float2(uint16_t u) {
  return unpack2<f16>(fp8x2_to_h2<F8>(u));
}

// 8 consecutive elements of type T at p (16-bit: 16 bytes, fp8: 8 bytes; aligned) -> float.
template <typename T> struct vec8 {
  static __device__ __forceinline__ void load(const void *p, float *out) {
    uint4 u = *reinterpret_cast<const uint4 *>(p);
    float2 a = unpack2<T>(u.x), b = unpack2<T>(u.y), c = unpack2<T>(u.z), d = unpack2<T>(u.w);
    out[0] = a.x; out[1] = a.y; out[2] = b.x; out[3] = b.y;
    out[4] = c.x; out[5] = c.y; out[6] = d.x; out[7] = d.y;
  }
  static __device__ __forceinline__ void store(void *p, const float *in) {
    uint4 u;
    u.x = pack2<T>(in[0], in[1]); u.y = pack2<T>(in[2], in[3]);
    u.z = pack2<T>(in[4], in[5]); u.w = pack2<T>(in[6], in[7]);
    *reinterpret_cast<uint4 *>(p) = u;
  }
};
template <typename F8> struct vec8_fp8 {
  static __device__ __forceinline__ void load(const void *p, float *out) {
    uint2 u = *reinterpret_cast<const uint2 *>(p);
    float2 a = fp8x2_to_float2<F8>((uint16_t)(u.x & 0xffff));
    float2 b = fp8x2_to_float2<F8>((uint16_t)(u.x >> 16));
    float2 c = fp8x2_to_float2<F8>((uint16_t)(u.y & 0xffff));
    float2 d = fp8x2_to_float2<F8>((uint16_t)(u.y >> 16));
    out[0] = a.x; out[1] = a.y; out[2] = b.x; out[3] = b.y;
    out[4] = c.x; out[5] = c.y; out[6] = d.x; out[7] = d.y;
  }
};
template <> struct vec8<e4m3> : vec8_fp8<e4m3> {};
template <> struct vec8<e5m2> : vec8_fp8<e5m2> {};
template <> struct vec8<float> {
  static __device__ __forceinline__ void load(const void *p, float *out) {
    float4 a = reinterpret_cast<const float4 *>(p)[0], b = reinterpret_cast<const float4 *>(p)[1];
    out[0] = a.x; out[1] = a.y; out[2] = a.z; out[3] = a.w;
    out[4] = b.x; out[5] = b.y; out[6] = b.z; out[7] = b.w;
  }
  static __device__ __forceinline__ void store(void *p, const float *in) {
    reinterpret_cast<float4 *>(p)[0] = make_float4(in[0], in[1], in[2], in[3]);
    reinterpret_cast<float4 *>(p)[1] = make_float4(in[4], in[5], in[6], in[7]);
  }
};

// ------------------------------------------------------------ async copies ------------

__device__ __forceinline__ uint32_t smem_addr(const void *p) {
  return (uint32_t)__cvta_generic_to_shared(p);
}
// 16-byte global -> shared copy; when !pred the destination is zero-filled and nothing is
// read (src must still be a valid address expression; it is not dereferenced).
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem, bool pred) {
  int src_bytes = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)),
               "l"(gmem), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ------------------------------------ tensor copies and mbarriers (sm_90 and newer) ----
// A producer thread copies tensor boxes into shared memory with the copy engine (TMA), the
// copies count their bytes down on an mbarrier (complete_tx), consumers wait on the
// barrier's phase parity. Callers compile these only under __CUDA_ARCH__ >= 900.

__device__ __forceinline__ void mbar_init(uint64_t *bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(bar)), "r"(count)
               : "memory");
}
// Orders this thread's generic-proxy shared-memory accesses before later async-proxy ones
// (a tensor copy into memory the thread wrote or read).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Makes initialised barriers visible to the copy engine (the async proxy) and the CTA.
__device__ __forceinline__ void mbar_init_fence() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  fence_proxy_async_smem();
}
// One arrival that also expects `bytes` more bytes of complete_tx in the current phase.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t *bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(bar))
               : "memory");
}
// Waits until the phase with parity `parity` has completed (a fresh barrier counts its
// phase before the first as complete: waiting on parity 1 returns at once).
__device__ __forceinline__ void mbar_wait(uint64_t *bar, uint32_t parity) {
  uint32_t done;
  do {
    asm volatile(
        "{\n .reg .pred p;\n"
        " mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n"
        " selp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(parity)
        : "memory");
  } while (!done);
}
// Whether the phase with parity `parity` has completed, without waiting.
__device__ __forceinline__ bool mbar_test(uint64_t *bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n .reg .pred p;\n"
      " mbarrier.test_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(smem_addr(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
// L2 eviction priority of a copy-engine transfer's lines (PTX createpolicy, whole range):
// data other CTAs read again soon (a KV head's tiles, shared by its query tiles) kept over
// data moved once, as FA3 does; `normal` is the priority of a copy without a hint.
enum class L2Evict { normal, first, last };
template <L2Evict E> __device__ __forceinline__ uint64_t l2_policy() {
  uint64_t pol;
  if constexpr (E == L2Evict::first)
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(pol));
  else if constexpr (E == L2Evict::last)
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(pol));
  else
    asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;\n" : "=l"(pol));
  return pol;
}
// The box of the 3-D tensor map `map` at coordinates (c0, c1, c2), as tma_load_4d, its
// lines at the L2 priority `policy` (l2_policy).
__device__ __forceinline__ void tma_load_3d(void *dst, const void *map, int c0, int c1, int c2,
                                            uint64_t *bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".L2::cache_hint [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar)),
      "l"(policy)
      : "memory");
}
// The box of the 3-D tensor map `map` at coordinates (c0, c1, c2) written from shared memory
// at `src` through the copy engine (shared -> global), in this thread's current bulk group,
// its lines at the L2 priority `policy` (l2_policy): `src` may be reused once
// tma_store_wait_read has returned.
__device__ __forceinline__ void tma_store_3d(const void *map, const void *src, int c0, int c1,
                                             int c2, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group.L2::cache_hint"
      " [%0, {%1, %2, %3}], [%4], %5;\n" ::"l"(reinterpret_cast<uint64_t>(map)),
      "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(src)), "l"(policy)
      : "memory");
}
// Closes this thread's bulk group of tensor stores.
__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
// Waits until this thread's committed tensor stores have read their shared memory.
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
}
// The box of the 4-D tensor map `map` (a __grid_constant__ kernel parameter) at
// coordinates (c0, c1, c2, c3), innermost first, global -> shared through the copy engine,
// its bytes counted on `bar` (complete_tx).
__device__ __forceinline__ void tma_load_4d(void *dst, const void *map, int c0, int c1, int c2,
                                            int c3, uint64_t *bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(smem_addr(bar))
      : "memory");
}
// tma_load_4d with an L2 policy (l2_policy) for the lines it reads.
__device__ __forceinline__ void tma_load_4d(void *dst, const void *map, int c0, int c1, int c2,
                                            int c3, uint64_t *bar, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".L2::cache_hint [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(smem_addr(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3),
      "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}

// ------------------------------------------------------------ tensor cores ------------

// Four 8 x 8 matrices from the shared-memory address smem (a lane's row address), or from
// a generic pointer into shared memory.
__device__ __forceinline__ void ldmatrix_x4_at(uint32_t *r, uint32_t smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem));
}
__device__ __forceinline__ void ldmatrix_x4_trans_at(uint32_t *r, uint32_t smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem));
}
__device__ __forceinline__ void ldmatrix_x4(uint32_t *r, const void *smem) {
  ldmatrix_x4_at(r, smem_addr(smem));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t *r, const void *smem) {
  ldmatrix_x4_trans_at(r, smem_addr(smem));
}
// D(16x8, f32) += A(16x16, row) * B(16x8, col), 16-bit inputs of type T.
template <typename T>
__device__ __forceinline__ void mma_16816(float *d, const uint32_t *a, uint32_t b0, uint32_t b1);
template <>
__device__ __forceinline__ void mma_16816<f16>(float *d, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma_16816<bf16>(float *d, const uint32_t *a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// ------------------------------------------------------------ math --------------------

// exp2 that maps -inf to 0 (ex2.approx does too; kept explicit for clarity of intent).
__device__ __forceinline__ float fast_exp2(float x) { return exp2f(x); }

// sin/cos of a possibly large angle: Cody-Waite reduction to [-pi, pi] first, because the
// fast-math intrinsics lose accuracy far from 0 (RoPE angles reach 1e4 rad and more).
__device__ __forceinline__ void sincos_reduced(float x, float *s, float *c) {
  float k = rintf(x * 0.15915494309189535f);
  float r = fmaf(-k, 6.28318548202514648f, x);
  r = fmaf(-k, -1.7484556000744883e-07f, r);
  __sincosf(r, s, c);
}

// ALiBi slope of head h of n heads (Press et al.; matches the host backend).
__device__ __forceinline__ float alibi_slope(int h, int n) {
  int n2 = 1;
  while (n2 * 2 <= n) n2 *= 2;
  if (h < n2) return exp2f(-8.0f * (float)(h + 1) / (float)n2);
  return exp2f(-4.0f * (float)(2 * (h - n2) + 1) / (float)n2);
}

template <typename T> __device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

}  // namespace fi

// ------------------------------------------------------------ host side ---------------

static inline cudaStream_t fi_cuda_stream(const fi_context *ctx) {
  return (cudaStream_t)ctx->stream;
}

// Checks the launch just made; turns a failure into FI_ERROR_CUDA with the kernel's name.
static inline fi_status fi_cuda_check_launch(fi_context *ctx, const char *what) {
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return fi_set_error(ctx, FI_ERROR_CUDA, "%s: kernel launch failed: %s (%s)", what,
                        cudaGetErrorName(err), cudaGetErrorString(err));
  return FI_SUCCESS;
}

// Whether the context launches with PDL: sm_90 and later, unless its `pdl` knob is 0.
static inline bool fi_cuda_pdl(const fi_context *ctx) {
  return ctx->target.sm_version >= 90 && ctx->tuning.pdl != 0;
}

// The same on the context's stream.
template <typename... Params, typename... Args>
static inline cudaError_t fi_cuda_launch(const fi_context *ctx, dim3 grid, dim3 block,
                                         size_t smem, void (*kernel)(Params...),
                                         Args &&...args) {
  return fi::launch_on(fi_cuda_stream(ctx), fi_cuda_pdl(ctx), grid, block, smem, kernel,
                      static_cast<Args &&>(args)...);
}

static inline int fi_is_aligned(const void *p, size_t bytes) {
  return ((uintptr_t)p % bytes) == 0;
}

#endif  // FI_CUDA_COMMON_CUH
