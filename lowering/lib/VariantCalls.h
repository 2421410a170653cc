//===- VariantCalls.h - score_mod / mask_mod as runtime hooks ---*- C++ -*-===//
//
// An attention op's variant functions (score_mod, mask_mod; see the dialect docs) reach
// the runtime as the six trailing arguments of its run adapter: a score_mod hook, a
// mask_mod hook and its tile classifier (fi_score_mod_fn / fi_mask_mod_fn /
// fi_mask_tile_fn of kernels/include/fi/runtime.h), a pointer to the op's captured values,
// their bytes, and (backend=cuda) the device image. Each hook is a generated private
// function with the runtime's fixed C signature that unpacks the captures and calls a copy
// of the user's function (or of its tile classifier) whose captured-tensor reads are
// clamped into bounds.
//
//===----------------------------------------------------------------------===//
#ifndef FI_LOWERING_VARIANTCALLS_H
#define FI_LOWERING_VARIANTCALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace fi {

/// Appends (score_mod hook, mask_mod hook, mask tile hook, captures: !llvm.ptr; captures'
/// bytes: i64; device image: !llvm.ptr) for run op `op` (null pointers when it has no
/// variant). `captures` are the op's variant_args after
/// conversion (memrefs and scalars). The captures block is an alloca in the enclosing
/// function's entry block, filled right before the call.
LogicalResult pushVariantArgs(OpBuilder &b, Operation *op, ValueRange captures,
                              SmallVectorImpl<Value> &args);

/// The tile classifier of mask_mod `user` (MaskTiles.cpp), a private function `name` at the
/// start of `into`: (batch, qo_head first, last, q_pos first, last, kv_pos first, last:
/// i32, the mask's captures as `captureTypes`, those of its hook's copy...) -> i32,
/// FI_MASK_TILE_EMPTY / FULL / PARTIAL (runtime.h) for the rectangle of pairs, proven by
/// interval arithmetic over the mask's body.
func::FuncOp buildMaskTileFunction(OpBuilder &b, Block *into, func::FuncOp user,
                                   TypeRange captureTypes, StringRef name);

} // namespace fi
} // namespace mlir

#endif
