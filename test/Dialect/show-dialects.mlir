// RUN: fi-opt --show-dialects | FileCheck %s
// fi-opt registers every upstream dialect plus fi.

// CHECK: Available Dialects:
// CHECK-SAME: bufferization
// CHECK-SAME: ,fi,
// CHECK-SAME: func
// CHECK-SAME: linalg
// CHECK-SAME: tensor
