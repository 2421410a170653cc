/* Driver of test/E2E/merge_append.mlir: merges of random attention states (some rows
 * -inf) and appends of random ragged new tokens into random page tables, compiled code
 * against the runtime called directly. */
#include "e2e.h"

typedef struct { memref3 v; memref2 s; } v_s;
typedef struct { memref4 k, v; } k_v;
void _mlir_ciface_merge_state_f16(v_s *, memref3 *, memref2 *, memref3 *, memref2 *);
void _mlir_ciface_merge_state_no_s_bf16(memref3 *, memref3 *, memref2 *, memref3 *, memref2 *);
void _mlir_ciface_merge_states_f32(v_s *, memref4 *, memref3 *);
void _mlir_ciface_append_nhd_f16(k_v *, memref3 *, memref3 *, memref1 *, memref1 *, memref1 *,
                                 memref1 *, memref4 *, memref4 *);
void _mlir_ciface_append_combined_hnd_bf16(memref5 *, memref3 *, memref3 *, memref1 *,
                                           memref1 *, memref1 *, memref1 *, memref5 *);

static void *lse_tensor(rng *r, int64_t n) {
  float *s = (float *)random_tensor(r, FI_DTYPE_F32, n, -5, 5);
  for (int64_t i = 0; i < n; ++i)
    if (rng_int(r, 0, 9) == 0) s[i] = -INFINITY; /* an empty state: the identity */
  return s;
}

static void *data_of(const void *desc, fi_dtype dtype) {
  void *const *p = (void *const *)desc;
  const int64_t *d = (const int64_t *)(p + 2);
  return (char *)p[1] + d[0] * (int64_t)fi_dtype_size(dtype);
}

static int64_t merge_two(rng *r, int trial, int with_s, fi_dtype dt, int64_t heads, int64_t hd) {
  fi_context *ctx = fi_default_context();
  int64_t rows = rng_int(r, trial == 0 ? 0 : 1, 40);
  int64_t vshape[3] = {rows, heads, hd}, sshape[2] = {rows, heads};
  int64_t nv = numel(3, vshape), ns = numel(2, sshape);
  void *va = random_tensor(r, dt, nv, -3, 3), *vb = random_tensor(r, dt, nv, -3, 3);
  void *sa = lse_tensor(r, ns), *sb = lse_tensor(r, ns);
  memref3 mva, mvb;
  memref2 msa, msb;
  mr_init(&mva, 3, va, vshape);
  mr_init(&mvb, 3, vb, vshape);
  mr_init(&msa, 2, sa, sshape);
  mr_init(&msb, 2, sb, sshape);
  v_s res;
  memset(&res, 0, sizeof(res));
  if (with_s)
    _mlir_ciface_merge_state_f16(&res, &mva, &msa, &mvb, &msb);
  else
    _mlir_ciface_merge_state_no_s_bf16(&res.v, &mva, &msa, &mvb, &msb);
  fi_rt_synchronize();
  if (e2e_skipped(with_s ? "merge_state_f16" : "merge_state_no_s_bf16")) return 0;
  void *want_v = poisoned_tensor(dt, nv), *want_s = poisoned_tensor(FI_DTYPE_F32, ns);
  fi_tensor tva = fi_tensor_contiguous(va, dt, 3, vshape), tvb = fi_tensor_contiguous(vb, dt, 3, vshape);
  fi_tensor tsa = fi_tensor_contiguous(sa, FI_DTYPE_F32, 2, sshape);
  fi_tensor tsb = fi_tensor_contiguous(sb, FI_DTYPE_F32, 2, sshape);
  fi_tensor tvo = fi_tensor_contiguous(want_v, dt, 3, vshape);
  fi_tensor tso = fi_tensor_contiguous(want_s, FI_DTYPE_F32, 2, sshape);
  CHECK_OK(ctx, fi_merge_state(ctx, &tva, &tsa, &tvb, &tsb, &tvo, &tso));
  fi_rt_synchronize();
  int64_t bad = compare("v", data_of(&res.v, dt), want_v, dt, nv);
  if (with_s) bad += compare("s", data_of(&res.s, FI_DTYPE_F32), want_s, FI_DTYPE_F32, ns);
  fi_rt_free(res.v.allocated);
  fi_rt_free(res.s.allocated);
  e2e_free(want_v);
  e2e_free(want_s);
  e2e_free(va);
  e2e_free(vb);
  e2e_free(sa);
  e2e_free(sb);
  return bad;
}

