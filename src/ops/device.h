// device.h: where the model runs and in what precision; parsed once from text in
// src/model/config.c, passed down as these enums.
#pragma once

typedef enum { DEVICE_CPU, DEVICE_CUDA } Device;
typedef enum { PREC_FP32, PREC_BF16 } Precision;
