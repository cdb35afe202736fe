// host_device.h: SW_HOST_DEVICE marks the element formulas that the CPU reference and the
// CUDA kernels share (adam_step.h, dyn_update.h).
#pragma once

#ifdef __CUDACC__
#define SW_HOST_DEVICE __host__ __device__
#else
#define SW_HOST_DEVICE
#endif