static int64_t merge_n(rng *r) {
  fi_context *ctx = fi_default_context();
  int64_t rows = rng_int(r, 1, 30);
  int64_t vshape[4] = {rows, 3, 4, 16}, sshape[3] = {rows, 3, 4};
  int64_t oshape[3] = {rows, 4, 16}, lshape[2] = {rows, 4};
  void *v = random_tensor(r, FI_DTYPE_F32, numel(4, vshape), -3, 3);
  void *s = lse_tensor(r, numel(3, sshape));
  memref4 mv;
  memref3 ms;
  mr_init(&mv, 4, v, vshape);
  mr_init(&ms, 3, s, sshape);
  v_s res;
  _mlir_ciface_merge_states_f32(&res, &mv, &ms);
  fi_rt_synchronize();
  if (e2e_skipped("merge_states_f32")) return 0;
  void *want_v = poisoned_tensor(FI_DTYPE_F32, numel(3, oshape));
  void *want_s = poisoned_tensor(FI_DTYPE_F32, numel(2, lshape));
  fi_tensor tv = fi_tensor_contiguous(v, FI_DTYPE_F32, 4, vshape);
  fi_tensor ts = fi_tensor_contiguous(s, FI_DTYPE_F32, 3, sshape);
  fi_tensor tvo = fi_tensor_contiguous(want_v, FI_DTYPE_F32, 3, oshape);
  fi_tensor tso = fi_tensor_contiguous(want_s, FI_DTYPE_F32, 2, lshape);
  CHECK_OK(ctx, fi_merge_states(ctx, &tv, &ts, &tvo, &tso));
  fi_rt_synchronize();
  int64_t bad = compare("v", data_of(&res.v, FI_DTYPE_F32), want_v, FI_DTYPE_F32, numel(3, oshape));
  bad += compare("s", data_of(&res.s, FI_DTYPE_F32), want_s, FI_DTYPE_F32, numel(2, lshape));
  fi_rt_free(res.v.allocated);
  fi_rt_free(res.s.allocated);
  e2e_free(want_v);
  e2e_free(want_s);
  e2e_free(v);
  e2e_free(s);
  return bad;
}

