/*
 * print_internal.h - private to lib/hlo/print*.c.
 *
 * The printer is split in three: print.c walks modules, computations and
 * instructions and prints the attributes every instruction may carry;
 * print_attrs.c prints the attributes that belong to one opcode, in the
 * order XLA's PrintExtraAttributesImpl gives them; print_util.c holds the
 * formatters both use (quoted strings, integer lists, metadata, sharding,
 * replica groups, windows, dimension numbers).
 *
 * Every attribute is appended as ", key=value": the caller has already
 * printed the instruction's closing ')'.
 */
#ifndef XHLOC_PRINT_INTERNAL_H
#define XHLOC_PRINT_INTERNAL_H

#include "hlo.h"

#include <string.h>

/*
 * Appends for the hot paths (names, separators): they write into the
 * buffer's spare room directly and fall back to the sb_* calls when it is
 * full.  They leave the terminating NUL out; every public print function
 * ends with pr_finish, which puts it back.
 */
static inline void pr_putc(StrBuf *b, char c) {
  if (b->len + 1 < b->cap)
    b->s[b->len++] = c;
  else
    sb_putc(b, c);
}

static inline void pr_putn(StrBuf *b, const char *s, size_t n) {
  if (b->len + n < b->cap) {
    memcpy(b->s + b->len, s, n);
    b->len += n;
  } else {
    sb_putn(b, s, n);
  }
}

static inline void pr_puts(StrBuf *b, const char *s) {
  if (b->s) {
    char *d = b->s + b->len, *end = b->s + b->cap - 1;
    while (d < end && *s)
      *d++ = *s++;
    b->len = (size_t)(d - b->s);
    if (!*s)
      return;
  }
  sb_puts(b, s);
}

static inline void pr_put_i64(StrBuf *b, int64_t v) {
  char tmp[24];
  int n = sizeof tmp;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do {
    tmp[--n] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    tmp[--n] = '-';
  pr_putn(b, tmp + n, sizeof tmp - (size_t)n);
}

static inline void pr_finish(StrBuf *b) { sb_putn(b, "", 0); }

/*
 * print_util.c
 */

/* s between double quotes, escaped as absl::CEscape does (\" \' \\ \n \r
 * \t), other control bytes as \xNN; bytes >= 0x80 (UTF-8) stay as they
 * are.  NULL prints "". */
void pr_quoted(StrBuf *b, const char *s);
/* "a,b,c" */
void pr_i64s(StrBuf *b, const int64_t *v, int n);
/* "{a,b,c}" */
void pr_braced(StrBuf *b, I64List l);
/* "%name" */
void pr_name(StrBuf *b, const char *name);
/* Whether s is a brace dict as XLA's LexesAsJsonDict accepts: then it prints
 * unquoted (backend_config, frontend attribute values). */
bool pr_lexes_as_dict(const char *s);
/* "{k="v",k2={...}}", sorted by key as XLA prints them. */
void pr_kvlist(StrBuf *b, const KVList *l);
/* The inside of metadata={...}: fields space-separated. */
void pr_metadata_fields(StrBuf *b, const OpMetadata *m);
bool pr_metadata_empty(const OpMetadata *m);
/* "{replicated}", "{devices=[2,1]0,1 last_tile_dim_replicate}", tuples... */
void pr_sharding(StrBuf *b, const Sharding *s, bool with_metadata);
/* "{{0,1},{2,3}}" or "[2,4]<=[8]" / "[2,4]<=[4,2]T(1,0)". */
void pr_replica_groups(StrBuf *b, const ReplicaGroups *g);
/* "size=3x3 stride=2x2 pad=1_1x1_1 ..." (the inside of window={...}). */
void pr_window(StrBuf *b, const Window *w);
/* "b01f_01io->b01f" */
void pr_conv_dnums(StrBuf *b, const ConvDnums *d);
/* "{0}: (1, {})" entries joined by ", "; with_kind adds ", may-alias". */
void pr_alias_entries(StrBuf *b, const AliasEntry *e, int n, bool with_kind);
/* A shape index "{0,1}" */
void pr_shape_index(StrBuf *b, I64List l);

/*
 * print_attrs.c
 */

/* The attributes that belong to opcode `op` (normally i->op), then i's
 * attributes kept verbatim (pr_raw_attrs). */
void pr_opcode_attrs(StrBuf *b, const HloInstr *i, HloOp op);
/* ", name=value" for each raw attribute of i. */
void pr_raw_attrs(StrBuf *b, const HloInstr *i);
/* to_apply=, calls=, condition=/body=, branch_computations=, ... */
void pr_called(StrBuf *b, const HloInstr *i, HloOp op);

#endif
