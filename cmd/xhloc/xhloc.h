/*
 * xhloc.h - what the files of the xhloc driver share.
 */
#ifndef XHLOC_CMD_XHLOC_H
#define XHLOC_CMD_XHLOC_H

#include "../../lib/support/support.h"

/*
 * output.c
 */

/* Writes len bytes of data to path, or to stdout when path is NULL or "-".
 * A file is written to a temporary in the same directory and renamed over
 * path only once complete, so an error never leaves a partial file.  On
 * failure returns false with the reason in d. */
bool write_output(const char *path, const char *data, size_t len, Diag *d);

#endif