static int64_t append(rng *r, int combined) {
  fi_context *ctx = fi_default_context();
  fi_dtype dt = combined ? FI_DTYPE_BF16 : FI_DTYPE_F16;
  int64_t heads = 2, hd = combined ? 16 : 32, ps = combined ? 4 : 16;
  fi_kv_layout layout = combined ? FI_LAYOUT_HND : FI_LAYOUT_NHD;
  int32_t batch = (int32_t)rng_int(r, 1, 6);
  pages_t pg;
  make_pages(r, &pg, batch, (int32_t)ps, 1, 70, 0);
  int64_t nb1 = batch + 1, nbatch = batch, used = pg.indptr[batch];
  int32_t *ap = (int32_t *)e2e_alloc(sizeof(int32_t) * (size_t)nb1);
  ap[0] = 0;
  for (int32_t i = 0; i < batch; ++i)
    ap[i + 1] = ap[i] + (int32_t)rng_int(r, 0, pg.kv_len[i] < 10 ? pg.kv_len[i] : 10);
  int64_t nnz = ap[batch];
  int64_t nshape[3] = {nnz, heads, hd};
  void *kn = random_tensor(r, dt, numel(3, nshape), -2, 2), *vn = random_tensor(r, dt, numel(3, nshape), -2, 2);
  int64_t dims4[4] = {pg.num_pages, layout == FI_LAYOUT_NHD ? ps : heads,
                      layout == FI_LAYOUT_NHD ? heads : ps, hd};
  int64_t d5[5] = {dims4[0], 2, dims4[1], dims4[2], dims4[3]};
  int64_t cache_n = combined ? numel(5, d5) : numel(4, dims4);
  size_t cache_bytes = (size_t)cache_n * fi_dtype_size(dt);
  void *kc = random_tensor(r, dt, cache_n, -2, 2), *vc = combined ? NULL : random_tensor(r, dt, cache_n, -2, 2);
  /* The runtime's copies start equal to the compiled function's inputs. */
  void *want_k = e2e_alloc(cache_bytes), *want_v = combined ? NULL : e2e_alloc(cache_bytes);
  void *orig_k = xmalloc(cache_bytes);
  memcpy(want_k, kc, cache_bytes);
  memcpy(orig_k, kc, cache_bytes);
  if (!combined) memcpy(want_v, vc, cache_bytes);

  memref3 mkn, mvn;
  memref1 map, mindptr, mindices, mlast;
  mr_init(&mkn, 3, kn, nshape);
  mr_init(&mvn, 3, vn, nshape);
  mr_init(&map, 1, ap, &nb1);
  mr_init(&mindptr, 1, pg.indptr, &nb1);
  mr_init(&mindices, 1, pg.indices, &used);
  mr_init(&mlast, 1, pg.last, &nbatch);
  fi_rt_plan_log_reset();
  void *got_k, *got_v = NULL, *alloc1 = NULL, *alloc2 = NULL;
  if (combined) {
    memref5 mkv, res;
    mr_init(&mkv, 5, kc, d5);
    _mlir_ciface_append_combined_hnd_bf16(&res, &mkn, &mvn, &map, &mindptr, &mindices, &mlast, &mkv);
    got_k = data_of(&res, dt);
    alloc1 = res.allocated != kc ? res.allocated : NULL;
  } else {
    memref4 mk, mv;
    k_v res;
    mr_init(&mk, 4, kc, dims4);
    mr_init(&mv, 4, vc, dims4);
    _mlir_ciface_append_nhd_f16(&res, &mkn, &mvn, &map, &mindptr, &mindices, &mlast, &mk, &mv);
    got_k = data_of(&res.k, dt);
    got_v = data_of(&res.v, dt);
    alloc1 = res.k.allocated;
    alloc2 = res.v.allocated;
  }
  fi_rt_synchronize();
  if (e2e_skipped(combined ? "append_combined_hnd_bf16" : "append_nhd_f16")) return 0;
  (void)logged_tiles(0, FI_OP_APPEND_PAGED_KV);

  fi_plan plan;
  fi_page_table table = {pg.indptr, pg.indices, pg.last};
  CHECK_OK(ctx, fi_append_paged_kv_plan(ctx, batch, (int32_t)ps, ap, &table, pg.num_pages, &plan));
  fi_paged_kv_cache cache;
  if (combined) {
    fi_tensor t = fi_tensor_contiguous(want_k, dt, 5, d5);
    CHECK_OK(ctx, fi_paged_kv_cache_from_combined(&t, layout, &cache));
  } else {
    cache.k = fi_tensor_contiguous(want_k, dt, 4, dims4);
    cache.v = fi_tensor_contiguous(want_v, dt, 4, dims4);
    cache.layout = layout;
  }
  fi_tensor tk = fi_tensor_contiguous(kn, dt, 3, nshape), tv = fi_tensor_contiguous(vn, dt, 3, nshape);
  CHECK_OK(ctx, fi_append_paged_kv_run(ctx, &plan, &tk, &tv, ap, &cache, &table));
  fi_rt_synchronize();
  int64_t bad = compare(combined ? "kv cache" : "k cache", got_k, want_k, dt, cache_n);
  if (!combined) {
    bad += compare("v cache", got_v, want_v, dt, cache_n);
    /* Not a writable argument: the caller's cache must be untouched. */
    if (memcmp(kc, orig_k, cache_bytes) != 0) {
      printf("MISMATCH append_nhd_f16 wrote into its non-writable argument\n");
      ++bad;
    }
  }
  printf("  append: batch %d, %lld new tokens, %lld cache tokens\n", (int)batch,
         (long long)nnz, (long long)pg.total_kv);
  fi_rt_free(alloc1);
  fi_rt_free(alloc2);
  e2e_free(kn);
  e2e_free(vn);
  e2e_free(kc);
  e2e_free(vc);
  e2e_free(want_k);
  e2e_free(want_v);
  e2e_free(ap);
  free(orig_k);
  free_pages(&pg);
  return bad;
}

int main(void) {
  e2e_setup();
  rng r = {0x5eed0003u};
  int64_t total = 0, bad;
#define RUN(name, expr)                                                                    \
  bad = 0;                                                                                 \
  for (int t = 0; t < 5; ++t) bad += (expr);                                               \
  printf("%s: 5 trials, %lld mismatches\n", name, (long long)bad);                         \
  total += bad;
  RUN("merge_state_f16", merge_two(&r, t, 1, FI_DTYPE_F16, 4, 32));
  RUN("merge_state_no_s_bf16", merge_two(&r, t, 0, FI_DTYPE_BF16, 2, 64));
  RUN("merge_states_f32", merge_n(&r));
  RUN("append_nhd_f16", append(&r, 0));
  RUN("append_combined_hnd_bf16", append(&r, 1));
  printf("E2E merge/append: %s\n", total ? "FAIL" : "PASS");
  return total ? 1 : 0;
}
