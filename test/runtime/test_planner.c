/* test/runtime/test_planner.c -- the split-KV planner: exact coverage, merge plan, load
 * balance, determinism, workspace bounds and pointer stability. A work unit covers all
 * query heads (backend.h), so covering every (request, query row, KV position) exactly
 * once covers every (request, head, KV position) exactly once. */
#include "internal.h"
#include "test_util.h"

typedef struct problem {
  fi_op_family family;
  int batch, page_size;
  int32_t *qo_indptr, *kv_indptr, *last, *indices;
  int32_t num_pages;
  int64_t *qo_len, *kv_len;
} problem;

static problem make_problem(fi_op_family family, int batch, int page_size, int qo_max,
                            int kv_min, int kv_max, rng *r) {
  problem pr;
  memset(&pr, 0, sizeof(pr));
  pr.family = family;
  pr.batch = batch;
  pr.page_size = family == FI_OP_RAGGED_PREFILL ? 1 : page_size;
  pr.qo_indptr = xmalloc(sizeof(int32_t) * (batch + 1));
  pr.kv_indptr = xmalloc(sizeof(int32_t) * (batch + 1));
  pr.last = xmalloc(sizeof(int32_t) * (batch + 1));
  pr.qo_len = xmalloc(sizeof(int64_t) * (batch + 1));
  pr.kv_len = xmalloc(sizeof(int64_t) * (batch + 1));
  pr.qo_indptr[0] = pr.kv_indptr[0] = 0;
  for (int i = 0; i < batch; ++i) {
    pr.kv_len[i] = rng_int(r, kv_min, kv_max);
    pr.qo_len[i] = family == FI_OP_DECODE ? 1 : rng_int(r, 0, qo_max);
    pr.qo_indptr[i + 1] = pr.qo_indptr[i] + (int32_t)pr.qo_len[i];
    int32_t n = family == FI_OP_RAGGED_PREFILL ? (int32_t)pr.kv_len[i]
                                               : (int32_t)((pr.kv_len[i] + page_size - 1) / page_size);
    pr.kv_indptr[i + 1] = pr.kv_indptr[i] + n;
    pr.last[i] = pr.kv_len[i] == 0 ? 1 : (int32_t)(pr.kv_len[i] - (int64_t)page_size * (n - 1));
  }
  pr.num_pages = pr.kv_indptr[batch];
  pr.indices = xmalloc(sizeof(int32_t) * (pr.num_pages + 1));
  for (int32_t j = 0; j < pr.num_pages; ++j) pr.indices[j] = j;
  return pr;
}

static int64_t total_kv_of(const problem *pr) {
  int64_t t = 0;
  for (int i = 0; i < pr->batch; ++i) t += pr->kv_len[i];
  return t;
}
/* The row bound ws_size takes for pr: query rows (prefill) or KV tokens (decode). */
static int64_t rows_of(fi_op_family f, const problem *pr) {
  return f == FI_OP_DECODE ? total_kv_of(pr) : pr->qo_indptr[pr->batch];
}

static void free_problem(problem *pr) {
  free(pr->qo_indptr); free(pr->kv_indptr); free(pr->last); free(pr->indices);
  free(pr->qo_len); free(pr->kv_len);
}

/* max_rows: query rows (prefill) or KV tokens (decode: the bound of a fixed split). */
static size_t ws_size(fi_context *ctx, const fi_attention_params *p, fi_op_family f, int max_batch,
                      int64_t max_rows) {
  size_t b = 0;
  if (f == FI_OP_DECODE)
    EXPECT_OK(fi_decode_workspace_size_kv(ctx, p, max_batch, max_rows, &b), ctx);
  else
    EXPECT_OK(fi_prefill_workspace_size(ctx, p, max_batch, max_rows, &b), ctx);
  return b;
}

static fi_status plan_problem(fi_context *ctx, const fi_attention_params *p, const problem *pr,
                              void *ws, size_t bytes, fi_plan *plan) {
  fi_page_table pages = {pr->kv_indptr, pr->indices, pr->last};
  if (pr->family == FI_OP_DECODE)
    return fi_decode_plan(ctx, p, pr->batch, &pages, pr->num_pages, NULL, ws, bytes, plan);
  if (pr->family == FI_OP_PAGED_PREFILL)
    return fi_paged_prefill_plan(ctx, p, pr->batch, pr->qo_indptr, &pages, pr->num_pages, NULL,
                                 NULL, ws, bytes, plan);
  return fi_ragged_prefill_plan(ctx, p, pr->batch, pr->qo_indptr, pr->kv_indptr, NULL, NULL, ws,
                                bytes, plan);
}

