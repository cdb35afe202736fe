// opts.c: one option syntax for every verb. main() hands each verb its arguments with every
// "--opt=value" rewritten as "--opt" "value"; a verb's parser then never needs to know which
// of the two forms the user typed.
#include "cli/opts.h"
#include <stdlib.h>
#include <string.h>
#include "base/common.h"

// "--name=value" with a non-empty name: the '=' that splits it, else NULL.
static const char *split_point(const char *a) {
    const char *eq = strchr(a, '=');
    return strncmp(a, "--", 2) || !eq || eq == a + 2 ? NULL : eq;
}

char **opts_split(int argc, char **argv, int *out_argc) {
    size_t bytes = 0;
    for (int i = 0; i < argc; i++) bytes += strlen(argv[i]) + 2;
    char **out = xmalloc(sizeof(char *) * (2 * (size_t)argc + 1) + bytes);
    char *text = (char *)(out + 2 * argc + 1);
    int n = 0;
    for (int i = 0; i < argc; i++) {
        const char *eq = split_point(argv[i]);
        size_t len = strlen(argv[i]) + 1;
        memcpy(text, argv[i], len);
        out[n++] = text;
        if (eq) {
            text[eq - argv[i]] = 0;
            out[n++] = text + (eq - argv[i]) + 1;
        }
        text += len;
    }
    out[n] = NULL;
    *out_argc = n;
    return out;
}
