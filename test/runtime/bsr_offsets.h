/* test/runtime/bsr_offsets.h -- random variable BSR blocks for the block-sparse tests
 * (host, GPU, E2E), each drawing from its own generator. */
#ifndef FI_TEST_BSR_OFFSETS_H
#define FI_TEST_BSR_OFFSETS_H

#include <stdint.h>

/* A uniform draw in [lo, hi] (inclusive) from the caller's generator `state`. */
typedef int64_t (*bsr_draw_fn)(void *state, int64_t lo, int64_t hi);

/* Variable blocks over `total` rows or keys, each at least `least` (<= total) long and at
 * most 3 x that (the last one up to 4 x): the offsets, from 0 to total, into off (count + 1
 * elements); returns the count. */
static inline int32_t random_bsr_offsets(int64_t total, int32_t least, int32_t *off,
                                         bsr_draw_fn draw, void *state) {
  int32_t count = 0;
  int64_t pos = 0;
  off[0] = 0;
  while (total - pos >= 2 * (int64_t)least) {
    int64_t most = total - pos - least;
    if (most > 3 * (int64_t)least) most = 3 * (int64_t)least;
    pos += draw(state, least, most);
    off[++count] = (int32_t)pos;
  }
  off[++count] = (int32_t)total;
  return count;
}

#endif
