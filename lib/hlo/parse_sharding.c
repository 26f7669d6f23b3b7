/*
 * parse_sharding.c - the sharding={...} attribute.
 *
 *   sharding ::= '{' single '}' | '{' [ '{' single '}' (',' '{' single '}')* ] '}'
 *   single   ::= ( 'replicated' | 'maximal' | 'manual' | 'unknown' | 'unreduced'
 *              | 'device=' int | 'devices=' tiles
 *              | 'last_tile_dim_replicate' | 'last_tile_dims=' '{' types '}'
 *              | ('shard_as' | 'shard_like') int | 'metadata=' {...} )*
 *   tiles    ::= '[' dims ']' ( int (',' int)*            explicit devices
 *                             | '<=' '[' dims ']' ['T' '(' perm ')'] )  iota
 *
 * The same validity rules as XLA's parser apply (replicated shardings have
 * no devices, maximal ones exactly one, a tiled one a tile assignment whose
 * device count matches its dimensions).  Sharding metadata is kept raw.
 */
#include "parse_internal.h"

#include <string.h>

static bool product(const I64List *l, int64_t *out) {
  int64_t n = 1;
  for (int i = 0; i < l->n; i++) {
    if (l->v[i] < 0 || (l->v[i] != 0 && n > INT64_MAX / l->v[i]))
      return false;
    n *= l->v[i];
  }
  *out = n;
  return true;
}

/* devices= after its '=': tile dims, then an explicit list or an iota. */
static bool parse_tile_assignment(Parser *p, Sharding *s) {
  if (!parse_i64_list(p, TK_LSQUARE, TK_RSQUARE, TK_COMMA, &s->tile_dims))
    return false;
  if (s->tile_dims.n == 0)
    return perr(p, "expected at least one tile dimension in devices=[...]");
  if (peat(p, TK_LEQ)) {
    s->iota_devices = true;
    if (!parse_i64_list(p, TK_LSQUARE, TK_RSQUARE, TK_COMMA,
                        &s->iota_reshape_dims))
      return false;
    if (s->iota_reshape_dims.n == 0)
      return perr(p, "expected at least one iota reshape dimension");
    const Token *t = &p->lx.tok;
    if (t->kind == TK_IDENT && t->vn == 1 && t->v[0] == 'T') {
      padvance(p);
      if (!parse_i64_list(p, TK_LPAREN, TK_RPAREN, TK_COMMA,
                          &s->iota_transpose_perm))
        return false;
    } else if (s->iota_reshape_dims.n > 1) {
      return perr(p, "expected 'T(' after the iota reshape dimensions");
    }
    return true;
  }
  int base = p->ints.len;
  do {
    int64_t v;
    if (!parse_int64(p, &v)) {
      p->ints.len = base;
      return false;
    }
    vec_push(&p->ints, v);
  } while (peat(p, TK_COMMA));
  s->devices.n = p->ints.len - base;
  s->devices.v = arena_memdup(p->a, p->ints.data + base,
                              sizeof(int64_t) * (size_t)s->devices.n);
  p->ints.len = base;
  return true;
}

static bool parse_last_tile_dims(Parser *p, Sharding *s) {
  if (!pexpect(p, TK_LBRACE, "last_tile_dims"))
    return false;
  PtrVec v = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      const char *name;
      switch (ptok(p)) {
      case TK_KW_MANUAL: name = "manual"; break;
      case TK_KW_REPLICATED: name = "replicated"; break;
      case TK_KW_MAXIMAL: name = "maximal"; break;
      case TK_KW_UNREDUCED: name = "unreduced"; break;
      default: name = NULL; break;
      }
      if (!name) {
        ok = perr(p, "expected manual, replicated, maximal or unreduced in "
                     "last_tile_dims");
        break;
      }
      vec_push(&v, arena_strdup(p->a, name));
      padvance(p);
    } while (peat(p, TK_COMMA));
  }
  if (ok && (ok = pexpect(p, TK_RBRACE, "last_tile_dims"))) {
    s->nlast_tile_dims = v.len;
    s->last_tile_dims = vec_to_arena(p->a, &v);
  }
  vec_free(&v);
  return ok;
}

static bool attr_is(const Token *t, const char *name) {
  size_t n = strlen(name);
  return t->vn == n && memcmp(t->v, name, n) == 0;
}

