/*
 * trace.c - a profile's timeline as a Chrome trace event file (the "JSON
 * object format" of the Trace Event Format, which Perfetto and
 * chrome://tracing open): metadata events naming the process and its one
 * track, then a complete event ("ph":"X") per traced run and per thunk
 * execution, in order of start, so that a run encloses its thunks and a
 * while loop its nested ones on the track.
 */
#include <stdlib.h>

#include "profile.h"

/* The length of the well-formed UTF-8 sequence at c (2 to 4; no overlong
 * forms, surrogates or code points past U+10FFFF), 0 if none. */
static int utf8_len(const unsigned char *c) {
  int n = *c >= 0xf5 ? 0 : *c >= 0xf0 ? 4 : *c >= 0xe0 ? 3 : *c >= 0xc2 ? 2 : 0;
  for (int k = 1; k < n; k++)
    if ((c[k] & 0xc0) != 0x80) return 0;
  if ((*c == 0xe0 && c[1] < 0xa0) || (*c == 0xed && c[1] >= 0xa0) ||
      (*c == 0xf0 && c[1] < 0x90) || (*c == 0xf4 && c[1] >= 0x90))
    return 0;
  return n;
}

/* s as a JSON string, quotes included; a byte that is not part of valid
 * UTF-8 becomes U+FFFD, so that any annotation gives valid JSON. */
static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') {
      fprintf(f, "\\%c", *c);
    } else if (*c < 0x20 || *c == 0x7f) {
      fprintf(f, "\\u%04x", *c);
    } else if (*c < 0x80) {
      fputc(*c, f);
    } else {
      int n = utf8_len(c);
      if (n) {
        fwrite(c, 1, (size_t)n, f);
        c += n - 1;
      } else {
        fputs("\\ufffd", f);
      }
    }
  }
  fputc('"', f);
}

bool profile_write_trace(FILE *f, const ThunkProfile *p, int n,
                         const TraceEvent *ev, int64_t nev, int64_t dropped,
                         const char *process, const char *track) {
  char **names = xcalloc((size_t)n + 1, sizeof *names);
  for (int k = 0; k < n; k++) {
    StrBuf b;
    sb_init(&b);
    profile_thunk_name(&b, p, k);
    names[k] = sb_detach(&b);
  }
  int runs = 0;
  fputs("{\"traceEvents\":[\n", f);
  fputs("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":", f);
  json_string(f, process);
  fputs("}},\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":", f);
  json_string(f, track);
  fputs("}}", f);
  for (int64_t k = 0; k < nev; k++) {
    const TraceEvent *e = &ev[k];
    fputs(",\n{\"name\":", f);
    if (e->thunk < 0) {
      fprintf(f, "\"run %d\",\"cat\":\"run\"", e->run);
      runs++;
    } else {
      json_string(f, names[e->thunk]);
      fprintf(f, ",\"cat\":\"%s\"", thunk_kind_name(p[e->thunk].thunk->kind));
    }
    fprintf(f, ",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"run\":%d",
            e->start_ms * 1e3, e->ms * 1e3, e->run);
    if (e->thunk >= 0) {
      const Thunk *t = p[e->thunk].thunk;
      if (t->kind == THUNK_KERNEL) {
        fputs(",\"kernel\":", f);
        json_string(f, t->kernel_name ? t->kernel_name : "");
        fprintf(f, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"shmem\":%u", t->grid[0],
                t->grid[1], t->grid[2], t->block[0], t->block[1], t->block[2], t->shmem_bytes);
      }
      int64_t bytes = thunk_bytes(t);
      if (bytes) fprintf(f, ",\"bytes\":%lld", (long long)bytes);
    }
    fputs("}}", f);
  }
  fprintf(f, "\n],\n\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"runs\":%d,"
          "\"events\":%lld,\"dropped_events\":%lld}}\n", runs, (long long)nev,
          (long long)dropped);
  for (int k = 0; k < n; k++) free(names[k]);
  free(names);
  return !ferror(f);
}
