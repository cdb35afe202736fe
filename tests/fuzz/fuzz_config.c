// fuzz_config.c: config text, then NUL-separated --key=value overrides; a config that
// validates must survive config_to_text -> config_from_text unchanged.
#include <stdlib.h>
#include <string.h>
#include "model/config.h"
#include "harness.h"

FUZZ_TARGET(config) {
    char *buf = fuzz_str(data, size), *args[16];
    int nargs = 0;
    for (char *p = buf + strlen(buf); p < buf + size && nargs < 16; p += strlen(p)) args[nargs++] = ++p;
    FUZZ_RUN {
        Config c, back;
        config_defaults(&c);
        config_from_text(&c, buf, "fuzz.cfg");
        config_apply_overrides(&c, nargs, args);
        config_validate(&c);
        char *text = config_to_text(&c);
        config_defaults(&back);
        config_from_text(&back, text, "round trip");
        free(text);
        if (memcmp(&c, &back, sizeof c)) abort();
    }
    free(buf);
    return 0;
}