/* Coverage and merge-plan consistency; returns the number of violations found. */
static int check_partition(const problem *pr, const fi_plan *plan, const char *what) {
  fi_plan_layout l = fi_plan_get_layout(plan);
  int bad = 0;
  int64_t rows_total = pr->qo_indptr[pr->batch];
  /* per row: KV positions covered (as a count per position) */
  int64_t cells = 0;
  int64_t *row_base = xmalloc(sizeof(int64_t) * (size_t)(rows_total + 1));
  int64_t *row_req = xmalloc(sizeof(int64_t) * (size_t)(rows_total + 1));
  for (int i = 0; i < pr->batch; ++i)
    for (int64_t a = 0; a < pr->qo_len[i]; ++a) {
      row_base[pr->qo_indptr[i] + a] = cells;
      row_req[pr->qo_indptr[i] + a] = i;
      cells += pr->kv_len[i] > 0 ? pr->kv_len[i] : 1; /* kv 0: one "empty" cell */
    }
  int32_t *cover = calloc((size_t)cells + 1, sizeof(int32_t));
  int32_t *partial_writes = calloc((size_t)plan->num_partial_rows + 1, sizeof(int32_t));
  /* partial row -> (global row, kv_start) of the unit writing it */
  int64_t *prow_row = xmalloc(sizeof(int64_t) * ((size_t)plan->num_partial_rows + 1));
  int64_t *prow_kv = xmalloc(sizeof(int64_t) * ((size_t)plan->num_partial_rows + 1));
  int8_t *row_direct = calloc((size_t)rows_total + 1, 1);
  for (int32_t u = 0; u < l.num_work_units; ++u) {
    const fi_work_unit *w = &l.work[u];
    if (w->request < 0 || w->request >= pr->batch || w->qo_len <= 0 || w->qo_start < 0 ||
        w->qo_start + w->qo_len > pr->qo_len[w->request] || w->kv_start < 0 ||
        w->kv_end > pr->kv_len[w->request] || w->kv_start > w->kv_end) {
      if (bad++ < 3) fprintf(stderr, "  %s: unit %d out of range\n", what, u);
      continue;
    }
    for (int32_t a = 0; a < w->qo_len; ++a) {
      int64_t row = pr->qo_indptr[w->request] + w->qo_start + a;
      if (pr->kv_len[w->request] == 0)
        cover[row_base[row]]++;
      for (int32_t j = w->kv_start; j < w->kv_end; ++j) cover[row_base[row] + j]++;
      if (w->partial_row < 0) {
        row_direct[row]++;
      } else {
        int64_t prw = (int64_t)w->partial_row + a;
        if (prw >= plan->num_partial_rows) { bad++; continue; }
        partial_writes[prw]++;
        prow_row[prw] = row;
        prow_kv[prw] = w->kv_start;
      }
    }
  }
  for (int64_t c = 0; c < cells; ++c)
    if (cover[c] != 1) {
      if (bad++ < 3) fprintf(stderr, "  %s: cell %lld covered %d times\n", what, (long long)c, cover[c]);
    }
  for (int32_t x = 0; x < plan->num_partial_rows; ++x)
    if (partial_writes[x] != 1) {
      if (bad++ < 3) fprintf(stderr, "  %s: partial row %d written %d times\n", what, x, partial_writes[x]);
    }
  /* every split row is merged once, from its chunks in KV order; direct rows never */
  int8_t *row_merged = calloc((size_t)rows_total + 1, 1);
  int32_t *partial_read = calloc((size_t)plan->num_partial_rows + 1, sizeof(int32_t));
  for (int32_t m = 0; m < l.num_merge_units; ++m) {
    const fi_merge_unit *mu = &l.merge[m];
    if (mu->num_chunks < 2) bad++;
    for (int32_t r = 0; r < mu->rows; ++r) {
      int64_t row = (int64_t)mu->out_row + r;
      if (row < 0 || row >= rows_total) { bad++; continue; }
      row_merged[row]++;
      int64_t prev_kv = -1;
      for (int32_t c = 0; c < mu->num_chunks; ++c) {
        int64_t prw = (int64_t)mu->first_partial_row + (int64_t)c * mu->rows + r;
        if (prw < 0 || prw >= plan->num_partial_rows) { bad++; continue; }
        partial_read[prw]++;
        if (prow_row[prw] != row || prow_kv[prw] <= prev_kv) {
          if (bad++ < 3) fprintf(stderr, "  %s: merge unit %d chunk %d reads the wrong partial row\n", what, m, c);
        }
        prev_kv = prow_kv[prw];
      }
    }
  }
  for (int64_t row = 0; row < rows_total; ++row)
    if (row_merged[row] + row_direct[row] != 1) {
      if (bad++ < 3) fprintf(stderr, "  %s: row %lld written %d times directly, merged %d times\n", what,
                             (long long)row, row_direct[row], row_merged[row]);
    }
  for (int32_t x = 0; x < plan->num_partial_rows; ++x)
    if (partial_read[x] != 1) bad++;
  /* longest first */
  for (int32_t u = 1; u < l.num_work_units; ++u) {
    int64_t c0 = (int64_t)l.work[u - 1].qo_len * (l.work[u - 1].kv_end - l.work[u - 1].kv_start + 1);
    int64_t c1 = (int64_t)l.work[u].qo_len * (l.work[u].kv_end - l.work[u].kv_start + 1);
    if (c1 > c0) { bad++; break; }
  }
  (void)row_req;
  free(row_base); free(row_req); free(cover); free(partial_writes); free(prow_row); free(prow_kv);
  free(row_direct); free(row_merged); free(partial_read);
  return bad;
}

static void test_coverage_and_determinism(fi_context *ctx) {
  rng r = {42};
  const fi_op_family fams[3] = {FI_OP_DECODE, FI_OP_PAGED_PREFILL, FI_OP_RAGGED_PREFILL};
  const int splits[4] = {0, -1, 64, 200};
  int plans = 0, split_plans = 0;
  for (int trial = 0; trial < 120; ++trial) {
    fi_op_family f = fams[trial % 3];
    int batch = (int)rng_int(&r, 1, trial % 5 == 0 ? 300 : 12);
    int ps = trial % 2 ? 16 : 1;
    fi_attention_params p = fi_attention_params_default(8, (int32_t)(trial % 4 == 0 ? 1 : 2), 64);
    p.page_size = ps;
    p.fixed_split_size = splits[(trial / 3) % 4];
    problem pr = make_problem(f, batch, ps, 70, 0, trial % 3 == 1 ? 3000 : 900, &r);
    size_t bytes = ws_size(ctx, &p, f, batch, rows_of(f, &pr));
    char *ws = xmalloc(bytes), *ws2 = xmalloc(bytes);
    fi_plan plan, again, other;
    fi_status st = plan_problem(ctx, &p, &pr, ws, bytes, &plan);
    if (st == FI_ERROR_WORKSPACE_TOO_SMALL && p.fixed_split_size > 0 && f != FI_OP_DECODE) {
      /* prefill: fixed splits of many query rows may need more partial rows than the
       * budget (documented); decode workspaces are exact for the KV bound */
      free(ws); free(ws2); free_problem(&pr);
      continue;
    }
    EXPECT(st == FI_SUCCESS, "trial %d: plan failed: %s", trial, fi_last_error(ctx));
    if (st != FI_SUCCESS) { free(ws); free(ws2); free_problem(&pr); continue; }
    ++plans;
    if (plan.num_partial_rows > 0) ++split_plans;
    char what[64];
    snprintf(what, sizeof what, "trial %d (family %d, batch %d)", trial, (int)f, batch);
    EXPECT(check_partition(&pr, &plan, what) == 0, "%s: partition is not exact", what);
    if (p.fixed_split_size == -1) EXPECT(plan.num_partial_rows == 0, "%s: split despite -1", what);
    if (p.fixed_split_size > 0) {
      fi_plan_layout l = fi_plan_get_layout(&plan);
      int64_t chunk = (p.fixed_split_size + pr.page_size - 1) / pr.page_size * pr.page_size;
      if (f == FI_OP_RAGGED_PREFILL) chunk = (p.fixed_split_size + 15) / 16 * 16;
      for (int32_t u = 0; u < l.num_work_units; ++u)
        EXPECT(l.work[u].kv_end - l.work[u].kv_start <= chunk && l.work[u].kv_start % chunk == 0,
               "%s: unit %d spans [%d, %d) with fixed chunk %lld", what, u, l.work[u].kv_start,
               l.work[u].kv_end, (long long)chunk);
    }
    /* same input -> same plan (in the same and in another workspace) */
    fi_plan_layout l1 = fi_plan_get_layout(&plan);
    char *snap_w = xmalloc(sizeof(fi_work_unit) * (size_t)(l1.num_work_units + 1));
    char *snap_m = xmalloc(sizeof(fi_merge_unit) * (size_t)(l1.num_merge_units + 1));
    memcpy(snap_w, l1.work, sizeof(fi_work_unit) * (size_t)l1.num_work_units);
    memcpy(snap_m, l1.merge, sizeof(fi_merge_unit) * (size_t)l1.num_merge_units);
    EXPECT_OK(plan_problem(ctx, &p, &pr, ws, bytes, &again), ctx);
    EXPECT(memcmp(&plan, &again, sizeof plan) == 0, "%s: re-planning changed the plan", what);
    fi_plan_layout l2 = fi_plan_get_layout(&again);
    EXPECT(memcmp(snap_w, l2.work, sizeof(fi_work_unit) * (size_t)l1.num_work_units) == 0 &&
               memcmp(snap_m, l2.merge, sizeof(fi_merge_unit) * (size_t)l1.num_merge_units) == 0,
           "%s: re-planning changed the units", what);
    EXPECT_OK(plan_problem(ctx, &p, &pr, ws2, bytes, &other), ctx);
    fi_plan_layout l3 = fi_plan_get_layout(&other);
    EXPECT(other.num_work_units == plan.num_work_units &&
               memcmp(snap_w, l3.work, sizeof(fi_work_unit) * (size_t)l1.num_work_units) == 0,
           "%s: another workspace gave other units", what);
    free(snap_w); free(snap_m); free(ws); free(ws2); free_problem(&pr);
  }
  EXPECT(plans >= 100 && split_plans >= 20, "only %d plans, %d with splits", plans, split_plans);
  printf("coverage/determinism: %d plans checked, %d of them split-KV\n", plans, split_plans);
}

