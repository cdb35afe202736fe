// twins_stale.h: what the GPU tests check of cuda/base/twins.cu (twins_stale.cu, C-callable).
#pragma once
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif

// Values, over every twin that keep_lowp made, that differ from their fp32 buffer rounded to
// bf16, and over every slab image deemed current (twin_slab_in would serve it) the values
// that differ from theirs: 0 when every op that wrote a twinned buffer kept its twin current.
size_t twins_stale(void);

#ifdef __cplusplus
}
#endif
