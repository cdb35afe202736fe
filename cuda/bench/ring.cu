// ring.cu: `swlstm bench --wgmma`'s ring ceiling (bench_cuda.h): how fast 16 KB stages out of
// L2 reach an SM's shared memory through a ring of mbarrier slots, by the bulk copy engine (one
// 16 KB copy a stage, or four of 4 KB) or by a warpgroup's 16-byte cp.async copies, at 4, 8 and
// 12 stages in flight. The wgmma step's producer (cuda/wgmma/wg_fwd.cu) is one of these.
#include "bench/bench_cuda.h"
#include "base/check.cuh"
#include "bsmm/bsmm_tile.cuh"
#include "wgmma/wgmma.cuh"

namespace {

constexpr int SLAB = 16384;         // bytes a stage
constexpr int PER_CTA = 1024;       // stages each CTA receives a launch (16 MB)
constexpr int NSLABS = 2048;        // the source: 32 MB, read again and again from L2
constexpr int MIN_SMEM = 120 << 10; // one CTA an SM at every depth

// Warpgroup 0 fills the slots (MODE 0: thread 0, one bulk copy a stage; 1: four of 4 KB; 2:
// all 128 threads, 8 cp.async copies each, a stage handed over S - 2 stages later once this
// thread's copies of it landed); thread 128 waits for each stage, reads a word and frees it.
template <int MODE, int S>
__global__ void __launch_bounds__(256, 1) ring_kernel(const unsigned char *src, unsigned *sink) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int LAG = S - 2;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *ring = (unsigned char *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(ring + S * SLAB), *empty = full + S;
    const int tid = threadIdx.x;
    if (tid == 0) {
        for (int s = 0; s < S; s++) mbar_init(full + s, MODE == 2 ? 128 : 1), mbar_init(empty + s, 1);
        mbar_init_fence();
    }
    __syncthreads();
    if (tid < 128 && (MODE == 2 || tid == 0)) {
        for (int q = 0; q < PER_CTA; q++) {
            const int s = q % S;
            if (q >= S) mbar_wait(empty + s, (q / S - 1) & 1);
            unsigned char *st = ring + s * SLAB;
            // stage q of CTA c reads slab (c * 1237 + q * 389) mod NSLABS: at each q every CTA its own
            const unsigned char *from = src + (long)((blockIdx.x * 1237 + q * 389) % NSLABS) * SLAB;
            if (MODE == 0) {
                mbar_expect(full + s, SLAB);
                bulk_load(st, from, SLAB, full + s);
            } else if (MODE == 1) {
                mbar_expect(full + s, SLAB);
                for (int k = 0; k < 4; k++) bulk_load(st + k * 4096, from + k * 4096, 4096, full + s);
            } else {
#pragma unroll
                for (int k = 0; k < 8; k++) cp_async16(st + (tid + k * 128) * 16, from + (tid + k * 128) * 16, true);
                cp_commit();
                if (q >= LAG) {
                    cp_wait<LAG>();
                    fence_async_shared();
                    mbar_arrive(full + (q - LAG) % S);
                }
            }
        }
        if (MODE == 2) {
            cp_wait<0>();
            fence_async_shared();
            for (int q = PER_CTA - LAG; q < PER_CTA; q++) mbar_arrive(full + q % S);
        }
    } else if (tid == 128) {
        unsigned acc = 0;
        for (int q = 0; q < PER_CTA; q++) {
            const int s = q % S;
            mbar_wait(full + s, (q / S) & 1);
            acc += *(const unsigned *)(ring + s * SLAB + (q % 64) * 256);
            mbar_arrive(empty + s);
        }
        sink[blockIdx.x] = acc;
    }
#endif
}

struct RingArg {
    const unsigned char *src;
    unsigned *sink;
    int ctas, smem;
};

template <int MODE, int S>
void ring_once(void *arg, int iter) {
    const RingArg *r = (const RingArg *)arg;
    ring_kernel<MODE, S><<<r->ctas, 256, r->smem>>>(r->src, r->sink);  // the default stream, as cb_time_ms's events
    LAUNCH_CHECK();
}

template <int MODE, int S>
double ring_gbps(const unsigned char *src, unsigned *sink, int *ctas) {
    RingArg r = {src, sink, 0, (S * SLAB > MIN_SMEM ? S * SLAB : MIN_SMEM) + 1024 + 2 * S * 8};
    CUDA_CHECK(cudaDeviceGetAttribute(&r.ctas, cudaDevAttrMultiProcessorCount, 0));
    CUDA_CHECK(cudaFuncSetAttribute(ring_kernel<MODE, S>, cudaFuncAttributeMaxDynamicSharedMemorySize, r.smem));
    const double ms = cb_time_ms(ring_once<MODE, S>, &r, 2, 30);
    *ctas = r.ctas;
    return (double)r.ctas * PER_CTA * SLAB / (ms * 1e-3) / 1e9;
}

template <int MODE>
double ring_depth(int stages, const unsigned char *src, unsigned *sink, int *ctas) {
    return stages == 4 ? ring_gbps<MODE, 4>(src, sink, ctas)
           : stages == 8 ? ring_gbps<MODE, 8>(src, sink, ctas)
           : stages == 12 ? ring_gbps<MODE, 12>(src, sink, ctas)
                          : -1;
}

}  // namespace

extern "C" double cb_ring_gbps(int mode, int stages, int *ctas) {
    unsigned char *src;
    unsigned *sink;
    CUDA_CHECK(cudaMalloc(&src, (size_t)NSLABS * SLAB));
    CUDA_CHECK(cudaMemset(src, 1, (size_t)NSLABS * SLAB));
    CUDA_CHECK(cudaMalloc(&sink, sizeof(unsigned) * 1024));
    const double gbps = mode == 0   ? ring_depth<0>(stages, src, sink, ctas)
                        : mode == 1 ? ring_depth<1>(stages, src, sink, ctas)
                        : mode == 2 ? ring_depth<2>(stages, src, sink, ctas)
                                    : -1;
    CUDA_CHECK(cudaFree(src));
    CUDA_CHECK(cudaFree(sink));
    return gbps;
}