/* Balance: the chunk is the smallest whose unit count stays within the target T (the
 * two-wave target, or for a prefill the one-wave one when the plan's units fit it: either
 * the one-wave alternative was taken, or the two-wave chunk is also the smallest within
 * it), so with B unsplit units and W the KV tokens summed over units, chunk - g < W / (T -
 * B), hence
 *   largest unit <= T / (T - B) * mean + g   (or the chunk is the minimum chunk). */
static void test_balance(fi_context *ctx) {
  rng r = {7};
  int checked = 0;
  double worst_ratio = 0;
  for (int trial = 0; trial < 60; ++trial) {
    fi_op_family f = trial % 2 ? FI_OP_DECODE : FI_OP_PAGED_PREFILL;
    int batch = (int)rng_int(&r, 1, 6);
    int ps = trial % 3 == 0 ? 1 : 16;
    fi_attention_params p = fi_attention_params_default(8, 2, 64);
    p.page_size = ps;
    problem pr = make_problem(f, batch, ps, 12, 200, 8000, &r);
    size_t bytes = ws_size(ctx, &p, f, batch, rows_of(f, &pr));
    char *ws = xmalloc(bytes);
    fi_plan plan;
    EXPECT_OK(plan_problem(ctx, &p, &pr, ws, bytes, &plan), ctx);
    fi_plan_layout l = fi_plan_get_layout(&plan);
    int64_t chunk = (int64_t)plan.private_[FI_PLAN_KV_CHUNK];
    if (chunk > 0) {
      int64_t T = f == FI_OP_DECODE ? fi_plan_target_units_for(ctx, f, &p)
                                    : fi_plan_prefill_target_units(ctx, f, &p, plan.tiles);
      const int64_t wave = fi_plan_one_wave_units(ctx, f, &p, plan.tiles);
      EXPECT(l.num_work_units <= T, "trial %d: %d units > target %lld", trial,
             l.num_work_units, (long long)T);
      if (wave > 0 && l.num_work_units <= wave) T = wave;
      int64_t rpu = (int64_t)plan.private_[FI_PLAN_ROWS_PER_UNIT], B = 0, W = 0, mx = 0;
      for (int i = 0; i < batch; ++i) B += (pr.qo_len[i] + rpu - 1) / rpu;
      for (int32_t u = 0; u < l.num_work_units; ++u) {
        int64_t n = l.work[u].kv_end - l.work[u].kv_start;
        W += n;
        if (n > mx) mx = n;
      }
      double mean = (double)W / l.num_work_units;
      int min_chunk = (128 + ps - 1) / ps * ps;
      EXPECT(chunk == min_chunk || (double)mx <= (double)T / (double)(T - B) * mean + ps,
             "trial %d: largest unit %lld tokens, mean %.1f, T %lld, B %lld", trial, (long long)mx,
             mean, (long long)T, (long long)B);
      if (mx / mean > worst_ratio) worst_ratio = mx / mean;
      ++checked;
    }
    free(ws); free_problem(&pr);
  }
  EXPECT(checked >= 30, "only %d split plans in the balance test", checked);
  printf("balance: %d split plans, worst largest/mean unit = %.3f\n", checked, worst_ratio);
}

/* Plans one paged prefill request of qo query rows over kv tokens (pages of 16, in order)
 * on `tiles` into a workspace sized for it; the plan's fields stay readable after. */
static fi_plan plan_one_request(fi_context *ctx, const fi_attention_params *p, int64_t qo,
                                int64_t kv, const fi_tiles *tiles) {
  int32_t qo_indptr[2] = {0, (int32_t)qo}, kv_indptr[2] = {0, (int32_t)((kv + 15) / 16)};
  int32_t last[1] = {(int32_t)(kv - 16 * (kv_indptr[1] - 1))};
  int32_t *indices = xmalloc(sizeof(int32_t) * (size_t)kv_indptr[1]);
  for (int32_t j = 0; j < kv_indptr[1]; ++j) indices[j] = j;
  size_t bytes = 0;
  EXPECT_OK(fi_prefill_workspace_size(ctx, p, 1, qo, &bytes), ctx);
  char *ws = xmalloc(bytes);
  fi_page_table pages = {kv_indptr, indices, last};
  fi_plan plan;
  EXPECT_OK(fi_paged_prefill_plan(ctx, p, 1, qo_indptr, &pages, kv_indptr[1], NULL, tiles, ws,
                                  bytes, &plan), ctx);
  free(ws);
  free(indices);
  return plan;
}

