// sync.cu: `swlstm bench --sync` (bench_cuda.h cb_sync): microseconds per dependent step of a
// chain of small dependent ops, each step reading what the one before wrote, under five ways
// of ordering them: kernels in a CUDA graph, the same programmatically dependent, one
// persistent kernel with a grid barrier, one persistent kernel whose CTAs wait only on the
// producers they read (readiness flags), and one thread-block cluster over distributed
// shared memory. The work of a step is the same in each: block row r of the state becomes a
// mix of the blocks of the columns that mlstm_3min's W_h layout stores in row r. The mix is
// integer arithmetic, so every variant's last state must equal the host's bit for bit.
#include <cooperative_groups.h>
#include <stdio.h>
#include <algorithm>
#include <vector>
#include "bench/bench_cuda.h"
#include "ops/common.cuh"
#include "sparse/mask.h"

namespace cg = cooperative_groups;

enum { BW = 32, MAX_WARPS = 32, STEPS = 1000, WARMUP = 3, REPS = 50 };
// Polls before a wait gives up and reports a broken sync instead of hanging the device.
#define SPIN_LIMIT (1u << 22)

struct Chain {
    const int *row_ptr, *col;   // the mask's block rows (CSR)
    const int *dep_ptr, *dep;   // per CTA, the block rows it waits on (mask_owner_columns)
    unsigned *x;                // [STEPS + 1][nb][BW]: the state before and after each step
    unsigned *flag;             // [nb]: per block row, the epoch of its last written step
    unsigned *bar;              // the grid barrier's arrivals (never reset)
    unsigned *salt;             // bumped once a run, so that a stale read gives a wrong answer
    int *err;                   // set when a wait timed out
    int nb, wpr;                // block rows; warps a row is split over
};

// One block's contribution to lane i of row r, and a row's value from its sum: the same on
// the host and the device.
__host__ __device__ inline unsigned mix(unsigned acc, unsigned v, int r, int c) { return acc + v * ((unsigned)(r * 7 + c * 13) | 1u); }
__host__ __device__ inline unsigned finish(unsigned acc, unsigned salt) { return (acc ^ (acc >> 7)) + salt; }
__host__ __device__ inline int lane_of(int c, int i) { return (i + c) & (BW - 1); }

// Rows r0..r1-1 of one step, by this CTA: wpr warps a row each take every wpr-th of its
// blocks, then the row's first warp sums their parts. load(c, i) reads lane i of block c of
// the step's input; store(r, i, v) writes lane i of row r of its output.
template <class Load, class Store>
__device__ inline void rows_step(const Chain &k, int r0, int r1, unsigned salt, Load load, Store store) {
    __shared__ unsigned part[MAX_WARPS][BW];
    const int w = threadIdx.x >> 5, lane = threadIdx.x & 31, rr = w / k.wpr, sub = w % k.wpr, r = r0 + rr;
    unsigned acc = 0;
    if (r < r1) {
#pragma unroll 4
        for (int j = k.row_ptr[r] + sub; j < k.row_ptr[r + 1]; j += k.wpr) {
            const int c = k.col[j];
            acc = mix(acc, load(c, lane_of(c, lane)), r, c);
        }
    }
    part[w][lane] = acc;
    __syncthreads();
    if (r < r1 && sub == 0) {
        unsigned s = 0;
        for (int q = 0; q < k.wpr; q++) s += part[w + q][lane];
        store(r, lane, finish(s, salt));
    }
}

// A step through global memory: lane loads from L2 (never a stale L1 line).
__device__ inline void global_step(const Chain &k, int r0, int r1, unsigned salt, int s) {
    const unsigned *in = k.x + (size_t)s * k.nb * BW;
    unsigned *out = k.x + (size_t)(s + 1) * k.nb * BW;
    rows_step(k, r0, r1, salt, [&](int c, int i) { return __ldcg(in + c * BW + i); },
              [&](int r, int i, unsigned v) { __stcg(out + r * BW + i, v); });
}

