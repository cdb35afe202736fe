// optim.c: learning-rate schedules and global-norm clipping (host side).
#include "train/optim.h"
#include "base/common.h"
#include <math.h>

double lr_at(LrSchedule kind, double base, double min_lr, long warmup, long total, long step) {
    if (warmup > 0 && step <= warmup) return base * (double)step / (double)warmup;
    if (kind == LR_CONSTANT) return base;
    long span = total - warmup > 1 ? total - warmup : 1;
    double progress = (double)(step - warmup) / (double)span;
    progress = progress < 0 ? 0 : progress > 1 ? 1 : progress;
    if (kind == LR_COSINE) return min_lr + (base - min_lr) * 0.5 * (1.0 + cos(M_PI * progress));
    return base + (min_lr - base) * progress;
}

double clip_scale(double grad_norm, double clip) {
    if (clip <= 0 || grad_norm <= clip) return 1.0;
    return clip / (grad_norm + 1e-6);
}