/* The prefill split's one-wave alternative, against a search written here: one request of
 * q query tiles over kv tokens (pages of 16) has q * ceil(kv / c) units for a chunk c; the
 * plan takes the smallest c (a multiple of 16, >= 128) within the two-wave target T, unless
 * that leaves more units than one wave W holds and the smallest c within W is at most
 * 2.4 times it (3 query tiles over 32768 keys: 2.19 times, taken; 6 tiles: 2.5 times,
 * kept). Decode plans and the tiles of other kernels than the persistent warp-specialised
 * one never take it (W = 0): those keep the two-wave chunk. */
static void test_one_wave(fi_context *ctx) {
  fi_attention_params p = fi_attention_params_default(32, 8, 128);
  p.page_size = 16;
  const fi_tiles ws_tiles = {128, 128, 1, FI_CORES_WGMMA};
  const fi_tiles others[] = {{64, 128, 1, FI_CORES_WGMMA}, {32, 32, 1, FI_CORES_TENSOR}};
  EXPECT(fi_plan_one_wave_units(ctx, FI_OP_DECODE, &p, ws_tiles) == 0,
         "decode has a one-wave alternative");
  for (size_t i = 0; i < sizeof others / sizeof others[0]; ++i)
    EXPECT(fi_plan_one_wave_units(ctx, FI_OP_PAGED_PREFILL, &p, others[i]) == 0,
           "q_tile %d kv_tile %d cores %d has a one-wave alternative", others[i].q_tile,
           others[i].kv_tile, (int)others[i].cores);
  const int64_t T = fi_plan_prefill_target_units(ctx, FI_OP_PAGED_PREFILL, &p, ws_tiles);
  const int64_t W = fi_plan_one_wave_units(ctx, FI_OP_PAGED_PREFILL, &p, ws_tiles);
  int taken = 0, kept = 0, near = 0;
  const int64_t kvs[] = {4096, 32768, 32768 + 16, 100000, 7777};
  for (int q = 1; q <= 6; ++q)
    for (size_t ki = 0; ki < sizeof kvs / sizeof kvs[0]; ++ki) {
      const int64_t kv = kvs[ki], tiles = q;
      int64_t c2 = 0, c1 = 0;
      for (int64_t c = 128; c < kv && !c2; c += 16)
        if (tiles * ((kv + c - 1) / c) <= T) c2 = c;
      for (int64_t c = 128; c < kv && !c1; c += 16)
        if (tiles * ((kv + c - 1) / c) <= W) c1 = c;
      if (tiles >= T) continue; /* unsplit already at the target */
      /* c1 = 0: only the unsplit row fits one wave (if its tiles do), as long as the row */
      const int64_t len1 = c1 ? c1 : (kv + 15) / 16 * 16;
      const int fits1 = c1 > 0 || tiles <= W;
      int64_t want = c2;
      if (c2 && tiles * ((kv + c2 - 1) / c2) > W && fits1 && 10 * len1 <= 24 * c2)
        want = c1, ++taken;
      else
        ++kept;
      if (c2 && fits1 && len1 > 2 * c2 && len1 <= 3 * c2) ++near; /* between the old 2x and 3x */
      /* q query tiles of rows_per_unit rows, on the persistent kernel's and mma.sync tiles */
      const int64_t ws_rows = q * fi_prefill_rows_per_unit(ctx, FI_OP_PAGED_PREFILL, &p, ws_tiles);
      const int64_t mma_rows =
          q * fi_prefill_rows_per_unit(ctx, FI_OP_PAGED_PREFILL, &p, others[1]);
      fi_plan plan = plan_one_request(ctx, &p, ws_rows, kv, &ws_tiles);
      const int64_t chunk = (int64_t)plan.private_[FI_PLAN_KV_CHUNK];
      EXPECT(chunk == want, "q tiles %d, kv %lld: chunk %lld, expected %lld (T %lld, W %lld)", q,
             (long long)kv, (long long)chunk, (long long)want, (long long)T, (long long)W);
      if (want != c2) { /* the same q tiles on mma.sync tiles: the two-wave chunk */
        plan = plan_one_request(ctx, &p, mma_rows, kv, &others[1]);
        EXPECT((int64_t)plan.private_[FI_PLAN_KV_CHUNK] == c2,
               "q tiles %d, kv %lld on mma.sync tiles: chunk %lld, expected the two-wave %lld", q,
               (long long)kv, (long long)plan.private_[FI_PLAN_KV_CHUNK], (long long)c2);
      }
    }
  EXPECT(taken >= 3 && kept >= 1 && near >= 2, "one-wave test: %d taken, %d kept, %d near 2.4",
         taken, kept, near);
  /* MHA over 32 KV heads on 132 SMs: two waves are 264 CTAs, 8.25 units. On the persistent
   * kernel's tiles the target rounds down to 8 (no third wave): 3 query tiles over 16384
   * keys then fit one wave unsplit (3 units); on mma.sync tiles it rounds up to 9 (3 chunks
   * of 5472 tokens per tile). */
  {
    fi_attention_params m = fi_attention_params_default(32, 32, 128);
    m.page_size = 16;
    const fi_tiles mt = others[1];
    EXPECT(fi_plan_prefill_target_units(ctx, FI_OP_PAGED_PREFILL, &m, ws_tiles) == 8 &&
               fi_plan_prefill_target_units(ctx, FI_OP_PAGED_PREFILL, &m, mt) == 9,
           "MHA targets %lld (persistent kernel) / %lld (mma.sync), want 8 / 9",
           (long long)fi_plan_prefill_target_units(ctx, FI_OP_PAGED_PREFILL, &m, ws_tiles),
           (long long)fi_plan_prefill_target_units(ctx, FI_OP_PAGED_PREFILL, &m, mt));
    const fi_tiles *tl[2] = {&ws_tiles, &mt};
    const int32_t want_units[2] = {3, 9};
    for (int i = 0; i < 2; ++i) {
      const int64_t rpu = fi_prefill_rows_per_unit(ctx, FI_OP_PAGED_PREFILL, &m, *tl[i]);
      const fi_plan plan = plan_one_request(ctx, &m, 3 * rpu, 16384, tl[i]);
      EXPECT(plan.num_work_units == want_units[i],
             "MHA, 3 query tiles on 16384 keys, %s tiles: %d units, want %d",
             i ? "mma.sync" : "persistent", plan.num_work_units, want_units[i]);
    }
  }
  printf("one wave: %d plans took the one-wave chunk, %d kept the two-wave one (T %lld, W %lld)\n",
         taken, kept, (long long)T, (long long)W);
}

