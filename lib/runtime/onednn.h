/*
 * onednn.h - the host platform's library calls (GEMM and convolution
 * descriptors of libcall.h) through oneDNN, opened with dlopen; see
 * onednn.c.
 */
#ifndef XHLOC_ONEDNN_H
#define XHLOC_ONEDNN_H

#include "platform.h"

typedef struct OneDnn OneDnn;

/* Loads libdnnl.so.2 (o->lib_path's directories first) and sets up its CPU
 * engine and thread count.  NULL with a message naming the library and how
 * to get it. */
OneDnn *onednn_open(const PlatformOptions *o, Diag *d);
void onednn_close(OneDnn *x);         /* NULL is fine */

/* One call on host memory: p[] in GEMM_* / CONV_* order (NULL: absent). */
bool onednn_gemm(OneDnn *x, const GemmDesc *g, void *const p[GEMM_NSLICES],
                 Diag *d);
bool onednn_conv(OneDnn *x, const ConvDesc *c, void *const p[CONV_NSLICES],
                 Diag *d);

#endif
