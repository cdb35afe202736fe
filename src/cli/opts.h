// opts.h: one option syntax for every verb: "--opt value" and "--opt=value" alike, and
// '_' and '-' alike in an option's name.
#pragma once

// A copy of argv (argc entries and a NULL) in which each "--opt=value" became the two
// entries "--opt" "value", so that a verb parses only the "--opt value" form, and each
// option's name has '-' for '_' (config overrides map them back to keys). *out_argc gets
// the new count. One allocation: free() it.
char **opts_split(int argc, char **argv, int *out_argc);