/* One workspace of fi_*_workspace_size(max_batch) serves every problem up to max_batch,
 * and re-planning never moves the arrays (CUDA-graph friendly). */
static void test_workspace_bounds(fi_context *ctx) {
  rng r = {99};
  for (int fam = 0; fam < 2; ++fam) {
    fi_op_family f = fam ? FI_OP_PAGED_PREFILL : FI_OP_DECODE;
    fi_attention_params p = fi_attention_params_default(16, 2, 128);
    const int max_batch = 64;
    const int64_t max_rows = 2000;
    size_t bytes = ws_size(ctx, &p, f, max_batch, f == FI_OP_DECODE ? max_batch * 6000 : max_rows);
    char *ws = xmalloc(bytes);
    fi_plan_layout first;
    memset(&first, 0, sizeof first);
    for (int trial = 0; trial < 40; ++trial) {
      int batch = (int)rng_int(&r, 1, max_batch);
      problem pr = make_problem(f, batch, 16, (int)(max_rows / max_batch), 0, 6000, &r);
      fi_plan plan;
      fi_status st = plan_problem(ctx, &p, &pr, ws, bytes, &plan);
      EXPECT(st == FI_SUCCESS, "family %d batch %d: plan failed in a max-size workspace: %s",
             (int)f, batch, fi_last_error(ctx));
      if (st == FI_SUCCESS) {
        fi_plan_layout l = fi_plan_get_layout(&plan);
        if (trial == 0) first = l;
        EXPECT(l.work == first.work && l.merge == first.merge && l.partial_o == first.partial_o &&
                   l.partial_lse == first.partial_lse, "re-planning moved the workspace arrays");
        char *end = ws + bytes;
        EXPECT((char *)(l.work + l.num_work_units) <= (char *)l.merge &&
                   (char *)(l.merge + l.num_merge_units) <= (char *)l.partial_o &&
                   (char *)(l.partial_o + (size_t)l.num_partial_rows * 16 * 128) <= (char *)l.partial_lse &&
                   (char *)(l.partial_lse + (size_t)l.num_partial_rows * 16) <= end,
               "workspace regions overlap or overflow");
      }
      free_problem(&pr);
    }
    /* one request more than sized for fails with a clear message, never overflows */
    problem big = f == FI_OP_DECODE ? make_problem(f, max_batch + 300, 16, 1, 1, 10, &r)
                                    : make_problem(f, 6000, 16, 1, 1, 10, &r);
    fi_plan plan;
    fi_status st = plan_problem(ctx, &p, &big, ws, bytes, &plan);
    EXPECT(st == FI_ERROR_WORKSPACE_TOO_SMALL && strstr(fi_last_error(ctx), "workspace"),
           "oversized batch: %s / %s", fi_status_string(st), fi_last_error(ctx));
    free_problem(&big);
    free(ws);
  }
}

/* Batch invariance of fixed_split_size: a request's KV chunks do not depend on its
 * neighbours in the batch. */
static problem problem_from_lens(int batch, int ps, const int64_t *kv) {
  rng r = {1};
  problem pr = make_problem(FI_OP_DECODE, batch, ps, 1, 1, 1, &r);
  for (int i = 0; i < batch; ++i) {
    pr.kv_len[i] = kv[i];
    int32_t n = (int32_t)((kv[i] + ps - 1) / ps);
    pr.kv_indptr[i + 1] = pr.kv_indptr[i] + n;
    pr.last[i] = kv[i] == 0 ? 1 : (int32_t)(kv[i] - (int64_t)ps * (n - 1));
  }
  pr.num_pages = pr.kv_indptr[batch];
  free(pr.indices);
  pr.indices = xmalloc(sizeof(int32_t) * (pr.num_pages + 1));
  for (int32_t j = 0; j < pr.num_pages; ++j) pr.indices[j] = j;
  return pr;
}

static void test_fixed_split_invariance(fi_context *ctx) {
  fi_attention_params p = fi_attention_params_default(4, 2, 64);
  p.page_size = 16;
  p.fixed_split_size = 250; /* rounded up to 256, a page multiple */
  const int64_t alone[1] = {1000};
  const int64_t crowd[6] = {3000, 17, 1000, 640, 0, 2049};
  problem a = problem_from_lens(1, 16, alone), b = problem_from_lens(6, 16, crowd);
  size_t bytes = ws_size(ctx, &p, FI_OP_DECODE, 64, 8000);
  char *wa = xmalloc(bytes), *wb = xmalloc(bytes);
  fi_plan pa, pb;
  EXPECT_OK(plan_problem(ctx, &p, &a, wa, bytes, &pa), ctx);
  EXPECT_OK(plan_problem(ctx, &p, &b, wb, bytes, &pb), ctx);
  fi_plan_layout la = fi_plan_get_layout(&pa), lb = fi_plan_get_layout(&pb);
  int32_t ranges_a[16][2], ranges_b[16][2];
  int na = 0, nb = 0;
  for (int32_t u = 0; u < la.num_work_units && na < 16; ++u)
    ranges_a[na][0] = la.work[u].kv_start, ranges_a[na++][1] = la.work[u].kv_end;
  for (int32_t u = 0; u < lb.num_work_units && nb < 16; ++u)
    if (lb.work[u].request == 2)
      ranges_b[nb][0] = lb.work[u].kv_start, ranges_b[nb++][1] = lb.work[u].kv_end;
  EXPECT(na == 4 && nb == 4, "kv 1000 with fixed split 256: %d units alone, %d in a batch; want 4", na, nb);
  int same = na == nb;
  for (int i = 0; i < na && same; ++i) {
    int found = 0;
    for (int j = 0; j < nb; ++j)
      if (ranges_a[i][0] == ranges_b[j][0] && ranges_a[i][1] == ranges_b[j][1]) found = 1;
    same = found;
  }
  EXPECT(same, "the chunks of a request changed with its batch under fixed_split_size");
  for (int32_t v = 0; v < lb.num_work_units; ++v)
    EXPECT(lb.work[v].kv_start % 256 == 0, "fixed split chunk starts at %d", lb.work[v].kv_start);
  free(wa); free(wb); free_problem(&a); free_problem(&b);
}

/* Fixed split sizes make a work unit per fixed_split_size tokens: fi_decode_workspace_size
 * (bounded by max_batch only) refuses them, naming the query that can bound them, and a
 * workspace of fi_decode_workspace_size_kv(max_batch, max_kv_tokens) holds every decode of
 * at most that many requests and tokens -- including the worst split (each request one
 * token past a chunk) and the case (1,238 units where max_batch had room for 132). */
