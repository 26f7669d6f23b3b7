/*
 * make_test_artifact.c - writes small compiled artifacts for xhlo-run's
 * command-line tests (tests/check-xhlo-run-thunks.sh), without xhloc:
 *
 *   make_test_artifact KIND TARGET PREFIX
 *
 * writes PREFIX.thunks for TARGET ("host" or "sm_90"), naming the kernel
 * file that must already be there (PREFIX.host.so or PREFIX.ptx; its
 * checksum goes into the artifact).  The kernels are the test's own
 * (check-xhlo-run-thunks.sh writes them in C and PTX):
 *   add4(a, b, out)      out = a + b, f32[4] (host: 4 work units, one per
 *                        element; the other host kernels have one)
 *   copy24(in, out)      copies 24 bytes
 *   lt(c, n, pred)       pred = c < n, s32 scalars
 *   inc(c, out)          out = c + 1
 * KINDs, each with the original HLO it stands for:
 *   add     f32[4] add of two parameters
 *   badsub  the add kernel, but an original HLO that subtracts (so
 *           --compare must find a mismatch)
 *   loop    while (c < n) c += 1 from 0, returning c
 *   layout  a column-major f32[2,3]{0,1} parameter transposed to f32[3,2]
 *           (the kernel copies bytes; the layouts do the transposing)
 *   tuple   (p, broadcast(1.5)) for an f32[4] p: a copy and a memset
 *   needcpu the add, recorded as needing a CPU feature no CPU has
 * and any KIND with "-cb" after it: the same with every run of thunks
 * outside control flow in a command buffer (cmdbuf_convert, minimum 1).
 * Exit 0, or 1 with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../lib/runtime/thunks.h"

static Artifact *A;

static int add_alloc(int64_t size, unsigned flags) {
  BufAlloc *al = &A->allocs[A->nallocs];
  al->size = size;
  al->flags = flags;
  al->param_number = -1;
  return A->nallocs++;
}

static BufSlice sl(int alloc, int64_t offset, int64_t size) {
  return (BufSlice){alloc, offset, size};
}

static int param(const char *shape, int64_t size) {
  int k = add_alloc(size, ALLOC_PARAMETER);
  A->allocs[k].param_number = A->nparams;
  A->allocs[k].param_shape = (char *)shape;
  A->params[A->nparams++] = (ArtLeaf){sl(k, 0, size), (char *)shape};
  return k;
}

static void output(BufSlice s, const char *shape) {
  A->allocs[s.alloc].flags |= ALLOC_OUTPUT;
  A->allocs[s.alloc].output_shape = A->result_shape;
  A->outputs[A->noutputs++] = (ArtLeaf){s, (char *)shape};
}

static ThunkSeq *new_seq(void) {
  ThunkSeq *s = ARENA_NEW(A->arena, ThunkSeq);
  s->thunks = ARENA_ARRAY(A->arena, Thunk, 8);
  return s;
}

static Thunk *push(ThunkSeq *s, ThunkKind kind, const char *ann) {
  Thunk *t = &s->thunks[s->n++];
  t->kind = kind;
  t->annotation = (char *)ann;
  t->trip_count = -1;
  return t;
}

/* A kernel thunk; the last argument is the one written.  GPU launches use
 * one block of `threads` threads. */
static void kernel(ThunkSeq *s, const char *name, int threads, int nargs,
                   const BufSlice *args) {
  Thunk *t = push(s, THUNK_KERNEL, name);
  t->kernel_name = (char *)name;
  t->nargs = nargs;
  t->args = arena_memdup(A->arena, args, sizeof *args * (size_t)nargs);
  t->written = ARENA_ARRAY(A->arena, bool, nargs);
  t->written[nargs - 1] = true;
  for (int k = 0; k < 3; k++) t->grid[k] = t->block[k] = 1;
  /* a GPU thread per element, or a host work unit per element */
  if (strcmp(A->target, "host") == 0)
    t->grid[0] = (uint32_t)threads;
  else
    t->block[0] = (uint32_t)threads;
}

