// fuzz_ckpt.c: a checkpoint file through everything that reads one: the container, the
// config, masks and weights (model_load), the training state and carried state (--resume)
// and the mask statistics of `info`.
#include <stdlib.h>
#include "backend.h"
#include "harness.h"
#include "model_io.h"

static void load_state(Model *m, const Ckpt *c) {
    TrainState ts;
    if (!ckpt_train_state(c, &ts)) return;
    real *am = m->be->alloc(m->nparams * sizeof(real)), *av = m->be->alloc(m->nparams * sizeof(real));
    Acts *a = acts_create(m, 1, 1);
    model_load_train_state(m, c, &ts, am, av, a, 0, m->cfg.batch_size);
    acts_free(m, a);
    m->be->free(am);
    m->be->free(av);
}

FUZZ_TARGET(ckpt) {
    const char *path = fuzz_file(data, size, ".ckpt");
    FUZZ_RUN {
        Model *m = model_load(path, "cpu", NULL);
        Ckpt c;
        ckpt_read(&c, path);
        load_state(m, &c);
        Mask masks[2 * SW_MAX_LAYERS];
        int n = ckpt_masks(&c, masks, 2 * SW_MAX_LAYERS);
        for (int i = 0; i < n; i++) {
            if (masks[i].nr) mask_stats(&masks[i]);
            mask_free(&masks[i]);
        }
        ckpt_close(&c);
        model_free(m);
    }
    return 0;
}