__device__ inline unsigned ld_acquire(const unsigned *p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ inline void st_release(unsigned *p, unsigned v) { asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }
__device__ inline void red_release(unsigned *p, unsigned v) { asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory"); }

// Spins until *p has reached target (epochs wrap: compared by difference). Gives up after
// SPIN_LIMIT polls, or soon after another wait gave up, and flags the run as failed.
__device__ inline void wait_reach(const unsigned *p, unsigned target, int *err) {
    for (unsigned n = 1; (int)(ld_acquire(p) - target) < 0; n++)
        if (n >= SPIN_LIMIT || ((n & 1023) == 0 && *(volatile int *)err)) {
            atomicExch(err, 1);
            return;
        }
}

__device__ inline int cta_row(const Chain &k, int o) { return (int)((long)o * k.nb / gridDim.x); }  // as mask_owner_row

__global__ void salt_kernel(unsigned *salt) { *salt += 1; }

// (a), (b): one kernel a step; with PDL it waits on its predecessor before reading anything
// and lets the next one launch at once.
template <bool PDL>
__global__ void step_kernel(Chain k, int s) {
    if (PDL) pdl_enter();
    global_step(k, cta_row(k, blockIdx.x), cta_row(k, blockIdx.x + 1), __ldcg(k.salt), s);
}

// (c), (d): all steps in one cooperative launch. FLAGS: before step s a CTA waits until each
// row it reads carries epoch base + s, and after it stamps its own rows base + s + 1 (epochs
// only grow, so nothing is reset between runs). Else every CTA meets the others at a grid
// barrier after each step: arrivals count up from `base`, never reset either.
template <bool FLAGS>
__global__ void persistent_kernel(Chain k, unsigned base) {
    const int r0 = cta_row(k, blockIdx.x), r1 = cta_row(k, blockIdx.x + 1);
    const unsigned salt = __ldcg(k.salt);
    for (int s = 0; s < STEPS; s++) {
        if (FLAGS && s > 0) {
            for (int i = k.dep_ptr[blockIdx.x] + threadIdx.x; i < k.dep_ptr[blockIdx.x + 1]; i += blockDim.x)
                wait_reach(k.flag + k.dep[i], base + s, k.err);
            __syncthreads();  // this CTA's other threads read after the acquires
        }
        global_step(k, r0, r1, salt, s);
        __syncthreads();  // every thread's writes before thread 0's release
        if (threadIdx.x == 0) {
            __threadfence();
            if (FLAGS)
                for (int r = r0; r < r1; r++) st_release(k.flag + r, base + s + 1);
            else if (s + 1 < STEPS) {
                red_release(k.bar, 1);
                wait_reach(k.bar, base + (s + 1) * gridDim.x, k.err);
            }
        }
        if (!FLAGS) __syncthreads();
    }
}

// (e): the whole chain in one cluster. Each CTA holds its rows of the state in shared memory
// (two copies: a step reads one and writes the other), reads the rows it needs from the
// other CTAs' shared memory, and the cluster barrier (arrive release, wait acquire) ends the
// step. The state meets global memory only before the first step and after the last.
__global__ void __launch_bounds__(1024) cluster_kernel(Chain k, int rows_per) {
    extern __shared__ unsigned st[];  // [2][rows_per][BW]
    cg::cluster_group cl = cg::this_cluster();
    const int rank = (int)cl.block_rank(), r0 = rank * rows_per, r1 = min(k.nb, r0 + rows_per);
    const unsigned salt = __ldcg(k.salt);
    for (int i = threadIdx.x; i < (r1 - r0) * BW; i += blockDim.x) st[i] = k.x[(size_t)r0 * BW + i];
    cl.sync();
    for (int s = 0; s < STEPS; s++) {
        unsigned *in = st + (s & 1) * rows_per * BW, *out = st + ((s + 1) & 1) * rows_per * BW;
        rows_step(k, r0, r1, salt,
                  [&](int c, int i) { return cl.map_shared_rank(in, c / rows_per)[(c % rows_per) * BW + i]; },
                  [&](int r, int i, unsigned v) { out[(r - r0) * BW + i] = v; });
        cl.sync();
    }
    const unsigned *last = st + (STEPS & 1) * rows_per * BW;
    for (int i = threadIdx.x; i < (r1 - r0) * BW; i += blockDim.x) k.x[((size_t)STEPS * k.nb + r0) * BW + i] = last[i];
}

// ---- host ----

// The chain on the host: the state after STEPS steps from x0 with this salt.
static std::vector<unsigned> host_chain(const std::vector<int> &rp, const std::vector<int> &col, const std::vector<unsigned> &x0,
                                        unsigned salt) {
    std::vector<unsigned> x = x0, y(x0.size());
    for (int s = 0; s < STEPS; s++) {
        for (int r = 0; r + 1 < (int)rp.size(); r++)
            for (int i = 0; i < BW; i++) {
                unsigned acc = 0;
                for (int j = rp[r]; j < rp[r + 1]; j++) acc = mix(acc, x[col[j] * BW + lane_of(col[j], i)], r, col[j]);
                y[r * BW + i] = finish(acc, salt);
            }
        std::swap(x, y);
    }
    return x;
}

struct Run {
    Chain k;
    int kind, ctas, threads, cluster;
    unsigned launches;       // cooperative runs so far (their epochs follow from it)
    cudaGraphExec_t graph;
    size_t smem;
};
enum { GRAPH, GRAPH_PDL, BARRIER, FLAGS, CLUSTER };
static const char *kind_name[] = {"kernels in a CUDA graph", "the same, programmatic dependent launch",
                                  "persistent, grid barrier", "persistent, readiness flags", "cluster, DSMEM + cluster barrier"};

static void run_once(void *p, int iter) {
    Run *r = (Run *)p;
    if (r->kind <= GRAPH_PDL) {
        CUDA_CHECK(cudaGraphLaunch(r->graph, 0));
        return;
    }
    salt_kernel<<<1, 1>>>(r->k.salt);
    LAUNCH_CHECK();
    if (r->kind == CLUSTER) {
        cudaLaunchConfig_t cfg = {};
        cudaLaunchAttribute a = {};
        a.id = cudaLaunchAttributeClusterDimension;
        a.val.clusterDim.x = r->cluster, a.val.clusterDim.y = 1, a.val.clusterDim.z = 1;
        cfg.gridDim = dim3(r->ctas), cfg.blockDim = dim3(r->threads), cfg.dynamicSmemBytes = r->smem;
        cfg.attrs = &a, cfg.numAttrs = 1;
        CUDA_CHECK(cudaLaunchKernelEx(&cfg, cluster_kernel, r->k, (r->k.nb + r->cluster - 1) / r->cluster));
        return;
    }
    const unsigned n = r->launches++;
    if (r->kind == FLAGS)
        launch_attr(attr_cooperative(), persistent_kernel<true>, dim3(r->ctas), dim3(r->threads), 0, 0, r->k, n * STEPS);
    else
        launch_attr(attr_cooperative(), persistent_kernel<false>, dim3(r->ctas), dim3(r->threads), 0, 0, r->k,
                    n * (unsigned)(STEPS - 1) * r->ctas);
}

// The graph of (a) or (b): the salt's bump, then STEPS step kernels.
static cudaGraphExec_t make_graph(const Run &r) {
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t e;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    salt_kernel<<<1, 1, 0, s>>>(r.k.salt);
    LAUNCH_CHECK();
    for (int i = 0; i < STEPS; i++) {
        if (r.kind == GRAPH_PDL) launch_attr(attr_pdl(true), step_kernel<true>, dim3(r.ctas), dim3(r.threads), 0, s, r.k, i);
        else step_kernel<false><<<r.ctas, r.threads, 0, s>>>(r.k, i);
        LAUNCH_CHECK();
    }
    CUDA_CHECK(cudaStreamEndCapture(s, &g));
    CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
    CUDA_CHECK(cudaGraphDestroy(g));
    CUDA_CHECK(cudaStreamDestroy(s));
    return e;
}

template <class T>
static T *to_dev(const std::vector<T> &v) {
    T *d;
    CUDA_CHECK(cudaMalloc(&d, sizeof(T) * std::max<size_t>(v.size(), 1)));
    CUDA_CHECK(cudaMemcpy(d, v.data(), sizeof(T) * v.size(), cudaMemcpyHostToDevice));
    return d;
}

// Warps per row so that rows_per rows fit a CTA of at most MAX_WARPS warps, at most 4.
static int warps_per_row(int rows_per) { return std::max(1, std::min(4, MAX_WARPS / rows_per)); }

// One table row per mechanism for layout m; returns how many failed their check.
static int sync_rows(const char *desc, const Mask &m, int nsm) {
    const int nb = m.nr, ctas = std::min(nsm, nb);
    std::vector<int> rp(nb + 1, 0), col;
    for (int r = 0; r < nb; r++) {
        for (int c = 0; c < nb; c++)
            if (m.m[(size_t)r * nb + c]) col.push_back(c);
        rp[r + 1] = (int)col.size();
    }
    int *dptr, *dlist;
    mask_owner_columns(&m, ctas, &dptr, &dlist);
    std::vector<int> vptr(dptr, dptr + ctas + 1), vlist(dlist, dlist + dptr[ctas]);
    free(dptr);
    free(dlist);
    std::vector<unsigned> x0((size_t)nb * BW);
    for (size_t i = 0; i < x0.size(); i++) x0[i] = (unsigned)(i * 2654435761u) ^ 0x5bd1e995u;
    Chain k = {};
    k.row_ptr = to_dev(rp), k.col = to_dev(col), k.dep_ptr = to_dev(vptr), k.dep = to_dev(vlist), k.nb = nb;
    CUDA_CHECK(cudaMalloc(&k.x, sizeof(unsigned) * (STEPS + 1) * nb * BW));
    CUDA_CHECK(cudaMemcpy(k.x, x0.data(), sizeof(unsigned) * x0.size(), cudaMemcpyHostToDevice));
    k.flag = to_dev(std::vector<unsigned>(nb, 0)), k.bar = to_dev(std::vector<unsigned>(1, 0));
    k.salt = to_dev(std::vector<unsigned>(1, 0));
    k.err = to_dev(std::vector<int>(1, 0));
    int maxrows = 0;
    for (int o = 0; o < ctas; o++) maxrows = std::max(maxrows, mask_owner_row(nb, ctas, o + 1) - mask_owner_row(nb, ctas, o));
    const double mean_deps = (double)vlist.size() / ctas;
    std::vector<unsigned> want;
    unsigned want_salt = ~0u;
    int failed = 0;
    for (int kind = GRAPH; kind <= CLUSTER + 1; kind++) {
        Run r = {};
        r.k = k, r.kind = std::min(kind, (int)CLUSTER), r.ctas = ctas;
        int rows_per = maxrows;
        if (r.kind == CLUSTER) {
            r.cluster = r.ctas = kind == CLUSTER ? 8 : 16;
            rows_per = (nb + r.cluster - 1) / r.cluster;
            r.smem = sizeof(unsigned) * 2 * rows_per * BW;
            if (rows_per > MAX_WARPS) continue;  // a CTA would need more than one warp per row
        }
        r.k.wpr = warps_per_row(rows_per);
        r.threads = 32 * r.k.wpr * rows_per;
        char note[96] = "";
        if (r.kind == CLUSTER) {
            CUDA_CHECK(cudaFuncSetAttribute(cluster_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
            cudaLaunchConfig_t cfg = {};
            cudaLaunchAttribute a = {};
            a.id = cudaLaunchAttributeClusterDimension;
            a.val.clusterDim.x = r.cluster, a.val.clusterDim.y = 1, a.val.clusterDim.z = 1;
            cfg.gridDim = dim3(r.ctas), cfg.blockDim = dim3(r.threads), cfg.dynamicSmemBytes = r.smem;
            cfg.attrs = &a, cfg.numAttrs = 1;
            int nclusters = 0;
            if (cudaOccupancyMaxActiveClusters(&nclusters, cluster_kernel, &cfg) != cudaSuccess || nclusters < 1) {
                (void)cudaGetLastError();
                printf("| %s, cluster of %d | %s | %d | - | - | - | n/a (cannot be placed) |\n", kind_name[CLUSTER], r.cluster, desc,
                       r.ctas);
                continue;
            }
            snprintf(note, sizeof note, ", cluster of %d", r.cluster);
        }
        if (r.kind <= GRAPH_PDL) r.graph = make_graph(r);
        CUDA_CHECK(cudaMemset(k.salt, 0, sizeof(unsigned)));  // every mechanism ends on the same salt
        CUDA_CHECK(cudaMemset(k.x + (size_t)nb * BW, 0xff, sizeof(unsigned) * STEPS * nb * BW));  // nothing left from the last one
        double ms = cb_time_ms(run_once, &r, WARMUP, REPS);
        CUDA_CHECK(cudaDeviceSynchronize());
        unsigned salt;
        int err;
        std::vector<unsigned> got(x0.size());
        CUDA_CHECK(cudaMemcpy(&salt, k.salt, sizeof salt, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(&err, k.err, sizeof err, cudaMemcpyDeviceToHost));
        CUDA_CHECK(cudaMemcpy(got.data(), k.x + (size_t)STEPS * nb * BW, sizeof(unsigned) * got.size(), cudaMemcpyDeviceToHost));
        if (salt != want_salt) want = host_chain(rp, col, x0, salt), want_salt = salt;
        const bool ok = !err && got == want;
        failed += !ok;
        char deps[48] = "-";
        if (r.kind == FLAGS) snprintf(deps, sizeof deps, "%.1f of %d", mean_deps, nb);
        printf("| %s%s | %s | %d | %d | %s | %d | %.2f | %s |\n", kind_name[r.kind], note, desc, r.ctas, r.threads, deps, STEPS,
               ms * 1e3 / STEPS, ok ? "ok" : err ? "FAILED (a wait timed out)" : "FAILED (wrong state)");
        fflush(stdout);
        if (err) CUDA_CHECK(cudaMemset(k.err, 0, sizeof(int)));
        if (r.graph) CUDA_CHECK(cudaGraphExecDestroy(r.graph));
        if (r.kind == BARRIER || r.kind == FLAGS) {  // the next mechanism starts from zero epochs
            CUDA_CHECK(cudaMemset(k.flag, 0, sizeof(unsigned) * nb));
            CUDA_CHECK(cudaMemset(k.bar, 0, sizeof(unsigned)));
        }
    }
    void *bufs[] = {(void *)k.row_ptr, (void *)k.col, (void *)k.dep_ptr, (void *)k.dep, k.x, k.flag, k.bar, k.salt, k.err};
    for (void *b : bufs) CUDA_CHECK(cudaFree(b));
    return failed;
}

extern "C" int cb_sync(void) {
    char dev[256];
    size_t l2;
    cb_device(dev, sizeof dev, &l2);
    int nsm;
    CUDA_CHECK(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, 0));
    printf("device: %s\na chain of %d dependent steps over H = 5120 in 32 x 32 blocks (160 block rows): each step, every "
           "block row becomes an integer mix of the blocks its W_h row stores (mlstm_3min's ba_14, seed 1; dense: every "
           "row reads the whole row before it, as a layer norm's statistics do); us/step = a run's time / %d, median of "
           "runs; checked = the last state equals the host's, bit for bit\n\n",
           dev, STEPS, STEPS);
    printf("| mechanism | mask | CTAs | threads | producers a CTA waits on | steps | us/step | checked |\n"
           "|---|---|---|---|---|---|---|---|\n");
    int failed = 0;
    const char *descs[] = {"ba_14", "dense"};
    for (const char *d : descs) {
        Mask m = mask_make(d, 160, 160, 1);
        failed += sync_rows(d, m, nsm);
        mask_free(&m);
    }
    if (failed) fprintf(stderr, "bench --sync: %d mechanism(s) failed their check (see the table)\n", failed);
    return failed ? 1 : 0;
}
