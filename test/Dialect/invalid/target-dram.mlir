// RUN: fi-opt %s -verify-diagnostics
// Rule: #fi.target dram_gbps_per_sm >= 0 (0 or omitted: unknown)

// expected-error @+1 {{#fi.target dram_gbps_per_sm = -5 must be >= 0 GB/s per SM}}
module attributes {fi.target = #fi.target<sm = 90, sm_count = 132, smem = 232448, dram_gbps_per_sm = -5>} {
}
