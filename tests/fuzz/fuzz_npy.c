// fuzz_npy.c: .npy files as feature matrices and as label arrays (`probe` reads both).
#include <stdlib.h>
#include "harness.h"
#include "io/npy.h"

FUZZ_TARGET(npy) {
    const char *path = fuzz_file(data, size, ".npy");
    FUZZ_RUN {
        size_t rows, cols;
        free(npy_read_matrix(path, &rows, &cols));
    }
    FUZZ_RUN {
        size_t n;
        free(labels_read(path, &n));
    }
    return 0;
}
