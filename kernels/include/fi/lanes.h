/* fi/lanes.h -- lanes: two disjoint partitions of a CUDA context's SMs, each with a stream of
 * its own, so that two independent pieces of a step run at the same time and neither takes
 * the other's SMs.
 *
 * What they are for: a shared-prefix decode step (runtime.h, fi_split_shared_prefix) is a
 * compute-bound prefill over the prefix and a memory-bound decode over the suffixes. On one
 * stream they run one after the other; overlapped on plain streams, the prefill's persistent
 * CTAs take every SM and the decode waits for them. In lanes the prefill runs in the main
 * lane on most SMs while the decode streams its pages in the side lane (bench/NOTES.md,
 * "lanes": 64 requests over a 32768-token prefix on an H100).
 *
 *   fi_lanes *lanes;
 *   fi_lanes_create(ctx, 0, &lanes);            // the side lane: the default share
 *   fi_lanes_enter(lanes, FI_LANE_MAIN);        // plan and run the prefix's prefill
 *   ... fi_paged_prefill_plan / fi_paged_prefill_run ...
 *   fi_lanes_leave(lanes);
 *   fi_lanes_enter(lanes, FI_LANE_SIDE);        // run the suffixes' decode
 *   ... fi_decode_run ...
 *   fi_lanes_leave(lanes);
 *   fi_lanes_join(lanes);                       // the context's stream waits for both
 *   fi_merge_state(ctx, ...);
 *
 * Rules:
 *  - While a lane is entered, every run and plan made on the context goes to that lane's
 *    stream, and plans are made for that lane's SMs (a prefill plan splits its KV so that its
 *    items fill the lane): make a plan in the lane that runs it.
 *  - The first fi_lanes_enter after a join forks: both lanes' streams wait for everything
 *    enqueued on the context's stream so far (work enqueued there later, before the join, is
 *    not seen by the lanes). Leaving waits for nothing: a lane's work stays pending until
 *    fi_lanes_join makes the context's stream wait for it. Join before work on the context's
 *    stream reads a lane's results or reuses its buffers, and before anything waits on
 *    the context's stream alone (fi_plan_device_status, a stream synchronisation).
 *  - Runs in the two lanes at once must not share a workspace, an output or the prefill
 *    stage (fi_context_set_prefill_stage): each lane's runs use their own; a run that reads
 *    another lane's output comes after a join. (Compiled code: the adapters keep a prefill
 *    stage per lane, and the lowering puts a join before an `fi.lane` op that reads or
 *    writes a buffer the other lane writes or reads.)
 *  - Do not call fi_context_set_stream between a fork and its join (enter, fork and join
 *    refuse: the lanes forked from the old stream), nor destroy the context before its
 *    lanes (or lanes installed with fi_rt_set_lanes before uninstalling them).
 *  - CUDA graphs: lanes forked while the context's stream is capturing run on that stream
 *    with every SM (the same results, in order, not overlapped): a captured kernel does not
 *    keep a green context's SM partition. Join before a capture begins (enter and fork refuse
 *    lanes forked outside a capture that is now running).
 *  - Host backend: the lanes are the context itself; enter, leave and join check their
 *    arguments and order and change nothing.
 * When they pay: when the two lanes' work takes about as long alone, each in its lane. The
 * default side share balances the shared-prefix step of bench/NOTES.md (64 requests, a
 * 32768-token prefix, 256 tokens each: ~86 us per half on an H100); a step whose suffixes
 * are short gains little and its prefix loses the side lane's SMs: size the side lane
 * (side_sms) for the step, or install no lanes.
 * CUDA lanes are green contexts (driver 12.4 or later); fi_lanes_create returns
 * FI_ERROR_UNSUPPORTED with the driver's reason where it has none. */
#ifndef FI_LANES_H
#define FI_LANES_H

#include "fi/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fi_lanes fi_lanes;

enum { FI_LANE_MAIN = 1, FI_LANE_SIDE = 2 };

/* The side lane's SMs when fi_lanes_create is given 0: this share of the device's SMs
 * (rounded), 20 of an H100's or H200's 132 -- the split that measured best for the shared
 * prefix step (bench/NOTES.md). */
#define FI_LANES_DEFAULT_SIDE_SHARE 0.15

/* Two lanes over ctx's device: the side lane with about `side_sms` SMs (0: the default
 * share), the main lane with the rest. The driver hands out SMs in groups (on Hopper, of
 * 8 at least by its rules), so the side lane may get a few fewer or more:
 * fi_lanes_sm_count says what each got. side_sms must leave the main lane at least one SM
 * group. */
fi_status fi_lanes_create(fi_context *ctx, int32_t side_sms, fi_lanes **out);
/* Enters FI_LANE_MAIN or FI_LANE_SIDE (one lane at a time: leave the other first). */
fi_status fi_lanes_enter(fi_lanes *lanes, int32_t lane);
/* Outside a lane, after the lanes forked: both lanes' streams wait for everything enqueued
 * on the context's stream so far (work enqueued there since the fork that a lane's later
 * runs read: an output buffer allocated and cleared in stream order). No-op before the
 * first enter (which forks anyway). */
fi_status fi_lanes_fork(fi_lanes *lanes);
/* Leaves the entered lane; the context's runs go to its own stream again. */
fi_status fi_lanes_leave(fi_lanes *lanes);
/* Outside a lane: the context's stream waits (on the device) for every lane's work left so
 * far. Inside one: the entered lane waits for the other lane's work left so far (a merge of
 * the two lanes' results can then run in the lane; join again outside). */
fi_status fi_lanes_join(fi_lanes *lanes);
/* The SMs of FI_LANE_MAIN or FI_LANE_SIDE (host backend: the context's SM count); 0 for
 * another lane number or NULL. */
int32_t fi_lanes_sm_count(const fi_lanes *lanes, int32_t lane);
/* The context the lanes were made on (NULL for NULL). */
fi_context *fi_lanes_context(const fi_lanes *lanes);
/* The cudaStream_t of FI_LANE_MAIN or FI_LANE_SIDE, for the embedder's own work in a lane:
 * enqueue it while that lane is entered (only an entered lane's work is joined), as the
 * runtime's runs are. While the lanes run on a capturing stream, that stream. NULL on the
 * host backend, for another lane number or NULL. */
void *fi_lanes_stream(const fi_lanes *lanes, int32_t lane);
/* Frees the lanes (joins first if work is pending, leaves an entered lane); NULL is a
 * no-op. */
void fi_lanes_destroy(fi_lanes *lanes);

#ifdef __cplusplus
}
#endif
#endif
