// tensor_map.cu: 2-D and 3-D tensor maps for the bulk tensor copy engine (bulk.cuh tensor_load_2d),
// encoded by the driver's entry point (the program links only the runtime).
#include "bsmm/bulk.cuh"
#include "base/check.cuh"

static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder(void) {
    static PFN_cuTensorMapEncodeTiled_v12000 fn;
    if (!fn) {
        void *f = NULL;
        cudaDriverEntryPointQueryResult q;
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || !f)
            die("cuTensorMapEncodeTiled not found in the CUDA driver (needs driver 12.0 or newer)");
        fn = (PFN_cuTensorMapEncodeTiled_v12000)f;
    }
    return fn;
}

// n = 2 or 3 dimensions, dims[0] the contiguous one; pitch[i]: bytes from one index of
// dimension i + 1 to the next.
static CUtensorMap tensor_map(const void *p, CUtensorMapDataType type, int n, const cuuint64_t *dims,
                              const cuuint64_t *pitch, const cuuint32_t *box, CUtensorMapSwizzle swizzle) {
    CUtensorMap m;
    const cuuint32_t estride[3] = {1, 1, 1};
    CUresult r = tensor_map_encoder()(&m, type, (cuuint32_t)n, (void *)p, dims, pitch, box, estride,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        die("internal: cuTensorMapEncodeTiled failed (%d) for %d-D [%llu, %llu] (pitch %llu bytes) at %p", (int)r, n,
            (unsigned long long)dims[n - 1], (unsigned long long)dims[0], (unsigned long long)pitch[0], p);
    return m;
}

CUtensorMap tensor_map_2d(const void *p, CUtensorMapDataType type, int rows, int cols, long ld, int box_cols, int box_rows,
                          CUtensorMapSwizzle swizzle) {
    const size_t el = type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ? 4 : 2;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, pitch[1] = {(cuuint64_t)ld * el};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows};
    return tensor_map(p, type, 2, dims, pitch, box, swizzle);
}

CUtensorMap tensor_map_blocks(const void *w, long nnzb) {
    return tensor_map_2d(w, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, (int)(nnzb * 32), 32, 32, 32, 32, CU_TENSOR_MAP_SWIZZLE_64B);
}

CUtensorMap tensor_map_3d_bf16(const void *p, int planes, int rows, int cols, int box_cols, int box_rows,
                               CUtensorMapSwizzle swizzle) {
    const cuuint64_t dims[3] = {(cuuint64_t)cols, (cuuint64_t)rows, (cuuint64_t)planes};
    const cuuint64_t pitch[2] = {(cuuint64_t)cols * 2, (cuuint64_t)rows * cols * 2};
    const cuuint32_t box[3] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows, 1};
    return tensor_map(p, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, dims, pitch, box, swizzle);
}
