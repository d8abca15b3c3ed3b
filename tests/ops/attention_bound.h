// The attention ops' error bound against the fp64 oracle (tests/ops/oracle.h), shared by the
// gate's attention tests and the int8-activation test of attention_decode_q8.
#pragma once

#include "gate.h"
#include "oracle.h"

// Bound, relative to max |v| (the output is a convex combination of v rows):
//  - each score is a float dot product of length D plus the scale multiply: absolute error
//    sigma <= gamma(D + 2) * max sum_d |scale q_d k_d|;
//  - exp(s - m) then has relative error <= 2 sigma (s and m both perturbed) + |s - m| u (the
//    subtraction) + 32 u (qv::exp, within 17.7 ulp on every backend measured);
//  - the running-max rescales multiply numerator and denominator by the same value (cancels);
//  - perturbing the softmax weights by a relative eps moves the weighted mean by <= 2 eps max|v|;
//  - the float sums over kv_len terms (numerator and denominator): 2 gamma(kv_len + 2);
//  - the matrix-unit kernel (kernels/attention_tiles.cpp, 16-bit inputs) rounds each weight to
//    the input type before P V, as FlashAttention does: one more relative weight_rounding
//    (the input type's unit roundoff; 0 for float);
//  - the final division, then the output's rounding.
inline double attention_bound(const oracle::AttentionRef& r, const oracle::AttentionCase& c, double out_rounding,
                              double weight_rounding) {
  double sigma = gate::gamma(c.head_dim + 2) * r.score_weight;
  double eps_p = 2 * sigma + 2 * r.max_abs_score * gate::kU32 + 32 * gate::kU32 + weight_rounding;
  return 2 * eps_p + 2 * gate::gamma(c.kv_len + 2) + 2 * gate::kU32 + out_rounding;
}