static const char add_hlo[] =
  "HloModule add\n\nENTRY e {\n  p0 = f32[4] parameter(0)\n  p1 = f32[4] parameter(1)\n"
  "  ROOT r = f32[4] add(p0, p1)\n}\n";
static const char sub_hlo[] =
  "HloModule badsub\n\nENTRY e {\n  p0 = f32[4] parameter(0)\n  p1 = f32[4] parameter(1)\n"
  "  ROOT r = f32[4] subtract(p0, p1)\n}\n";
static const char loop_hlo[] =
  "HloModule loop\n\n"
  "cond {\n  p = (s32[], s32[]) parameter(0)\n  c = s32[] get-tuple-element(p), index=0\n"
  "  n = s32[] get-tuple-element(p), index=1\n"
  "  ROOT lt = pred[] compare(c, n), direction=LT\n}\n\n"
  "body {\n  p = (s32[], s32[]) parameter(0)\n  c = s32[] get-tuple-element(p), index=0\n"
  "  n = s32[] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n"
  "  c1 = s32[] add(c, one)\n  ROOT t = (s32[], s32[]) tuple(c1, n)\n}\n\n"
  "ENTRY e {\n  n = s32[] parameter(0)\n  zero = s32[] constant(0)\n"
  "  init = (s32[], s32[]) tuple(zero, n)\n"
  "  w = (s32[], s32[]) while(init), condition=cond, body=body\n"
  "  ROOT r = s32[] get-tuple-element(w), index=0\n}\n";
static const char layout_hlo[] =
  "HloModule layout\n\nENTRY e {\n  p = f32[2,3]{0,1} parameter(0)\n"
  "  ROOT t = f32[3,2]{1,0} transpose(p), dimensions={1,0}\n}\n";
static const char tuple_hlo[] =
  "HloModule tuple\n\nENTRY e {\n  p = f32[4] parameter(0)\n  c = f32[] constant(1.5)\n"
  "  b = f32[4] broadcast(c), dimensions={}\n  ROOT t = (f32[4], f32[4]) tuple(p, b)\n}\n";

static bool build(const char *kind) {
  if (strcmp(kind, "add") == 0 || strcmp(kind, "badsub") == 0 ||
      strcmp(kind, "needcpu") == 0) {
    A->result_shape = "f32[4]{0}";
    int a = param("f32[4]{0}", 16), b = param("f32[4]{0}", 16);
    int o = add_alloc(16, 0);
    kernel(&A->entry, "add4", 4, 3, (BufSlice[]){sl(a, 0, 16), sl(b, 0, 16), sl(o, 0, 16)});
    output(sl(o, 0, 16), "f32[4]{0}");
    A->original_hlo = (char *)(kind[0] == 'b' ? sub_hlo : add_hlo);
    if (kind[0] == 'n')           /* a feature no CPU has */
      A->host_features = "sse2,xhlo-test-feature";
  } else if (strcmp(kind, "loop") == 0) {
    A->result_shape = "s32[]";
    int n = param("s32[]", 4);
    int t = add_alloc(12, ALLOC_TEMP);    /* counter, next, pred */
    Thunk *m = push(&A->entry, THUNK_MEMSET32, "zero");
    m->dst = sl(t, 0, 4);
    Thunk *w = push(&A->entry, THUNK_WHILE, "w");
    w->cond = new_seq();
    w->body = new_seq();
    w->cond_result = sl(t, 8, 1);
    kernel(w->cond, "lt", 1, 3, (BufSlice[]){sl(t, 0, 4), sl(n, 0, 4), sl(t, 8, 1)});
    kernel(w->body, "inc", 1, 2, (BufSlice[]){sl(t, 0, 4), sl(t, 4, 4)});
    Thunk *c = push(w->body, THUNK_COPY, "c1");
    c->src = sl(t, 4, 4);
    c->dst = sl(t, 0, 4);
    output(sl(t, 0, 4), "s32[]");
    A->original_hlo = (char *)loop_hlo;
  } else if (strcmp(kind, "layout") == 0) {
    A->result_shape = "f32[3,2]{1,0}";
    int p = param("f32[2,3]{0,1}", 24);
    int o = add_alloc(24, 0);
    kernel(&A->entry, "copy24", 1, 2, (BufSlice[]){sl(p, 0, 24), sl(o, 0, 24)});
    output(sl(o, 0, 24), "f32[3,2]{1,0}");
    A->original_hlo = (char *)layout_hlo;
  } else if (strcmp(kind, "tuple") == 0) {
    A->result_shape = "(f32[4]{0}, f32[4]{0})";
    int p = param("f32[4]{0}", 16);
    int o = add_alloc(32, 0);
    Thunk *c = push(&A->entry, THUNK_COPY, "copy");
    c->src = sl(p, 0, 16);
    c->dst = sl(o, 0, 16);
    Thunk *m = push(&A->entry, THUNK_MEMSET32, "b");
    m->dst = sl(o, 16, 16);
    m->memset_value = 0x3fc00000u;  /* 1.5f */
    output(sl(o, 0, 16), "f32[4]{0}");
    output(sl(o, 16, 16), "f32[4]{0}");
    A->original_hlo = (char *)tuple_hlo;
  } else {
    fprintf(stderr, "make_test_artifact: unknown kind '%s'\n", kind);
    return false;
  }
  return true;
}

