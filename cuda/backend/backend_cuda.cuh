// backend_cuda.cuh: the entry points that the CUDA table (backend_cuda.cu) names, one per
// Backend op of backend.h, defined in cuda/ops, cuda/bsmm and cuda/engine (and cuda/base:
// register_params_cuda, keep_lowp_cuda, cu_alloc, cu_free).
#pragma once
#include "bsmm/bsmat_dev.cuh"

// Names and shapes as in backend.h; BF selects bf16 tensor-core math.
void embed_fwd_cuda(real *out, const real *table, const int *tok, int N, int E);  // on g_cuda.stream
void embed_bwd_cuda(real *dtable, const real *dout, const int *tok, int N, int E);
template <bool BF>
void matmul_fwd_cuda(real *y, const real *x, const real *W, const real *bias, int N, int C, int R, int acc);
template <bool BF>
void matmul_bwd_cuda(real *dx, real *dW, real *dbias, const real *dy, const real *x, const real *W,
                     int N, int C, int R);
template <bool BF>
void bsmm_fwd_cuda(real *y, const real *x, const BsMat *w, const real *vals, int N, int acc);
template <bool BF>
void bsmm_bwd_data_cuda(real *dx, const real *dy, const BsMat *w, const real *vals, int N, int acc);
template <bool BF>
void bsmm_bwd_weight_cuda(real *dvals, const real *dy, const real *x, const BsMat *w, int N);
void lstm_fwd_cuda(real *h, real *c, real *act, real *lnstat, const real *z, const real *c_prev,
                   const real *bias, const real *ln_gain, int B, int H);
void lstm_bwd_cuda(real *dz, real *dc_prev, real *dbias, real *dln_gain, const real *dh, const real *dc,
                   const real *act, const real *c, const real *c_prev, const real *z, const real *lnstat,
                   const real *ln_gain, int B, int H);
template <bool BF>
void *seq_create_cuda(SeqArgs *a);  // the recurrent engine (lstm_seq_host.cu)
template <bool BF>
void seq_fwd_cuda(void *s, int T);
template <bool BF>
void seq_bwd_cuda(void *s, int T);
void seq_free_cuda(void *s);
template <bool BF>
void *gen_create_cuda(const GenArgs *a);  // the sampling loop (gen_host.cu)
void gen_run_cuda(void *g, const int *feed, int nfeed, int nsample, uint64_t rng[4], unsigned char *out, float *logits);
void gen_state_cuda(void *g, real *h, real *c);
void gen_free_cuda(void *g);
void gen_route_cuda(void *g, Route *r);
RecurPath seq_route_cuda(void *s);
void replay_cuda(const void *owner, int key, int T, void (*body)(void *), void *ctx);
void replay_forget_cuda(const void *owner);
void layernorm_fwd_cuda(real *y, real *stat, const real *x, const real *gain, const real *bias, int N, int C);
void layernorm_bwd_cuda(real *dx, real *dgain, real *dbias, const real *dy, const real *x, const real *stat,
                        const real *gain, int N, int C);
void norm_act_fwd_cuda(real *u, real *s, real *stat, const real *x, const real *gain, const real *bias, const real *mul,
                       const real *add, int N, int C);
void mul_bwd_cuda(real *da, real *db, const real *dy, const real *a, const real *b, size_t n);
void relu_bwd_cuda(real *dx, const real *dy, const real *y, size_t n);
void gather_blocks_cuda(real *dst, const real *src, const int *from, int n, int bb);
template <bool BF>
void dense_grad_cuda(real *dW, const real *dy, int ldy, int c0, const real *x, int N, int C, int R);
void block_sumsq_cuda(real *sq, const real *W, int R, int C, int bs);
void softmax_xent_cuda(real *loss, real *dlogits, const real *logits, const int *target, int N, int V, real dscale);
void adam_cuda(real *p, const real *g, real *m, real *v, size_t n, AdamArgs a);
double sumsq_cuda(const real *x, size_t n);
void axpy_cuda(real *y, const real *x, real alpha, size_t n);
void ema_cuda(real *avg, const real *p, real decay, size_t n);
void dyn_update_cuda(real *p, const real *g, const real *p0, const real *rms, size_t n, DynArgs a);
void sq_acc_cuda(double *acc, const real *g, size_t n);

void bsmat_upload_cuda(BsMat *w);   // bsmat_dev.cu
void bsmat_release_cuda(BsMat *w);
