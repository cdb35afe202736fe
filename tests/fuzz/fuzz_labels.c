// fuzz_labels.c: text label files (one integer per line), as `probe --labels L.txt` reads them.
#include <stdlib.h>
#include "harness.h"
#include "io/npy.h"

FUZZ_TARGET(labels) {
    const char *path = fuzz_file(data, size, ".txt");
    FUZZ_RUN {
        size_t n;
        free(labels_read(path, &n));
    }
    return 0;
}
