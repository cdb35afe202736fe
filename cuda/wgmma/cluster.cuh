// cluster.cuh: a thread-block cluster's distributed shared memory (sm_90): a CTA's rank, where
// a peer CTA's shared variable lies, arrivals on its mbarriers, and the cluster barrier.
// Arrivals release at cluster scope and waits (mbar_wait<true>) acquire there, so that what a
// CTA wrote before arriving is seen by the peer's threads that waited on the barrier.
#pragma once
#include <stdint.h>
#include "bsmm/bulk.cuh"

__device__ inline uint32_t cl_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// The shared::cluster address of p (a variable of this CTA's shared memory) in CTA rank's.
__device__ inline uint32_t cl_map(const void *p, uint32_t rank) {
    uint32_t r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr(p)), "r"(rank));
    return r;
}
// One arrival on a barrier of a CTA of the cluster (address from cl_map).
__device__ inline void cl_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(bar) : "memory");
}
// Every thread of the cluster: none passes until all arrive.
__device__ inline void cl_sync() {
    asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
