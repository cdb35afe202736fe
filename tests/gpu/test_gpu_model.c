// test_gpu_model.c: the whole model on the GPU against the CPU: the same config and batch give
// the same loss and parameter gradients (fp32 and bf16), 50 Adam steps track the CPU loss
// curve, and two GPU runs give identical bits.
#include "gpu_train.h"

TEST(gpu_model_fp32_matches_cpu) { check_grads(shapes, NSHAPES, "fp32", 1e-5, 1e-4, 0); }
TEST(gpu_model_bf16_matches_cpu) { check_grads(shapes, NSHAPES, "bf16", 1e-2, 1e-2, 0); }

TEST(gpu_model_deterministic) {
    const char *precs[] = {"fp32", "bf16"};
    for (int p = 0; p < 2; p++) {
        const Backend *gpu = cuda_named(precs[p]);
        Model *m = make_model(&shapes[1], gpu);
        Batch b = batch_make(7, 5, m->H, 5);
        Acts *a = acts_create(m, b.B, b.T);
        double l1 = fwd_bwd(m, a, &b);
        real *g1 = h_from(gpu, m->grads, m->nparams);
        double l2 = fwd_bwd(m, a, &b);
        real *g2 = h_from(gpu, m->grads, m->nparams);
        int same = l1 == l2 && memcmp(g1, g2, sizeof(real) * m->nparams) == 0;
        free(g1); free(g2);
        acts_free(m, a); model_free(m); batch_free(&b);
        CHECK_MSG(same, "%s: two identical steps gave different loss or gradient bits", precs[p]);
    }
}

// fp32: the same arithmetic in another order; 1e-3 relative leaves room for 50 steps of drift.
// bf16: weights and activations rounded to 8 bits of mantissa in every product.
TEST(gpu_train_fp32_tracks_cpu) { check_curve(&shapes[0], 50, "fp32", 1e-3); }
TEST(gpu_train_bf16_tracks_cpu) { check_curve(&shapes[0], 50, "bf16", 3e-2); }
