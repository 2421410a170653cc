//===- FiDialect.h - the fi dialect: ops, types, attributes -----*- C++ -*-===//
//
// Everything a client of the fi dialect needs: the dialect, its enums, attributes
// (#fi.bsr, #fi.tiles, #fi.target), the !fi.plan type and the ops.
//
//===----------------------------------------------------------------------===//
#ifndef FI_DIALECT_FIDIALECT_H
#define FI_DIALECT_FIDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "fi/Dialect/FiEnums.h.inc"
#include "fi/Dialect/FiOpsDialect.h.inc"

namespace mlir {
namespace fi {
/// Parses `true` or `false` (a parameter of #fi.tiles).
FailureOr<bool> parseBoolKeyword(AsmParser &parser);

namespace detail {
/// Memory effects of every fi op: reads of its memref inputs, writes (and, for
/// fi.append_paged_kv, reads) of its memref destinations; nothing in the tensor form.
void getFiMemoryEffects(
    Operation *op,
    SmallVectorImpl<SideEffects::EffectInstance<MemoryEffects::Effect>> &effects);
/// `smScale` if present, else 1/sqrt(head_dim) with head_dim the last dim of `q`.
float effectiveSmScale(std::optional<llvm::APFloat> smScale, ShapedType q);
} // namespace detail
} // namespace fi
} // namespace mlir

#define GET_ATTRDEF_CLASSES
#include "fi/Dialect/FiAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "fi/Dialect/FiOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "fi/Dialect/FiOps.h.inc"

namespace mlir {
namespace fi {
namespace detail {
/// Attaches the BufferizableOpInterface models of the fi ops (one-shot-bufferize);
/// called by FiDialect::initialize().
void attachBufferizableOpInterfaceModels(MLIRContext *context);
} // namespace detail
} // namespace fi
} // namespace mlir

#endif // FI_DIALECT_FIDIALECT_H
