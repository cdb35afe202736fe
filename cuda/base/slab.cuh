// slab.cuh: the 8 KB slabs in which the wgmma kernels (cuda/wgmma) read an activation matrix
// [N, K], bf16: slab (k, tile) holds rows 128 tile .. 128 tile + 127 of columns 32 k .. 32 k + 31,
// slab k * ntiles + tile of the image, each row 64 bytes in the 64-byte swizzle of a K-major
// wgmma operand (the copy engine's CU_TENSOR_MAP_SWIZZLE_64B): byte o of a row-major image lands
// at wg_sw64(o), its 16-byte chunk (bits 4-5) xor'ed with bits 7-8. Images start 512-byte
// aligned. An op that writes such a matrix can write its image too (SlabOut), sparing the
// product a pass that packs it (twins.cu twin_slab_out).
#pragma once
#include <stdint.h>
#include <cuda_bf16.h>

constexpr int SLAB_ROWS = 128, SLAB_BYTES = SLAB_ROWS * 32 * 2;

__host__ __device__ inline uint32_t wg_sw64(uint32_t o) { return o ^ (((o >> 7) & 3) << 4); }
// Element (r, k) of a swizzled image of rows of 32 bf16 (row r, column k), in bytes.
__host__ __device__ inline uint32_t wg_img_at(int r, int k) { return wg_sw64((uint32_t)(r * 64 + k * 2)); }
// Element (row, col) of an image of ntiles row tiles, in bytes.
__host__ __device__ inline long slab_at(long row, int col, int ntiles) {
    return ((long)(col / 32) * ntiles + row / SLAB_ROWS) * SLAB_BYTES + wg_img_at((int)(row % SLAB_ROWS), col % 32);
}

// Where a writer puts the image of its output beside the output (pk NULL: no image).
struct SlabOut {
    unsigned char *pk;
    int ntiles;
    __device__ void put(long row, int col, float v) const {
        if (pk) *(__nv_bfloat16 *)(pk + slab_at(row, col, ntiles)) = __float2bfloat16_rn(v);
    }
};
