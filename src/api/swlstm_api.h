// swlstm_api.h: the plain C ABI of libswlstm.so (`make python`), which python/swlstm loads
// with ctypes: the block-sparse product and its gradients on the CPU and CUDA backends, masks
// with their graph statistics, and checkpoint reading. Plain types only. Every call that can
// fail returns SWLSTM_OK or an error code; swlstm_last_error() then says why (per thread).
// Bad input is an error, never an exit: the library's own fatal errors come back as
// SWLSTM_ERR_FAILED (the memory of that call may leak).
#pragma once
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif

enum { SWLSTM_OK = 0, SWLSTM_ERR_ARG = 1, SWLSTM_ERR_FAILED = 2, SWLSTM_ERR_NO_CUDA = 3 };
enum { SWLSTM_CPU = 0, SWLSTM_CUDA = 1 };  // where the pointers of a product live
enum { SWLSTM_F32 = 0, SWLSTM_BF16 = 1 };  // element types of a product's inputs and outputs

const char *swlstm_last_error(void);
int swlstm_abi_version(void);
int swlstm_has_cuda(void);  // 1 when built with the CUDA backend (a GPU may still be missing)

// ---- masks (src/sparse/mask.h): desc "dense", "random_<density>", "ba_<m>", "ws_<k>_<p>" ----
// out[r*nc + c] = 1 where block (r, c) is stored, nr*nc bytes: the blocks `swlstm mask` draws.
int swlstm_mask(const char *desc, int nr, int nc, uint64_t seed, uint8_t *out);
typedef struct {
    int64_t blocks;
    double density;
    int32_t deg_min, deg_max;
    double deg_mean, avg_path, clustering;
} swlstm_mask_stats;
int swlstm_mask_stats_of(const uint8_t *m, int nr, int nc, swlstm_mask_stats *out);

// ---- a block layout of a weight W [nr*bs, nc*bs]: its stored blocks in block-row order ----
typedef struct BsMat swlstm_layout;
// Every block row and column must hold a block; bs is 8, 16 or 32.
int swlstm_layout_new(const uint8_t *m, int nr, int nc, int bs, swlstm_layout **out);
void swlstm_layout_free(swlstm_layout *l);
// Shape (rows, cols, bs, stored blocks) and the CSR indices: row_ptr [rows/bs + 1],
// col_idx [nnzb]; block k holds vals[k*bs*bs + i*bs + j] = W[r*bs + i][col_idx[k]*bs + j].
void swlstm_layout_shape(const swlstm_layout *l, int *rows, int *cols, int *bs, int *nnzb);
void swlstm_layout_indices(const swlstm_layout *l, int32_t *row_ptr, int32_t *col_idx);

// ---- products: W from l and vals [nnzb, bs, bs] ----
// On SWLSTM_CUDA the pointers are device memory of the current device, 16-byte aligned, and
// the kernels run on `stream` (a cudaStream_t; NULL the legacy default stream). dtype is the
// inputs' type (x, dy, vals): BF16 runs bf16 tensor-core math; the sums are fp32 either way.
// out_dtype is y's or dx's: BF16 stores each fp32 sum rounded once to bf16 (no conversion pass
// after the product), and accumulate then adds the sum to y's value widened to fp32 and rounds
// the total once. The CPU takes and writes F32 only.
// y[N, rows] (= or += when accumulate) x[N, cols] W^T
int swlstm_fwd(const swlstm_layout *l, int device, int dtype, int out_dtype, void *y, const void *x,
               const void *vals, int N, int accumulate, void *stream);
// dx[N, cols] (= or +=) dy[N, rows] W
int swlstm_bwd_data(const swlstm_layout *l, int device, int dtype, int out_dtype, void *dx, const void *dy,
                    const void *vals, int N, int accumulate, void *stream);
// dvals += dy^T x on the stored blocks, fp32 whatever dtype (a gradient summed over calls in
// bf16 would lose the small terms)
int swlstm_bwd_weight(const swlstm_layout *l, int device, int dtype, float *dvals, const void *dy, const void *x,
                      int N, void *stream);

// ---- checkpoints (`swlstm train`): the model's tensors, as `swlstm export` names them ----
typedef struct swlstm_ckpt swlstm_ckpt;
int swlstm_ckpt_open(const char *path, swlstm_ckpt **out);
void swlstm_ckpt_close(swlstm_ckpt *c);
const char *swlstm_ckpt_config(const swlstm_ckpt *c);  // the config text
// The config as the library reads it (every key, defaults where the text has none): one JSON
// object, numbers and booleans typed, choices and paths as strings.
const char *swlstm_ckpt_config_json(const swlstm_ckpt *c);
int64_t swlstm_ckpt_step(const swlstm_ckpt *c);        // optimizer steps taken, -1 if not stored
int swlstm_ckpt_ntensors(const swlstm_ckpt *c);
// Tensor i: a dense one [shape[0], shape[1]] (ndim 2) or a vector (ndim 1) with *layout NULL,
// or a block-sparse one (ndim 3: [nnzb, bs, bs], its layout in *layout, owned by c). values:
// the weights; ema: their moving average, NULL when the checkpoint has none. Host memory
// owned by c.
int swlstm_ckpt_tensor(const swlstm_ckpt *c, int i, const char **name, int *ndim, int64_t *shape,
                       const float **values, const float **ema, const swlstm_layout **layout);

#ifdef __cplusplus
}
#endif