static void test_fixed_split_workspace(fi_context *ctx) {
  rng r = {7};
  fi_attention_params p = fi_attention_params_default(32, 8, 128);
  p.page_size = 16;
  p.fixed_split_size = 16;
  size_t b = 0;
  fi_status st = fi_decode_workspace_size(ctx, &p, 8, &b);
  EXPECT(st == FI_ERROR_INVALID_ARGUMENT && strstr(fi_last_error(ctx), "fi_decode_workspace_size_kv"),
         "fixed split without a KV bound: %s \"%s\"", fi_status_string(st), fi_last_error(ctx));
  for (int trial = 0; trial < 60; ++trial) {
    p.fixed_split_size = trial % 3 == 0 ? 16 : trial % 3 == 1 ? 64 : 100;
    const int max_batch = (int)rng_int(&r, 1, 16);
    const int64_t chunk = (p.fixed_split_size + 15) / 16 * 16;
    int64_t lens[16];
    int64_t total = 0;
    for (int i = 0; i < max_batch; ++i) {
      /* the worst case (a chunk and one token), short ones and long ones */
      const int kind = (int)rng_int(&r, 0, 2);
      lens[i] = kind == 0 ? chunk + 1 : kind == 1 ? rng_int(&r, 1, 40) : rng_int(&r, 1, 20000);
      total += lens[i];
    }
    EXPECT_OK(fi_decode_workspace_size_kv(ctx, &p, max_batch, total, &b), ctx);
    problem pr = problem_from_lens(max_batch, 16, lens);
    char *ws = xmalloc(b);
    fi_plan plan;
    st = plan_problem(ctx, &p, &pr, ws, b, &plan);
    EXPECT(st == FI_SUCCESS, "fixed split %d, batch %d, %lld KV tokens: %s",
           (int)p.fixed_split_size, max_batch, (long long)total, fi_last_error(ctx));
    if (st == FI_SUCCESS) EXPECT(check_partition(&pr, &plan, "fixed split") == 0, "partition");
    free(ws);
    free_problem(&pr);
  }
  /* the case: 4 requests of 5,000 tokens at split 16 (1,252 units) */
  p.fixed_split_size = 16;
  const int64_t four[4] = {5000, 5000, 5000, 5000};
  EXPECT_OK(fi_decode_workspace_size_kv(ctx, &p, 4, 20000, &b), ctx);
  problem pr = problem_from_lens(4, 16, four);
  char *ws = xmalloc(b);
  fi_plan plan;
  EXPECT_OK(plan_problem(ctx, &p, &pr, ws, b, &plan), ctx);
  EXPECT(plan.num_work_units == 4 * 313, "split 16 of 4 x 5000: %d units, want 1252",
         (int)plan.num_work_units);
  free(ws);
  free_problem(&pr);
}

/* Decode pages of a multiple of 4 tokens that is not one of 16 (4, 8, 12, 24, 40): the
 * planner's own splits start on 16-token sub-tiles that are whole pages, lcm(page, 16) (the
 * warp-specialised decode kernel loads boxes of 4 or 8 rows into 16-token slots); a fixed
 * split keeps whole pages (the sharded runs' bit-identity, runtime.h); pages of 16, of 2 and
 * of 6 keep whole pages. Every plan still partitions its cells. */
static void test_decode_sub_tile_chunks(fi_context *ctx) {
  const int64_t lens[3] = {20000, 777, 12345};
  const int sizes[] = {4, 8, 2, 16, 12, 24, 40, 6};
  const int lcm16[] = {16, 16, 0, 0, 48, 48, 80, 0}; /* the sub-tile chunk, 0: whole pages */
  for (int k = 0; k < (int)(sizeof sizes / sizeof sizes[0]); ++k) {
    for (int fixed = 0; fixed <= 1; ++fixed) {
      fi_attention_params p = fi_attention_params_default(32, 8, 128);
      p.page_size = sizes[k];
      p.fixed_split_size = fixed ? 3 * sizes[k] : 0;
      problem pr = problem_from_lens(3, sizes[k], lens);
      size_t bytes = ws_size(ctx, &p, FI_OP_DECODE, 3, total_kv_of(&pr));
      char *ws = xmalloc(bytes);
      fi_plan plan;
      EXPECT_OK(plan_problem(ctx, &p, &pr, ws, bytes, &plan), ctx);
      fi_plan_layout l = fi_plan_get_layout(&plan);
      const int want = !fixed && lcm16[k] ? lcm16[k] : sizes[k];
      int split = 0, off = 0;
      for (int32_t u = 0; u < l.num_work_units; ++u) {
        split |= l.work[u].kv_start > 0;
        if (l.work[u].kv_start % want != 0) ++off;
      }
      EXPECT(split, "pages of %d%s: the long requests were not split", sizes[k],
             fixed ? ", fixed split" : "");
      EXPECT(off == 0, "pages of %d%s: %d chunks start off a multiple of %d", sizes[k],
             fixed ? ", fixed split" : "", off, want);
      if (fixed) {  /* whole pages of the fixed size, not rounded to 16 */
        int odd = 0;
        for (int32_t u = 0; u < l.num_work_units; ++u)
          odd |= l.work[u].kv_start % 16 != 0;
        EXPECT(sizes[k] % 16 == 0 || odd, "pages of %d, fixed split %d: every chunk starts on 16",
               sizes[k], (int)p.fixed_split_size);
      }
      EXPECT(check_partition(&pr, &plan, "sub-tile chunks") == 0, "partition");
      free(ws);
      free_problem(&pr);
    }
  }
}

/* Query rows per unit (fi_prefill_rows_per_unit): on a Hopper CUDA context with the
 * warp-specialised tiles, a GQA group of at most 32 that does not divide 128 gets units of
 * 128 / (its largest power of two divisor) tokens, whole tiles of rows packed across tokens
 * (prefill_ws.cuh, ws_rows_across); everything else q_tile / group. The rule is the planner's
 * alone (no device): a copy of the host context posing as such a CUDA context. */
