// opts.c: one option syntax for every verb. main() hands each verb its arguments with every
// "--opt=value" rewritten as "--opt" "value" and every '_' of an option's name as '-'
// ("--batch_size" is "--batch-size"); a verb's parser then never needs to know which of the
// forms the user typed.
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
        size_t name_end = eq ? (size_t)(eq - argv[i]) : len - 1;
        for (size_t k = 2; !strncmp(argv[i], "--", 2) && k < name_end; k++)
            if (text[k] == '_') text[k] = '-';
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
