// multicast.cu: `swlstm bench --wgmma`'s multicast ceiling (bench_cuda.h): how fast bulk copies
// of 16 KB slabs out of L2 reach the SMs' shared memory when each slab read is multicast to
// every CTA of a cluster (1, 2, 4 or 8 CTAs). A backward that streams each dz slab once a
// cluster (docs/PERF.md) is bound by this receiving rate rather than by L2's.
#include "bench/bench_cuda.h"
#include "base/state.cuh"
#include "wgmma/cluster.cuh"

namespace {

constexpr int SLAB = 16384;        // bytes a copy
constexpr int STAGES = 8;          // slots of the ring; slot s is issued by rank s % cluster size
constexpr int PER_CTA = 2048;      // slabs each CTA receives a launch (32 MB)
constexpr long SOURCE = 8L << 20;  // the slabs' source, read again and again from L2
constexpr size_t SMEM = STAGES * SLAB + 1024 + 2 * STAGES * 8;

// Thread 0 issues the slots of its rank, multicast to the whole cluster, once every CTA freed
// the slot; thread 32 announces each slot's bytes, waits for them, reads a word and frees the
// slot at its issuer.
template <int CS>
__global__ void __launch_bounds__(64, 1) multicast_kernel(const unsigned char *src, unsigned *sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // multicast is sm_90a code's (the PTX target warns)
    extern __shared__ unsigned char smem_raw[];
    unsigned char *ring = (unsigned char *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(ring + STAGES * SLAB), *empty = full + STAGES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) mbar_init(full + s, 1), mbar_init(empty + s, CS);
        mbar_init_fence();
    }
    cl_sync();
    const int rank = (int)cl_rank(), cluster = blockIdx.x / CS;
    if (threadIdx.x == 0) {
        for (int q = 0; q < PER_CTA; q++) {
            const int s = q % STAGES;
            if (s % CS != rank) continue;
            if (q >= STAGES) mbar_wait(empty + s, (q / STAGES - 1) & 1);
            const long at = ((long)(cluster * 97 + q) * SLAB) % SOURCE;
            bulk_load_multicast(ring + s * SLAB, src + at, SLAB, full + s, (uint16_t)((1u << CS) - 1));
        }
    } else if (threadIdx.x == 32) {
        unsigned acc = 0;
        for (int q = 0; q < PER_CTA; q++) {
            const int s = q % STAGES;
            mbar_expect(full + s, SLAB);
            mbar_wait<true>(full + s, (q / STAGES) & 1);
            acc += *(const unsigned *)(ring + s * SLAB + (q % 64) * 256);
            cl_arrive(cl_map(empty + s, (uint32_t)(s % CS)));
        }
        sink[blockIdx.x] = acc;
    }
    cl_sync();  // no CTA leaves while a copy or an arrival may still reach it
#endif
}

template <int CS>
double receive_gbps(const unsigned char *src, unsigned *sink, int *ctas) {
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = CS, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
    int sms;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CUDA_CHECK(cudaFuncSetAttribute(multicast_kernel<CS>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)SMEM));
    cfg.gridDim = dim3(sms / CS * CS), cfg.blockDim = dim3(64), cfg.dynamicSmemBytes = SMEM, cfg.stream = g_cuda.stream;
    cfg.attrs = &attr, cfg.numAttrs = 1;
    int clusters = 0;
    CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, multicast_kernel<CS>, &cfg));
    if (clusters < 1) return -1;
    cfg.gridDim = dim3(clusters * CS);
    *ctas = clusters * CS;
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    float best = 1e30f;
    for (int rep = 0; rep < 6; rep++) {  // the first warms up; the best of the rest
        CUDA_CHECK(cudaEventRecord(e0, g_cuda.stream));
        CUDA_CHECK(cudaLaunchKernelEx(&cfg, multicast_kernel<CS>, src, sink));
        CUDA_CHECK(cudaEventRecord(e1, g_cuda.stream));
        CUDA_CHECK(cudaEventSynchronize(e1));
        float ms;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        if (rep > 0 && ms < best) best = ms;
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return (double)clusters * CS * PER_CTA * SLAB / (best * 1e-3) / 1e9;
}

}  // namespace

extern "C" double cb_multicast_gbps(int cluster, int *ctas) {
    unsigned char *src;
    unsigned *sink;
    CUDA_CHECK(cudaMalloc(&src, SOURCE));
    CUDA_CHECK(cudaMemset(src, 1, SOURCE));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned) * 1024));
    const double gbps = cluster == 1   ? receive_gbps<1>(src, sink, ctas)
                        : cluster == 2 ? receive_gbps<2>(src, sink, ctas)
                        : cluster == 4 ? receive_gbps<4>(src, sink, ctas)
                        : cluster == 8 ? receive_gbps<8>(src, sink, ctas)
                                       : -1;
    CUDA_CHECK(cudaFree(src));
    CUDA_CHECK(cudaFree(sink));
    return gbps;
}
