// optim.h: learning-rate schedules and global-norm clipping (host side). Adam itself is a
// backend operation (adam_cpu.c, cuda/ops/adam.cu).
#pragma once
#include "model/config.h"
#ifdef __cplusplus
extern "C" {
#endif

// Linear warmup from 0 over warmup steps, then decay
// from base to min_lr at step total. step is 1-based (the step about to be taken).
double lr_at(LrSchedule kind, double base, double min_lr, long warmup, long total, long step);
// Factor that brings grad_norm down to clip (1 when clip <= 0 or norm <= clip).
double clip_scale(double grad_norm, double clip);

#ifdef __cplusplus
}
#endif
