/*
 * artifact_files.c - the artifact on disk: PREFIX.thunks and the kernel file
 * beside it (PREFIX.ptx, or PREFIX.host.so for --target=host).  Both are
 * written into temporaries in PREFIX's directory and renamed into place only
 * once both are complete, so a failure leaves no new or partial file.
 */
#include "xhloc.h"

#include "../../emitters/codegen.h"
#include "../../lib/runtime/thunks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool write_bytes(const char *path, const char *shown, const void *p,
                        size_t n, Diag *d) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(p, 1, n, f) == n;
  if (f && fclose(f) != 0)
    ok = false;
  if (!ok)
    diag_error(d, (Loc){0}, "cannot write '%s': %s", shown,
               errno ? strerror(errno) : "write error");
  return ok;
}

bool artifact_files_write(Artifact *a, const char *prefix, const StrBuf *ptx,
                          Codegen *cg, PhaseTimes *times, Diag *d) {
  double t0 = clock_seconds();
  StrBuf kpath, tpath, file;
  sb_init(&kpath);
  sb_init(&tpath);
  sb_init(&file);
  sb_printf(&kpath, "%s%s", prefix, ptx ? ".ptx" : ".host.so");
  sb_printf(&tpath, "%s.thunks", prefix);
  char *ktmp = output_temp_beside(kpath.s, ptx ? 0666 : 0777, d);
  char *ttmp = ktmp ? output_temp_beside(tpath.s, 0666, d) : NULL;
  bool ok = ktmp && ttmp;

  /* The kernel file, and its checksum from the bytes as written. */
  SrcFile *kernel = NULL;
  if (ok && ptx)
    ok = write_bytes(ktmp, kpath.s, ptx->s ? ptx->s : "", ptx->len, d);
  else if (ok) {
    /* the shared object's phases are codegen's own */
    phase_since(times, "write the artifact files", t0);
    ok = codegen_host_so(cg, ktmp, d);
    t0 = clock_seconds();
  }
  if (ok) {
    Diag rd = {0};
    kernel = srcfile_read(ktmp, &rd);
    if (!kernel)
      ok = diag_error(d, (Loc){0}, "cannot read back '%s': %s", kpath.s,
                      rd.msg ? rd.msg : "error");
    diag_clear(&rd);
  }
  if (ok) {
    const char *slash = strrchr(kpath.s, '/');
    a->kernel_file = arena_strdup(a->arena, slash ? slash + 1 : kpath.s);
    a->kernel_checksum = checksum64(kernel->text, kernel->len);
    ok = artifact_validate(a, d);
  }
  if (ok) {
    artifact_serialize(a, &file);
    ok = write_bytes(ttmp, tpath.s, file.s ? file.s : "", file.len, d);
  }

  /* Into place: the kernel file first, then the .thunks that names it. */
  if (ok && rename(ktmp, kpath.s) != 0)
    ok = diag_error(d, (Loc){0}, "cannot write '%s': %s", kpath.s,
                    strerror(errno));
  if (ok && rename(ttmp, tpath.s) != 0) {
    ok = diag_error(d, (Loc){0}, "cannot write '%s': %s", tpath.s,
                    strerror(errno));
    unlink(kpath.s);
  }
  if (!ok) {
    if (ktmp)
      unlink(ktmp);
    if (ttmp)
      unlink(ttmp);
  }
  if (kernel)
    srcfile_free(kernel);
  phase_since(times, "write the artifact files", t0);
  free(ktmp);
  free(ttmp);
  sb_free(&kpath);
  sb_free(&tpath);
  sb_free(&file);
  return ok;
}
