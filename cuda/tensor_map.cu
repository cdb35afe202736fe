// tensor_map.cu: 2-D tensor maps for the bulk tensor copy engine (bulk.cuh tensor_load_2d),
// encoded by the driver's entry point (the program links only the runtime).
#include "bulk.cuh"
#include "common.cuh"

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

CUtensorMap tensor_map_2d(const void *p, CUtensorMapDataType type, int rows, int cols, long ld, int box_cols, int box_rows,
                          CUtensorMapSwizzle swizzle) {
    CUtensorMap m;
    const size_t el = type == CU_TENSOR_MAP_DATA_TYPE_FLOAT32 ? 4 : 2;
    const cuuint64_t dims[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, strides[1] = {(cuuint64_t)ld * el};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows}, estride[2] = {1, 1};
    CUresult r = tensor_map_encoder()(&m, type, 2, (void *)p, dims, strides, box, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      swizzle, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        die("internal: cuTensorMapEncodeTiled failed (%d) for [%d, %d] (row pitch %ld) at %p", (int)r, rows, cols, ld, p);
    return m;
}