static bool read_file(const char *path, StrBuf *b) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_putn(b, buf, n);
  fclose(f);
  return true;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: make_test_artifact KIND TARGET PREFIX\n");
    return 2;
  }
  const char *kind = argv[1], *target = argv[2], *prefix = argv[3];
  A = artifact_new();
  A->allocs = ARENA_ARRAY(A->arena, BufAlloc, 8);
  A->params = ARENA_ARRAY(A->arena, ArtLeaf, 8);
  A->outputs = ARENA_ARRAY(A->arena, ArtLeaf, 8);
  A->entry.thunks = ARENA_ARRAY(A->arena, Thunk, 8);
  A->module_name = (char *)kind;
  A->target = (char *)target;
  if (strcmp(target, "host") == 0) {
    A->host_cpu = "x86-64";
    A->host_features = "";
  }
  size_t kl = strlen(kind);
  bool cb = kl > 3 && strcmp(kind + kl - 3, "-cb") == 0;
  char *base_kind = strndup(kind, cb ? kl - 3 : kl);
  if (!build(base_kind)) return 1;
  free(base_kind);
  if (cb && cmdbuf_convert(A, CMDBUF_DEFAULT_TYPES, 1) == 0) {
    fprintf(stderr, "make_test_artifact: %s has no thunks for a command buffer\n", kind);
    return 1;
  }

  bool host = strcmp(target, "host") == 0;
  const char *base = strrchr(prefix, '/') ? strrchr(prefix, '/') + 1 : prefix;
  StrBuf kname, kpath, kbytes, out;
  sb_init(&kname);
  sb_init(&kpath);
  sb_init(&kbytes);
  sb_init(&out);
  sb_printf(&kname, "%s%s", base, host ? ".host.so" : ".ptx");
  sb_printf(&kpath, "%s%s", prefix, host ? ".host.so" : ".ptx");
  if (!read_file(kpath.s, &kbytes)) {
    fprintf(stderr, "make_test_artifact: cannot read %s\n", kpath.s);
    return 1;
  }
  A->kernel_file = kname.s;
  A->kernel_checksum = checksum64(kbytes.s ? kbytes.s : "", kbytes.len);
  Diag d = {0};
  if (!artifact_validate(A, &d)) {
    fprintf(stderr, "make_test_artifact: invalid artifact: %s\n", d.msg);
    return 1;
  }
  artifact_serialize(A, &out);
  StrBuf path;
  sb_init(&path);
  sb_printf(&path, "%s.thunks", prefix);
  FILE *f = fopen(path.s, "wb");
  if (!f || fwrite(out.s, 1, out.len, f) != out.len || fclose(f) != 0) {
    fprintf(stderr, "make_test_artifact: cannot write %s\n", path.s);
    return 1;
  }
  sb_free(&path);
  sb_free(&out);
  sb_free(&kbytes);
  sb_free(&kpath);
  sb_free(&kname);
  artifact_free(A);
  return 0;
}
