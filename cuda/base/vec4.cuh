// vec4.cuh: float4 arithmetic for epilogues that move four units a thread.
#pragma once

__device__ inline float4 add4(float4 x, float4 y) { return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w); }
// Lane v (0-3) of f, v known at compile time where unrolled.
__device__ inline float lane4(const float4 &f, int v) { return v == 0 ? f.x : v == 1 ? f.y : v == 2 ? f.z : f.w; }
