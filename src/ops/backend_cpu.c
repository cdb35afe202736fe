// backend_cpu.c: the CPU reference backend table (operations live in *_cpu.c).
#include "ops/backend.h"
#include <stdlib.h>
#include <string.h>

static void *cpu_alloc(size_t bytes) { return xcalloc(1, bytes); }
static void cpu_free(void *p) { free(p); }
static void cpu_copy(void *dst, const void *src, size_t bytes) { if (bytes) memmove(dst, src, bytes); }
static void cpu_zero(void *p, size_t bytes) { if (bytes) memset(p, 0, bytes); }
static void cpu_sync(void) {}
static void cpu_bsmat_upload(BsMat *w) { w->dev = NULL; }
static void cpu_bsmat_release(BsMat *w) { w->dev = NULL; }
static void cpu_register_params(real *params, size_t n) { (void)params; (void)n; }

// Defined in the *_cpu.c files beside this one.
void embed_fwd_cpu(real *out, const real *table, const int *tok, int N, int E);
void embed_bwd_cpu(real *dtable, const real *dout, const int *tok, int N, int E);
void matmul_fwd_cpu(real *y, const real *x, const real *W, const real *bias, int N, int C, int R, int acc);
void matmul_bwd_cpu(real *dx, real *dW, real *dbias, const real *dy, const real *x, const real *W, int N, int C, int R);
void bsmm_fwd_cpu(real *y, const real *x, const BsMat *w, const real *vals, int N, int acc);
void bsmm_bwd_data_cpu(real *dx, const real *dy, const BsMat *w, const real *vals, int N, int acc);
void bsmm_bwd_weight_cpu(real *dvals, const real *dy, const real *x, const BsMat *w, int N);
void lstm_fwd_cpu(real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                  const real *bias, const real *ln_gain, int B, int H);
void lstm_bwd_cpu(real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh, const real *dc,
                  const real *act, const real *c, const real *c_prev, const real *z, const real *lnstat,
                  const real *ln_gain, int B, int H);
void layernorm_fwd_cpu(real *y, real *stat, const real *x, const real *gain, const real *bias, int N, int C);
void layernorm_bwd_cpu(real *dx, real *dgain, real *dbias, const real *dy, const real *x, const real *stat,
                       const real *gain, int N, int C);
void norm_act_fwd_cpu(real *u, real *s, real *stat, const real *x, const real *gain, const real *bias, const real *mul,
                      const real *add, int N, int C);
void mul_bwd_cpu(real *da, real *db, const real *dy, const real *a, const real *b, size_t n);
void relu_bwd_cpu(real *dx, const real *dy, const real *y, size_t n);
void gather_blocks_cpu(real *dst, const real *src, const int *from, int n, int bb);
void dense_grad_cpu(real *dW, const real *dy, int ldy, int c0, const real *x, int N, int C, int R);
void block_sumsq_cpu(real *sq, const real *W, int R, int C, int bs);
void softmax_xent_cpu(real *loss, real *dlogits, const real *logits, const int *target, int N, int V, real dscale);
void adam_cpu(real *p, const real *g, real *m, real *v, size_t n, AdamArgs a);
double sumsq_cpu(const real *x, size_t n);
void axpy_cpu(real *y, const real *x, real alpha, size_t n);
void ema_cpu(real *avg, const real *p, real decay, size_t n);
void dyn_update_cpu(real *p, const real *g, const real *p0, const real *rms, size_t n, DynArgs a);
void sq_acc_cpu(double *acc, const real *g, size_t n);

static const Backend cpu = {
    .name = "cpu",
    .alloc = cpu_alloc, .free = cpu_free, .to_device = cpu_copy, .to_host = cpu_copy,
    .copy = cpu_copy, .zero = cpu_zero, .sync = cpu_sync,
    .bsmat_upload = cpu_bsmat_upload, .bsmat_release = cpu_bsmat_release,
    .register_params = cpu_register_params,
    .embed_fwd = embed_fwd_cpu, .embed_bwd = embed_bwd_cpu,
    .matmul_fwd = matmul_fwd_cpu, .matmul_bwd = matmul_bwd_cpu,
    .bsmm_fwd = bsmm_fwd_cpu, .bsmm_bwd_data = bsmm_bwd_data_cpu, .bsmm_bwd_weight = bsmm_bwd_weight_cpu,
    .lstm_fwd = lstm_fwd_cpu, .lstm_bwd = lstm_bwd_cpu,
    .layernorm_fwd = layernorm_fwd_cpu, .layernorm_bwd = layernorm_bwd_cpu,
    .norm_act_fwd = norm_act_fwd_cpu, .mul_bwd = mul_bwd_cpu, .relu_bwd = relu_bwd_cpu,
    .gather_blocks = gather_blocks_cpu, .dense_grad = dense_grad_cpu, .block_sumsq = block_sumsq_cpu,
    .softmax_xent = softmax_xent_cpu,
    .adam = adam_cpu, .sumsq = sumsq_cpu, .axpy = axpy_cpu, .ema = ema_cpu, .dyn_update = dyn_update_cpu,
    .sq_acc = sq_acc_cpu,
};

const Backend *backend_cpu(void) { return &cpu; }
