/*
 * xhloc.h - what the files of the xhloc driver share.
 */
#ifndef XHLOC_CMD_XHLOC_H
#define XHLOC_CMD_XHLOC_H

#include "../../lib/support/support.h"

/*
 * output.c
 */

/* Where the driver's text goes: streamed into a temporary that
 * output_commit turns into the output (rename over the -o file, or a copy to
 * stdout) once everything succeeded; output_abort throws it away. */
typedef struct Output {
  FILE *f;                        /* write here */
  const char *path;               /* -o FILE; NULL or "-" for stdout */
  char *tmp_path;                 /* temporary beside FILE (NULL: stdout spool) */
} Output;

bool output_open(Output *o, const char *path, Diag *d);
bool output_commit(Output *o, Diag *d);
void output_abort(Output *o);

#endif
