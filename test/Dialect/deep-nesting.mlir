// fi-opt runs MLIR's parser, verifier and passes on a 256 MB stack (tools/fi-opt): they
// recurse once per level of nesting, and on the main thread's 8 MB mlir-opt overflows near
// 4,000 nested regions or 20,000 nested parentheses. Inputs nested deeper than that parse,
// or fail with a diagnostic.
// RUN: %python -c "print('module {' * 6000 + '}' * 6000)" > %t.modules.mlir
// RUN: fi-opt %t.modules.mlir -o /dev/null
// RUN: %python -c "print('func.func @f(%%a: tensor<?x' + '(' * 30000 + ')' * 29999 + '>) { return }')" > %t.parens.mlir
// RUN: not fi-opt %t.parens.mlir -o /dev/null 2>&1 | FileCheck %s
// CHECK: error: expected '->' in function type