/* One sharding; the current token is just after its '{'. */
static bool parse_single(Parser *p, const char *open_at, Sharding **out) {
  Sharding *s = ARENA_NEW(p->a, Sharding);
  bool replicated = false, maximal = false, manual = false, unknown = false,
       unreduced = false, has_device = false, has_devices = false;
  while (ptok(p) != TK_RBRACE) {
    const Token *t = &p->lx.tok;
    switch (t->kind) {
    case TK_KW_REPLICATED: replicated = true; padvance(p); break;
    case TK_KW_MAXIMAL: maximal = true; padvance(p); break;
    case TK_KW_MANUAL: manual = true; padvance(p); break;
    case TK_KW_UNKNOWN: unknown = true; padvance(p); break;
    case TK_KW_UNREDUCED: unreduced = true; padvance(p); break;
    case TK_KW_LAST_TILE_DIM_REPLICATE:
      s->last_tile_dim_replicate = true;
      padvance(p);
      break;
    case TK_KW_SHARD_AS:
    case TK_KW_SHARD_LIKE: {
      const char *at = t->s;
      padvance(p);
      int64_t id;
      if (ptok(p) != TK_INT)
        return perr(p, "expected a shard group id");
      const char *e = p->lx.tok.e;
      if (!parse_int64(p, &id))
        return false;
      s->shard_group = arena_strndup(p->a, at, (size_t)(e - at));
      break;
    }
    case TK_ATTR:
      if (attr_is(t, "device")) {
        padvance(p);
        if (ptok(p) != TK_INT)
          return perr(p, "device= must be an integer");
        if (!parse_int64(p, &s->device))
          return false;
        has_device = true;
      } else if (attr_is(t, "devices")) {
        padvance(p);
        if (!parse_tile_assignment(p, s))
          return false;
        has_devices = true;
      } else if (attr_is(t, "metadata")) {
        padvance(p);
        if (!parse_raw_field(p, &s->metadata))
          return false;
      } else if (attr_is(t, "last_tile_dims")) {
        padvance(p);
        if (!parse_last_tile_dims(p, s))
          return false;
      } else {
        return perr(p, "unknown attribute in sharding: expected device=, "
                       "devices=, metadata= or last_tile_dims=");
      }
      break;
    default:
      return perr(p, "unexpected token in sharding");
    }
  }
  padvance(p); /* '}' */
  bool devs = has_device || has_devices;
  if (replicated || manual || unknown || unreduced) {
    const char *kind = replicated ? "replicated" : manual ? "manual"
                       : unknown ? "unknown" : "unreduced";
    if (devs)
      return perr_at(p, open_at, "%s shardings cannot have devices assigned",
                     kind);
    s->kind = replicated ? SHARD_REPLICATED : manual ? SHARD_MANUAL
              : unknown ? SHARD_UNKNOWN : SHARD_UNREDUCED;
  } else if (maximal) {
    if (!has_device || has_devices)
      return perr_at(p, open_at,
                     "maximal shardings need exactly one device (device=N)");
    s->kind = SHARD_MAXIMAL;
  } else {
    if (!has_devices)
      return perr_at(p, open_at, "tiled shardings need a tile assignment "
                                 "(devices=[...])");
    if (s->last_tile_dim_replicate && s->nlast_tile_dims)
      return perr_at(p, open_at, "last_tile_dim_replicate and last_tile_dims= "
                                 "cannot both be given");
    int64_t ntiles, ndev;
    if (!product(&s->tile_dims, &ntiles))
      return perr_at(p, open_at, "invalid tile assignment dimensions");
    if (s->iota_devices) {
      if (s->iota_transpose_perm.n == 0 && s->iota_reshape_dims.n == 1) {
        s->iota_transpose_perm.n = 1;
        s->iota_transpose_perm.v = ARENA_NEW(p->a, int64_t);
      }
      if (s->iota_transpose_perm.n != s->iota_reshape_dims.n)
        return perr_at(p, open_at, "iota transpose permutation has %d entries "
                                   "but there are %d reshape dimensions",
                       s->iota_transpose_perm.n, s->iota_reshape_dims.n);
      for (int i = 0; i < s->iota_transpose_perm.n; i++) {
        int64_t v = s->iota_transpose_perm.v[i];
        if (v < 0 || v >= s->iota_reshape_dims.n)
          return perr_at(p, open_at, "iota transpose permutation entry %lld "
                                     "is out of range",
                         (long long)v);
      }
      if (!product(&s->iota_reshape_dims, &ndev) || ndev != ntiles)
        return perr_at(p, open_at, "iota device list does not match the %lld "
                                   "tiles of the tile assignment",
                       (long long)ntiles);
    } else {
      if (s->devices.n <= 1)
        return perr_at(p, open_at, "tiled shardings need more than one "
                                   "device");
      if (s->devices.n != ntiles)
        return perr_at(p, open_at, "sharding lists %d devices but its tile "
                                   "assignment has %lld tiles",
                       s->devices.n, (long long)ntiles);
    }
    s->kind = SHARD_TILED;
  }
  *out = s;
  return true;
}

bool parse_sharding(Parser *p, Sharding **out) {
  const char *open_at = p->lx.tok.s;
  if (!pexpect(p, TK_LBRACE, "sharding"))
    return false;
  if (ptok(p) != TK_LBRACE && ptok(p) != TK_RBRACE)
    return parse_single(p, open_at, out);
  /* A tuple sharding (possibly empty). */
  Sharding *s = ARENA_NEW(p->a, Sharding);
  s->kind = SHARD_TUPLE;
  PtrVec elems = {0};
  bool ok = true;
  if (ptok(p) != TK_RBRACE) {
    do {
      const char *at = p->lx.tok.s;
      Sharding *e;
      if (!(ok = pexpect(p, TK_LBRACE, "tuple sharding element")) ||
          !(ok = parse_single(p, at, &e)))
        break;
      vec_push(&elems, e);
    } while (peat(p, TK_COMMA));
  }
  if (ok)
    ok = pexpect(p, TK_RBRACE, "tuple sharding");
  if (ok) {
    s->ntuple = elems.len;
    s->tuple = vec_to_arena(p->a, &elems);
    *out = s;
  }
  vec_free(&elems);
  return ok;
}

Sharding *hlo_parse_sharding(Arena *a, const char *text, Diag *d) {
  Parser p;
  parser_init_text(&p, a, text, d);
  Sharding *s = NULL;
  bool ok = parse_sharding(&p, &s);
  if (ok && ptok(&p) != TK_EOF)
    ok = perr(&p, "unexpected text after the sharding");
  vec_free(&p.ints);
  return ok ? s : NULL;
}
