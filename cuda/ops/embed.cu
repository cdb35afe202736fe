// embed.cu: token embedding (CPU twin: src/ops/embed_cpu.c); table is [256, E].
//   fwd  out[N,E] = table[tok[n], :]
//   bwd  dtable[tok[n], :] += dout[n, :]. The order of the fp32 adds, the same in both twins
//        (so both give the same bits): for each row v, the positions n with tok[n] == v, in
//        increasing n, are cut into runs of SW_EMBED_RUN; each run is summed from zero in n
//        order, and the runs' sums are added to dtable[v] in run order:
//        dtable[v] = ((dtable[v] + run0) + run1) + ... Rows that do not occur are not touched.
#include "ops/ops.cuh"

// One CTA per row (grid.x) and tile of columns (grid.y): no division per element. V is
// float4 where rows are 16-byte aligned (E counts V's).
template <typename V>
__global__ void embed_fwd_kernel(V *out, const V *table, const int *tok, int E) {
    const V *src = table + (size_t)tok[blockIdx.x] * E;
    V *dst = out + (size_t)blockIdx.x * E;
    for (int e = blockIdx.y * blockDim.x + threadIdx.x; e < E; e += gridDim.y * blockDim.x) dst[e] = src[e];
}

template <typename V>
static void embed_fwd_as(V *out, const V *table, const int *tok, int N, int E, cudaStream_t stream) {
    const int threads = E < 256 ? (E + 31) / 32 * 32 : 256;
    embed_fwd_kernel<<<dim3(N, min(cdiv(E, threads), 65535)), threads, 0, stream>>>(out, table, tok, E);
    LAUNCH_CHECK();
}

void embed_fwd_cuda(real *out, const real *table, const int *tok, int N, int E, cudaStream_t stream) {
    if (N <= 0 || E <= 0) return;
    if (E % 4 == 0 && ((uintptr_t)out | (uintptr_t)table) % 16 == 0)
        embed_fwd_as((float4 *)out, (const float4 *)table, tok, N, E / 4, stream);
    else
        embed_fwd_as(out, table, tok, N, E, stream);
}

// (The backend table's entry: the one above on the op stream.)
void embed_fwd_cuda(real *out, const real *table, const int *tok, int N, int E) {
    embed_fwd_cuda(out, table, tok, N, E, g_cuda.stream);
}

// ---- backward: plan (sort by token, cut runs), run sums, then each row's runs in order ----

// The plan in scratch: run r covers perm[runs[r].x .. runs[r].y); row v's runs are
// [first[v], first[v+1]), so first[SW_VOCAB] is the run count (known only on the device).
struct EmbedPlan {
    int2 *runs;
    int *first, *perm;
};

#define PLAN_THREADS 1024
#define PLAN_WARPS (PLAN_THREADS / 32)

// Rows' counts -> start[v] (v's first index in perm) and first[v] (its first run), for all
// v: warp 0, 8 rows a lane, then a prefix over the lanes by shuffles.
__device__ void plan_scan(int *start, int *first, const int *count) {
    const int lane = threadIdx.x, per = SW_VOCAB / 32;
    int c = 0, r = 0;
    for (int j = 0; j < per; j++) {
        c += count[lane * per + j];
        r += (count[lane * per + j] + SW_EMBED_RUN - 1) / SW_EMBED_RUN;
    }
    int ci = c, ri = r;  // inclusive prefixes over the lanes
    for (int d = 1; d < 32; d *= 2) {
        const int cu = __shfl_up_sync(0xffffffffu, ci, d), ru = __shfl_up_sync(0xffffffffu, ri, d);
        if (lane >= d) ci += cu, ri += ru;
    }
    c = ci - c, r = ri - r;
    for (int j = 0; j < per; j++) {
        const int v = lane * per + j;
        start[v] = c, first[v] = r;
        c += count[v], r += (count[v] + SW_EMBED_RUN - 1) / SW_EMBED_RUN;
    }
    if (lane == 31) start[SW_VOCAB] = c, first[SW_VOCAB] = r;
}

// One CTA: counts, runs, then a stable counting sort of the positions by token. The scatter
// takes PLAN_THREADS positions a pass: a position's slot is its token's base, plus the
// token's count in the warps before (wcount) and in the lanes before (__match_any_sync), so
// positions keep their n order within a token.
__global__ void __launch_bounds__(PLAN_THREADS) embed_plan_kernel(EmbedPlan p, const int *tok, int N) {
    __shared__ int base[SW_VOCAB], start[SW_VOCAB + 1], first[SW_VOCAB + 1], wcount[PLAN_WARPS][SW_VOCAB];
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    for (int i = t; i < SW_VOCAB; i += PLAN_THREADS) base[i] = 0;
    for (int i = t; i < PLAN_WARPS * SW_VOCAB; i += PLAN_THREADS) wcount[i / SW_VOCAB][i % SW_VOCAB] = 0;
    __syncthreads();
    for (int n = t; n < N; n += PLAN_THREADS) atomicAdd(&base[tok[n]], 1);
    __syncthreads();
    if (warp == 0) plan_scan(start, first, base);
    __syncthreads();
    const int nruns = first[SW_VOCAB];
    for (int r = t; r < nruns; r += PLAN_THREADS) {
        int lo = 0, hi = SW_VOCAB - 1;  // the last v with first[v] <= r: r's row
        while (lo < hi) {
            const int mid = (lo + hi + 1) / 2;
            if (first[mid] <= r) lo = mid;
            else hi = mid - 1;
        }
        const int b = start[lo] + (r - first[lo]) * SW_EMBED_RUN;
        p.runs[r] = make_int2(b, min(b + SW_EMBED_RUN, start[lo + 1]));
    }
    for (int i = t; i <= SW_VOCAB; i += PLAN_THREADS) p.first[i] = first[i];
    for (int i = t; i < SW_VOCAB; i += PLAN_THREADS) base[i] = start[i];
    __syncthreads();
    int next = t < N ? tok[t] : -1;  // (each pass loads the next pass's token early)
    for (int n = t; n - t < N; n += PLAN_THREADS) {
        const int v = next;
        next = n + PLAN_THREADS < N ? tok[n + PLAN_THREADS] : -1;
        const unsigned peers = __match_any_sync(0xffffffffu, v);
        const bool lead = v >= 0 && lane == __ffs(peers) - 1;
        if (lead) wcount[warp][v] = __popc(peers);
        __syncthreads();
        if (v >= 0) {
            int pos = base[v] + __popc(peers & ((1u << lane) - 1));
            for (int w = 0; w < warp; w++) pos += wcount[w][v];
            p.perm[pos] = n;
        }
        __syncthreads();
        if (lead) {
            atomicAdd(&base[v], __popc(peers));
            wcount[warp][v] = 0;
        }
        __syncthreads();
    }
}