static void test_rows_per_unit(fi_context *host) {
  fi_context c = *host;
  c.backend = FI_BACKEND_CUDA;
  c.wgmma_available = 1;
  c.tuning.prefill_warp_spec = -1;
  c.tuning.prefill_rows_across = -1;
  const fi_tiles ws = {128, 128, 1, FI_CORES_WGMMA}, tc = {64, 64, 1, FI_CORES_TENSOR};
  static const struct { int qo, kv, want; } cases[] = {
      {32, 8, 32},  /* group 4 divides 128: 32 tokens of 4 heads */
      {96, 8, 32},  /* group 12: 32 tokens = 3 full tiles (whole tokens: 10, 120 rows) */
      {24, 8, 128}, /* group 3: 128 tokens = 3 tiles */
      {40, 8, 128}, /* group 5 */
      {48, 8, 64},  /* group 6: 64 tokens = 3 tiles */
      {56, 8, 128}, /* group 7 */
      {32, 1, 4},   /* group 32 divides 128 */
      {40, 1, 3},   /* group 40 > 32: whole tokens, 3 of them (120 rows) */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const fi_attention_params p = fi_attention_params_default(cases[i].qo, cases[i].kv, 128);
    const int group = cases[i].qo / cases[i].kv;
    for (int paged = 0; paged <= 1; ++paged) {
      const fi_op_family f = paged ? FI_OP_PAGED_PREFILL : FI_OP_RAGGED_PREFILL;
      const int64_t got = fi_prefill_rows_per_unit(&c, f, &p, ws);
      EXPECT(got == cases[i].want, "group %d, %s: %lld tokens per unit, want %d", group,
             paged ? "paged" : "ragged", (long long)got, cases[i].want);
      if (128 % group != 0 && group <= 32)
        EXPECT(got * group % 128 == 0, "group %d: units of %lld rows are not whole tiles",
               group, (long long)(got * group));
    }
  }
  /* q_tile / group everywhere else: other tiles, decode, block-sparse, the knob off, the
   * host backend, no Hopper tier */
  const fi_attention_params g12 = fi_attention_params_default(96, 8, 128);
  EXPECT(fi_prefill_rows_per_unit(&c, FI_OP_RAGGED_PREFILL, &g12, tc) == 5, "tensor-core tiles");
  EXPECT(fi_prefill_rows_per_unit(&c, FI_OP_DECODE, &g12, ws) == 1, "decode");
  EXPECT(fi_prefill_rows_per_unit(&c, FI_OP_BLOCK_SPARSE, &g12, ws) == 10, "block-sparse");
  c.tuning.prefill_rows_across = 0;
  EXPECT(fi_prefill_rows_per_unit(&c, FI_OP_RAGGED_PREFILL, &g12, ws) == 10, "knob off");
  c.tuning.prefill_rows_across = -1;
  c.wgmma_available = 0;
  EXPECT(fi_prefill_rows_per_unit(&c, FI_OP_RAGGED_PREFILL, &g12, ws) == 10, "no wgmma");
  EXPECT(fi_prefill_rows_per_unit(host, FI_OP_RAGGED_PREFILL, &g12, ws) == 10, "host");
}

/* The prefill stage by head_dim (planner.c, fi_prefill_stage_layout), for a host context
 * posing as a Hopper CUDA one: RoPE stages K, fp8 KV and pages that are not a multiple of
 * 16 stage K and V, at every head_dim the warp-specialised kernel has (64, 128, 256); other
 * head dims get no stage (that kernel cannot run them). */
static void test_prefill_stage_head_dims(fi_context *host) {
  fi_context c = *host;
  c.backend = FI_BACKEND_CUDA;
  c.wgmma_available = 1;
  c.tuning.prefill_warp_spec = -1;
  const int64_t rows = 1000;
  static const int dims[] = {64, 128, 256, 96};
  for (size_t i = 0; i < sizeof dims / sizeof dims[0]; ++i) {
    const int hd = dims[i], kernel_has = hd != 96;
    const size_t one = kernel_has ? (((size_t)rows * 8 * hd * 2 + 255) / 256) * 256 : 0;
    fi_attention_params rope = fi_attention_params_default(32, 8, hd);
    rope.pos_encoding = FI_POS_ROPE_LLAMA;
    fi_attention_params fp8 = fi_attention_params_default(32, 8, hd);
    fp8.kv_dtype = FI_DTYPE_E4M3;
    fi_attention_params odd = fi_attention_params_default(32, 8, hd);
    odd.page_size = 24;
    const fi_stage_layout r = fi_prefill_stage_layout(&c, &rope, 0, rows);
    const fi_stage_layout f = fi_prefill_stage_layout(&c, &fp8, 0, rows);
    const fi_stage_layout o = fi_prefill_stage_layout(&c, &odd, 1, rows);
    const fi_stage_layout none = fi_prefill_stage_layout(&c, &odd, 0, rows);
    EXPECT(r.total == one && (!kernel_has || (r.k == 0 && r.v == SIZE_MAX)),
           "head_dim %d RoPE: stage %zu bytes (v %zu), want %zu (K only)", hd, r.total, r.v, one);
    EXPECT(f.total == 2 * one && o.total == 2 * one,
           "head_dim %d fp8 KV / pages of 24: stage %zu / %zu bytes, want %zu", hd, f.total,
           o.total, 2 * one);
    EXPECT(none.total == 0, "head_dim %d, contiguous 16-bit KV: stage %zu bytes, want 0", hd,
           none.total);
  }
}

/* The prefill stage of paged block-sparse runs (planner.c, fi_bsr_stage_layout), for a host
 * context posing as a Hopper CUDA one: pages that are not a multiple of 16 need K and V
 * staged, as a paged prefill's; other multiples of 16 may take the same stage unless they
 * are multiples of 64 (paged prefills need none there); multiples of 64 load as page boxes
 * of 64 rows (no stage). */
