// variant_hooks.cuh -- the attention variant a program compiles into the kernels: its
// score_mod / mask_mod (fi_score_mod_fn / fi_mask_mod_fn of runtime.h, as device functions
// of these names) are defined by the program's device code, which fi-to-llvm=backend=cuda
// links with the variant kernels' LLVM bitcode (variant_kernels.cu) and compiles through
// NVPTX and ptxas into the program's own cubin. The runtime's nvcc-built kernels never
// call them (VARIANT = false), so nothing defines them there.
#ifndef FI_CUDA_VARIANT_HOOKS_CUH
#define FI_CUDA_VARIANT_HOOKS_CUH

// On the device the score_mod comes in three parts (VariantCalls.cpp, foldScoreScales):
// the program's logit is fi_variant_score_out(c) * fi_variant_score_mod(logit *
// fi_variant_score_in(c), ...), where the two factors depend on the captures alone. So a
// soft cap, cap * tanh(s / cap), costs one multiply and the tanh per pair, as the built-in:
// the kernel folds `in` into its scale and `out` into the softmax's factor (score_mod_scales).
extern "C" __device__ float fi_variant_score_mod(float score, int batch, int qo_head,
                                                 int kv_head, int q_pos, int kv_pos,
                                                 const void *captures);
extern "C" __device__ float fi_variant_score_in(const void *captures);
extern "C" __device__ float fi_variant_score_out(const void *captures);
extern "C" __device__ int fi_variant_mask_mod(int batch, int qo_head, int q_pos, int kv_pos,
                                              const void *captures);
// The score_mod's form (VariantCalls.cpp, splitKeyLinearTerm), constants of the program the
// prefill kernel folds away: a term slope(qo_head, captures) * (kv_pos - q_pos) of the
// returned logit (ALiBi written in IR) is split off the score_mod, and the kernel adds it
// as its built-in ALiBi does (one FMA per pair; has_slope 1); a score_mod whose core is
// then the score itself (is_identity 1) is not called per pair at all (its factors join
// the softmax's). Only images of a score_mod have has_slope 1; the decode kernel reads
// neither (its score_mod keeps the whole score).
extern "C" __device__ float fi_variant_score_slope(int qo_head, const void *captures);
extern "C" __device__ int fi_variant_score_has_slope(void);
extern "C" __device__ int fi_variant_score_is_identity(void);
// mask_mod's tile classifier (runtime.h, fi_mask_tile_fn; fi-lower-to-runtime derives it
// from the mask's body): FI_MASK_TILE_EMPTY tiles are skipped, FULL ones need no mask call.
extern "C" __device__ int fi_variant_mask_tile(int batch, int qo_head_first, int qo_head_last,
                                               int q_pos_first, int q_pos_last,
                                               int kv_pos_first, int kv_pos_last,
                                               const void *captures);
// 1 when the mask_mod reads a captured table (a constant of the program): the prefill
// kernel then calls it from a rolled loop, since inlined into every pair its clamped loads
// made ptxas spill.
extern "C" __device__ int fi_variant_mask_reads_tables(void);
// 1 when the lowering split a causal term (`kv_pos <= q_pos`, alone or one side of an `and`)
// off a prefill's mask_mod (a constant of the program): the prefill kernel applies it as its
// built-in causal mask (chunks end at the diagonal, one bound per row) and the mask hook
// returns the rest. 0 in every other image (decode and block-sparse masks stay whole).
extern "C" __device__ int fi_variant_mask_causal(void);

// The score_mod's factors as a kernel applies them, once per CTA: `in` multiplies the
// logit handed to fi_variant_score_mod; the result times `fix` is the logit in units of
// `log2` (the softmax's factor to the log2 domain). A positive finite `out` is all in
// `log2` (fix = 1: no work per pair); a negative one leaves its sign in `fix` (so that the
// running max is still the max); zero, NaN or infinity stays whole in `fix`.
struct ScoreModScales {
  float in, log2, fix;
};
__device__ __forceinline__ ScoreModScales score_mod_scales(const void *captures) {
  const float log2e = 1.4426950408889634f, out = fi_variant_score_out(captures);
  const float folded = fabsf(out) * log2e;
  const bool fold = folded > 0.f && folded <= 3.402823466e38f;  // (not 0, NaN or inf)
  return {fi_variant_score_in(captures), fold ? folded : log2e,
          fold ? (out > 0.f ? 1.f : -1.f) : out};
}

#endif