#define SUM_THREADS 128
#define SUM_COLS 4  // columns a thread, SUM_THREADS apart: each load instruction is coalesced
#define SUM_ROWS 8  // rows loaded before any is added: 32 loads in flight a thread

// part[r][e] = the sum of run r's rows of dout at column e, from zero in n order. grid.x
// bounds the run count (CTAs past it exit), grid.y tiles the columns. dout is fp32 or bf16
// (a twin); the sums are fp32. Loads past the run or the row are clamped to its last row or
// column (and not added): no branch between them, all SUM_ROWS x SUM_COLS in flight.
template <typename T>
__global__ void __launch_bounds__(SUM_THREADS) embed_run_sum_kernel(real *part, const T *dout, EmbedPlan p, int E) {
    static_assert(SUM_THREADS >= SW_EMBED_RUN, "a thread stages each row of a run");
    __shared__ int rows[SW_EMBED_RUN];
    const int r = blockIdx.x;
    if (r >= p.first[SW_VOCAB]) return;
    const int2 run = p.runs[r];
    const int len = run.y - run.x, e0 = blockIdx.y * SUM_THREADS * SUM_COLS + threadIdx.x;
    if (threadIdx.x < len) rows[threadIdx.x] = p.perm[run.x + threadIdx.x];
    __syncthreads();
    float acc[SUM_COLS] = {};
    for (int i = 0; i < len; i += SUM_ROWS) {
        float x[SUM_ROWS][SUM_COLS];
#pragma unroll
        for (int u = 0; u < SUM_ROWS; u++) {
            const T *row = dout + (size_t)rows[min(i + u, len - 1)] * E;
#pragma unroll
            for (int k = 0; k < SUM_COLS; k++) x[u][k] = (float)row[min(e0 + k * SUM_THREADS, E - 1)];
        }
#pragma unroll
        for (int u = 0; u < SUM_ROWS; u++)
#pragma unroll
            for (int k = 0; k < SUM_COLS; k++)
                if (i + u < len) acc[k] += x[u][k];
    }
#pragma unroll
    for (int k = 0; k < SUM_COLS; k++)
        if (e0 + k * SUM_THREADS < E) part[(size_t)r * E + e0 + k * SUM_THREADS] = acc[k];
}

// dtable[v][e] += row v's run sums in run order, for the rows that occur.
__global__ void embed_add_kernel(real *dtable, const real *part, const int *first, int E) {
    const int v = blockIdx.y, e = blockIdx.x * blockDim.x + threadIdx.x, r1 = first[v + 1];
    if (e >= E || first[v] == r1) return;
    float s = dtable[(size_t)v * E + e];
    for (int r = first[v]; r < r1; r++) s += part[(size_t)r * E + e];
    dtable[(size_t)v * E + e] = s;
}

// Scratch (SCRATCH_EMBED): runs[bound], first[SW_VOCAB + 1], perm[N], then (16-byte aligned)
// part[bound][E]. dout is read once, by the run sums: near HBM bandwidth for wide E.
void embed_bwd_cuda(real *dtable, const real *dout, const int *tok, int N, int E) {
    if (N <= 0 || E <= 0) return;
    const int bound = N / SW_EMBED_RUN + min(N, SW_VOCAB);  // >= the sum over v of ceil(count / RUN)
    const size_t head = ((2 * (size_t)bound + SW_VOCAB + 1 + N) * sizeof(int) + 15) / 16 * 16;
    char *s = (char *)cuda_scratch(SCRATCH_EMBED, head + sizeof(real) * (size_t)bound * E);
    EmbedPlan p = {(int2 *)s, (int *)s + 2 * bound, (int *)s + 2 * bound + SW_VOCAB + 1};
    real *part = (real *)(s + head);
    embed_plan_kernel<<<1, PLAN_THREADS, 0, g_cuda.stream>>>(p, tok, N);
    LAUNCH_CHECK();
    const dim3 grid(bound, cdiv(E, SUM_THREADS * SUM_COLS));
    if (const bf16 *db = twin_in(dout, (size_t)N * E))  // the engine may write dz in bf16 only
        embed_run_sum_kernel<<<grid, SUM_THREADS, 0, g_cuda.stream>>>(part, db, p, E);
    else
        embed_run_sum_kernel<<<grid, SUM_THREADS, 0, g_cuda.stream>>>(part, dout, p, E);
    LAUNCH_CHECK();
    embed_add_kernel<<<dim3(cdiv(E, 256), SW_VOCAB), 256, 0, g_cuda.stream>>>(dtable, part, p.first, E);
    LAUNCH_CHECK();
}