static void test_bsr_stage(fi_context *host) {
  fi_context c = *host;
  c.backend = FI_BACKEND_CUDA;
  c.wgmma_available = 1;
  c.tuning.prefill_warp_spec = -1;
  fi_attention_params p = fi_attention_params_default(32, 8, 128);
  const int64_t rows = 4096;
  const size_t both = 2 * (size_t)rows * 8 * 128 * 2; /* K and V, f16 token rows */
  static const struct { int page, bsr_staged, prefill_staged; } cases[] = {
      {16, 1, 0}, {32, 1, 0}, {48, 1, 0}, {64, 0, 0}, {96, 1, 0}, {112, 1, 0},
      {128, 0, 0}, {144, 1, 0}, {256, 0, 0}, {24, 1, 1}, {1, 1, 1}, {100, 1, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    p.page_size = cases[i].page;
    const fi_stage_layout b = fi_bsr_stage_layout(&c, &p, 1, rows);
    const fi_stage_layout f = fi_prefill_stage_layout(&c, &p, 1, rows);
    EXPECT(b.total == (cases[i].bsr_staged ? both : 0) &&
               (!cases[i].bsr_staged || (b.k != SIZE_MAX && b.v != SIZE_MAX)),
           "pages of %d: block-sparse stage %zu bytes (k %zu, v %zu), want %zu", cases[i].page,
           b.total, b.k, b.v, cases[i].bsr_staged ? both : (size_t)0);
    EXPECT(f.total == (cases[i].prefill_staged ? both : 0),
           "pages of %d: paged prefill stage %zu bytes, want %zu", cases[i].page, f.total,
           cases[i].prefill_staged ? both : (size_t)0);
    EXPECT(fi_bsr_stage_optional(&p, 1) == (cases[i].bsr_staged && !cases[i].prefill_staged),
           "pages of %d: optional stage", cases[i].page);
  }
  /* head_dim 256: the mma.sync kernel takes block-sparse runs, no stage */
  fi_attention_params p256 = fi_attention_params_default(16, 8, 256);
  p256.page_size = 24;
  EXPECT(fi_bsr_stage_layout(&c, &p256, 1, rows).total == 0 &&
             fi_prefill_stage_layout(&c, &p256, 1, rows).total > 0,
         "head_dim 256 pages of 24: block-sparse stage %zu bytes (want 0), paged prefill %zu",
         fi_bsr_stage_layout(&c, &p256, 1, rows).total,
         fi_prefill_stage_layout(&c, &p256, 1, rows).total);
  p.page_size = 16; /* contiguous K / V, the host backend, no Hopper tier: none */
  EXPECT(fi_bsr_stage_layout(&c, &p, 0, rows).total == 0, "contiguous block-sparse");
  EXPECT(fi_bsr_stage_layout(host, &p, 1, rows).total == 0, "host backend");
  c.wgmma_available = 0;
  EXPECT(fi_bsr_stage_layout(&c, &p, 1, rows).total == 0, "no wgmma");
  size_t bytes = 1;
  EXPECT(fi_block_sparse_stage_size(host, &p, rows, &bytes) == FI_SUCCESS && bytes == 0,
         "fi_block_sparse_stage_size on the host: %zu bytes", bytes);
  EXPECT(fi_block_sparse_stage_size(host, &p, -1, &bytes) == FI_ERROR_INVALID_ARGUMENT &&
             strstr(fi_last_error(host), "max_kv_rows"),
         "negative max_kv_rows: %s", fi_last_error(host));
}

/* The lead units (planner.c lead_units, workspace header word 9): a shared prefix's chunks
 * beside 64 short suffixes lead (the kernel hands them out for every head first); a uniform
 * batch keeps head-major order (0); the tuning switch turns it off. */
static int32_t plan_lead(fi_context *ctx, int32_t batch, const int32_t *qo, const int32_t *kv,
                         int32_t split, fi_plan_layout *lay_out, char **ws_out) {
  fi_attention_params p = fi_attention_params_default(32, 8, 128);
  p.page_size = 16;
  p.fixed_split_size = split;
  int32_t *indptr = xmalloc(sizeof(int32_t) * (size_t)(batch + 1));
  int32_t *last = xmalloc(sizeof(int32_t) * (size_t)batch);
  indptr[0] = 0;
  for (int32_t i = 0; i < batch; ++i) indptr[i + 1] = indptr[i] + kv[i] / 16, last[i] = 16;
  int32_t *indices = xmalloc(sizeof(int32_t) * (size_t)indptr[batch]);
  for (int32_t j = 0; j < indptr[batch]; ++j) indices[j] = j;
  size_t bytes = 0;
  EXPECT_OK(fi_prefill_workspace_size(ctx, &p, batch, qo[batch], &bytes), ctx);
  char *ws = xmalloc(bytes);
  const fi_tiles t = {128, 128, 1, FI_CORES_TENSOR};
  fi_page_table pages = {indptr, indices, last};
  fi_plan plan;
  EXPECT_OK(fi_paged_prefill_plan(ctx, &p, batch, qo, &pages, indptr[batch], NULL, &t, ws,
                                  bytes, &plan), ctx);
  *lay_out = fi_plan_get_layout(&plan);
  *ws_out = ws;
  free(indptr), free(last), free(indices);
  return ((const int32_t *)ws)[9];
}

static void test_lead_units(fi_context *ctx) {
  enum { B = 65 };
  int32_t qo[B + 1], kv[B];
  qo[0] = 0;
  for (int i = 0; i < B; ++i) qo[i + 1] = qo[i] + (i == 0 ? 64 : 1), kv[i] = i == 0 ? 32768 : 256;
  fi_plan_layout lay;
  char *ws = NULL;
  const int32_t lead = plan_lead(ctx, B, qo, kv, 4096, &lay, &ws);
  /* every unit of request 0 (the prefix's 8 chunks of 4096 keys) leads, no suffix does */
  int prefix_units = 0, misplaced = 0;
  for (int32_t u = 0; u < lay.num_work_units; ++u) {
    prefix_units += lay.work[u].request == 0;
    misplaced += (u < lead) != (lay.work[u].request == 0);
  }
  EXPECT(lead > 0 && lead == prefix_units && misplaced == 0,
         "shared prefix beside suffixes: lead %d, prefix units %d, %d misplaced", (int)lead,
         prefix_units, misplaced);
  free(ws);
  ctx->tuning.prefill_lead_units = 0;
  EXPECT(plan_lead(ctx, B, qo, kv, 4096, &lay, &ws) == 0, "lead units with the switch off");
  free(ws);
  ctx->tuning.prefill_lead_units = -1;
  int32_t uq[9], ukv[8];
  uq[0] = 0;
  for (int i = 0; i < 8; ++i) uq[i + 1] = uq[i] + 2048, ukv[i] = 2048;
  EXPECT(plan_lead(ctx, 8, uq, ukv, 0, &lay, &ws) == 0, "a uniform batch has lead units");
  free(ws);
  printf("lead units: %d of %d (a 32k prefix in chunks of 4096 beside 64 suffixes)\n",
         (int)lead, (int)prefix_units + (B - 1));
}

int main(void) {
  fi_context *ctx = NULL;
  if (fi_context_create(FI_BACKEND_HOST, &ctx) != FI_SUCCESS) return 1;
  test_coverage_and_determinism(ctx);
  test_balance(ctx);
  test_one_wave(ctx);
  test_workspace_bounds(ctx);
  test_fixed_split_invariance(ctx);
  test_fixed_split_workspace(ctx);
  test_decode_sub_tile_chunks(ctx);
  test_rows_per_unit(ctx);
  test_prefill_stage_head_dims(ctx);
  test_bsr_stage(ctx);
  test_lead_units(ctx);
  fi_context_destroy(ctx);
  return test_finish("test_planner");
}
