// bulk.cuh: the bulk copy engine (sm_90 cp.async.bulk, one instruction per contiguous run of
// global memory into shared memory) and the mbarriers its copies complete on. A barrier made
// with count 1 flips phase when its one arrival (mbar_expect, which also announces the
// bytes coming) and all those bytes have landed; waiters name the phase's parity.
#pragma once
#include <cudaTypedefs.h>
#include <stdint.h>

// Host: a tensor map over a row-major [rows, cols] array of bf16 or fp32 (type), rows ld
// elements apart, read in boxes of box_rows x box_cols (tensor_map.cu).
CUtensorMap tensor_map_2d(const void *p, CUtensorMapDataType type, int rows, int cols, long ld, int box_cols, int box_rows,
                          CUtensorMapSwizzle swizzle);
// A block-32 matrix's nnzb stored bf16 blocks as rows of 32, read a block (32 x 32) at a time
// in the 64-byte swizzle (bsmm_tile.cuh sm_at).
CUtensorMap tensor_map_blocks(const void *w, long nnzb);
// A bf16 [planes, rows, cols] array, contiguous, read in boxes of box_rows x box_cols of one plane.
CUtensorMap tensor_map_3d_bf16(const void *p, int planes, int rows, int cols, int box_cols, int box_rows,
                               CUtensorMapSwizzle swizzle);

__device__ inline uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ inline void mbar_init(uint64_t *bar, int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count) : "memory");
}
// After mbar_init and before any thread (or the copy engine) uses the barriers; then a __syncthreads.
__device__ inline void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
// n barriers of count 1, ready for every thread of the CTA (a CTA-wide barrier: all threads call it).
__device__ inline void mbar_init_all(uint64_t *bar, int n) {
    if ((int)threadIdx.x < n) mbar_init(bar + threadIdx.x, 1);
    mbar_init_fence();
    __syncthreads();
}

__device__ inline void mbar_expect(uint64_t *bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

// The wait for the phase of parity `parity` to complete. CLUSTER: threads of other CTAs of the
// cluster arrive on it too (cluster.cuh), so their stores before arriving are acquired.
template <bool CLUSTER = false>
__device__ inline void mbar_wait(uint64_t *bar, uint32_t parity) {
    uint32_t done;
    do {
        if constexpr (CLUSTER)
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
        else
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
    } while (!done);
}

// L2 policy for data read once (the weights): evicted first, so that what is read again stays.
__device__ inline uint64_t l2_evict_first() {
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}
// A 2-D box of a tensor map (passed as a __grid_constant__ kernel parameter) at element
// coordinates (c0 along the contiguous dimension, c1 along the other); parts of the box
// outside the tensor arrive as zeros and count towards the bytes like the rest.
__device__ inline void tensor_load_2d(void *dst, const void *map, int c0, int c1, uint64_t *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(smem_addr(dst)), "l"(map), "r"(c0), "r"(c1), "r"(smem_addr(bar)) : "memory");
}
__device__ inline void tensor_load_3d(void *dst, const void *map, int c0, int c1, int c2, uint64_t *bar) {
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(smem_addr(dst)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_addr(bar)) : "memory");
}
// bytes (a multiple of 16, both addresses 16-byte aligned) from global src to shared dst,
// counted on bar, under L2 policy pol.
__device__ inline void bulk_load_hint(void *dst, const void *src, uint32_t bytes, uint64_t *bar, uint64_t pol) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                 ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(pol) : "memory");
}

// The same without a policy.
__device__ inline void bulk_load(void *dst, const void *src, uint32_t bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}
// The same copy landing at dst's offset in the shared memory of each CTA of the cluster named
// in `ctas` (bit r: rank r), completing on the barrier at bar's offset in each (sm_90).
__device__ inline void bulk_load_multicast(void *dst, const void *src, uint32_t bytes, uint64_t *bar, uint16_t ctas) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], %4;"
                 ::"r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)), "h"(ctas) : "memory");
}
__device__ inline void mbar_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// The CTA walks stages 0..n-1 of a ring of S slots, one barrier each: stages 0..S-2 already
// issued, it waits for stage st, then (all threads past stage st - 1, so its slot is free)
// thread 0 issues stage st + S - 1 and everyone uses stage st.
template <int S, typename Issue, typename Use>
__device__ inline void ring_walk(uint64_t *bar, int n, Issue issue, Use use) {
    for (int st = 0; st < n; st++) {
        mbar_wait(bar + st % S, (st / S) & 1);
        __syncthreads();
        if (threadIdx.x == 0 && st + S - 1 < n) issue(st + S - 1);
        use(st);
    }
}
