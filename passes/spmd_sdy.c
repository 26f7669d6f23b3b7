/*
 * spmd_sdy.c - Shardy's attributes as JAX exports them into HLO
 * (frontend_attributes with MLIR attribute text):
 *
 *   module   xla.sdy.meshes={mesh = #sdy.mesh<["x"=2, "y"=2]>, ...}
 *              mesh    ::= '#sdy.mesh<[' [axis (',' axis)*] ']'
 *                          [',' 'device_ids=[' int (',' int)* ']'] '>'
 *              axis    ::= '"' name '"' '=' int
 *   values   xla.sdy.sharding="#sdy.sharding<@mesh, [{"x"}, {}]>"
 *              sharding ::= '#sdy.sharding<' meshref ',' '[' [dim (',' dim)*] ']'
 *                           (',' ('replicated' | 'unreduced') '=' '{' ... '}')* '>'
 *              meshref  ::= '@' name | 'mesh<' ... '>' | '#sdy.mesh<' ... '>'
 *              dim      ::= '{' [ax (',' ax)*] [',' '?'] '}' ['p' int]
 *              ax       ::= '"' name '"' [':(' int ')' int]   (sub-axis)
 *            "#sdy.sharding_per_value<[<meshref, [...]>, ...]>"
 *   shard_map  xla.sdy.manual_axes="#sdy<manual_axes{"x"}>" (every axis
 *              of the mesh, or some: the others are left to the
 *              partitioner, and the body computes its values on every
 *              device of them)
 *
 * A tensor dimension sharded over axes a, b (major first) is cut into
 * size(a) * size(b) tiles; a device's tile index is its mesh coordinate
 * along a, then b, as a mixed-radix number (a sub-axis "x":(p)s takes
 * (coordinate / p) mod s).  Open dimensions ('?') and priorities only guide
 * Shardy's own propagation and are read as written.
 */
#include "spmd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct SdyMesh {
  char *name;
  int naxes;
  char **axes;
  int64_t *sizes;
  int64_t ndev;                   /* product of sizes */
  int64_t *ids;                   /* device_ids, or NULL (iota) */
} SdyMesh;

struct SdyMeshes {
  int n;
  SdyMesh *m;
};

/* A cursor over attribute text. */
typedef struct Cur {
  const char *p;
  Arena *a;
} Cur;

static void skip(Cur *c) {
  while (*c->p == ' ' || *c->p == '\n' || *c->p == '\t')
    c->p++;
}

static bool lit(Cur *c, const char *s) {
  skip(c);
  size_t n = strlen(s);
  if (strncmp(c->p, s, n) != 0)
    return false;
  c->p += n;
  return true;
}

static bool peekc(Cur *c, char ch) {
  skip(c);
  return *c->p == ch;
}

static bool integer(Cur *c, int64_t *v) {
  skip(c);
  char *end;
  long long x = strtoll(c->p, &end, 10);
  if (end == c->p)
    return false;
  c->p = end;
  *v = x;
  return true;
}

/* "name" or a bare identifier. */
static char *name(Cur *c) {
  skip(c);
  const char *s = c->p;
  if (*s == '"') {
    const char *e = strchr(s + 1, '"');
    if (!e)
      return NULL;
    c->p = e + 1;
    return arena_strndup(c->a, s + 1, (size_t)(e - s - 1));
  }
  const char *e = s;
  while (*e && (e == s ? (*e == '_' || (*e >= 'A' && *e <= 'Z') ||
                          (*e >= 'a' && *e <= 'z'))
                       : (*e == '_' || *e == '.' || *e == '$' || *e == '-' ||
                          (*e >= '0' && *e <= '9') || (*e >= 'A' && *e <= 'Z') ||
                          (*e >= 'a' && *e <= 'z'))))
    e++;
  if (e == s)
    return NULL;
  c->p = e;
  return arena_strndup(c->a, s, (size_t)(e - s));
}

/* The body of a mesh after "mesh<" (or "#sdy.mesh<"), through its '>'. */
static bool mesh_body(Cur *c, SdyMesh *m) {
  if (!lit(c, "["))
    return false;
  PtrVec names = {0};
  int64_t sizes[64];
  bool ok = true;
  if (!peekc(c, ']')) {
    do {
      char *n = name(c);
      int64_t v;
      if (!n || !lit(c, "=") || !integer(c, &v) || v < 1 || names.len >= 64) {
        ok = false;
        break;
      }
      sizes[names.len] = v;
      vec_push(&names, n);
    } while (lit(c, ","));
  }
  ok = ok && lit(c, "]");
  m->naxes = names.len;
  m->axes = (char **)vec_to_arena(c->a, &names);
  m->sizes = ARENA_ARRAY(c->a, int64_t, names.len > 0 ? names.len : 1);
  m->ndev = 1;
  for (int k = 0; k < names.len; k++) {
    m->sizes[k] = sizes[k];
    m->ndev *= sizes[k];
  }
  vec_free(&names);
  if (ok && lit(c, ",")) {
    if (!lit(c, "device_ids") || !lit(c, "=") || !lit(c, "["))
      return false;
    I64Vec ids = {0};
    do {
      int64_t v;
      if (!integer(c, &v)) {
        vec_free(&ids);
        return false;
      }
      vec_push(&ids, v);
    } while (lit(c, ","));
    ok = lit(c, "]") && (ids.len == m->ndev || (m->naxes == 0 && ids.len == 1));
    m->ids = vec_to_arena(c->a, &ids);
    vec_free(&ids);
  }
  return ok && lit(c, ">");
}

SdyMeshes *sdy_meshes(Arena *a, const HloModule *m, Diag *d) {
  SdyMeshes *ms = ARENA_NEW(a, SdyMeshes);
  const KVList *l = m->frontend_attrs;
  const char *text = NULL;
  for (int k = 0; l && k < l->n; k++)
    if (strcmp(l->kv[k].key, "xla.sdy.meshes") == 0)
      text = l->kv[k].value;
  if (!text)
    return ms;
  Cur c = {text, a};
  if (!lit(&c, "{"))
    goto bad;
  SdyMesh buf[16];
  if (!peekc(&c, '}')) {
    do {
      if (ms->n >= 16)
        goto bad;
      SdyMesh *mesh = &buf[ms->n];
      memset(mesh, 0, sizeof *mesh);
      if (!(mesh->name = name(&c)) || !lit(&c, "=") || !lit(&c, "#sdy.mesh<") ||
          !mesh_body(&c, mesh))
        goto bad;
      ms->n++;
    } while (lit(&c, ","));
  }
  if (!lit(&c, "}"))
    goto bad;
  ms->m = arena_memdup(a, buf, sizeof(SdyMesh) * (size_t)(ms->n > 0 ? ms->n : 1));
  return ms;
bad:
  diag_error(d, m->loc, "cannot read the module's xla.sdy.meshes attribute "
             "near '%.40s'", c.p);
  return NULL;
}

const char *sdy_attr(const HloInstr *i, const char *key) {
  const KVList *l = i->frontend_attrs;
  for (int k = 0; l && k < l->n; k++)
    if (strcmp(l->kv[k].key, key) == 0)
      return l->kv[k].value;
  return NULL;
}

/* meshref: '@' name, or an inline mesh. */
static const SdyMesh *mesh_ref(Cur *c, const SdyMeshes *ms, SdyMesh *inl) {
  if (lit(c, "@")) {
    char *n = name(c);
    for (int k = 0; n && ms && k < ms->n; k++)
      if (strcmp(ms->m[k].name, n) == 0)
        return &ms->m[k];
    return NULL;
  }
  if (lit(c, "#sdy.mesh<") || lit(c, "mesh<")) {
    memset(inl, 0, sizeof *inl);
    return mesh_body(c, inl) ? inl : NULL;
  }
  return NULL;
}

/* A brace list we do not use (replicated={...}, unreduced={...}). */
static bool skip_braces(Cur *c) {
  if (!lit(c, "{"))
    return false;
  while (*c->p && *c->p != '}')
    c->p++;
  return lit(c, "}");
}

static int axis_index(const SdyMesh *m, const char *n) {
  for (int k = 0; k < m->naxes; k++)
    if (strcmp(m->axes[k], n) == 0)
      return k;
  return -1;
}

/* The rest of one sharding after its meshref: ", [dims] ...>" into t. */
static bool dims_tiling(Cur *c, const SdyMesh *m, int rank, int64_t ndev,
                        Tiling **out, char *why, size_t nwhy) {
  Tiling *t = tiling_new(c->a, rank, ndev);
  bool trivial = m->ndev == 1;
  if (!trivial && m->ndev != ndev) {
    snprintf(why, nwhy, "the mesh has %lld devices, the module %lld "
             "partitions", (long long)m->ndev, (long long)ndev);
    return false;
  }
  /* mesh coordinates of every device */
  int64_t *mc = NULL;
  if (!trivial) {
    mc = ARENA_ARRAY(c->a, int64_t, ndev * (m->naxes > 0 ? m->naxes : 1));
    uint8_t *seen = ARENA_ARRAY(c->a, uint8_t, ndev);
    for (int64_t j = 0; j < ndev; j++) {
      int64_t dev = m->ids ? m->ids[j] : j;
      if (dev < 0 || dev >= ndev || seen[dev]++) {
        snprintf(why, nwhy, "the mesh's device_ids are not each device once");
        return false;
      }
      int64_t r = j;
      for (int k = m->naxes - 1; k >= 0; k--) {
        mc[dev * m->naxes + k] = r % m->sizes[k];
        r /= m->sizes[k];
      }
    }
  }
  if (!lit(c, ",") || !lit(c, "["))
    goto syntax;
  int k = 0;
  if (!peekc(c, ']')) {
    do {
      if (!lit(c, "{"))
        goto syntax;
      if (k >= rank) {
        snprintf(why, nwhy, "the sharding has more dimensions than the "
                 "value's %d", rank);
        return false;
      }
      int64_t tiles = 1;
      if (!peekc(c, '}')) {
        do {
          if (lit(c, "?"))
            continue;
          char *n = name(c);
          if (!n)
            goto syntax;
          int ax = axis_index(m, n);
          if (ax < 0) {
            snprintf(why, nwhy, "the sharding names axis \"%s\", which the "
                     "mesh does not have", n);
            return false;
          }
          int64_t pre = 1, size = m->sizes[ax];
          if (lit(c, ":")) {
            if (!lit(c, "(") || !integer(c, &pre) || !lit(c, ")") ||
                !integer(c, &size) || pre < 1 || size < 1 ||
                m->sizes[ax] % (pre * size) != 0)
              goto syntax;
          }
          tiles *= size;
          if (!trivial)
            for (int64_t dev = 0; dev < ndev; dev++)
              t->coord[dev * rank + k] = t->coord[dev * rank + k] * size +
                                         (mc[dev * m->naxes + ax] / pre) % size;
        } while (lit(c, ","));
      }
      if (!lit(c, "}"))
        goto syntax;
      if (lit(c, "p")) {
        int64_t prio;
        if (!integer(c, &prio))
          goto syntax;
      }
      t->tiles[k] = trivial ? 1 : tiles;
      k++;
    } while (lit(c, ","));
  }
  if (!lit(c, "]"))
    goto syntax;
  if (k != rank) {
    snprintf(why, nwhy, "the sharding has %d dimensions, the value %d", k, rank);
    return false;
  }
  while (lit(c, ",")) {
    if (!name(c) || !lit(c, "=") || !skip_braces(c))
      goto syntax;
  }
  if (!lit(c, ">"))
    goto syntax;
  if (trivial)
    for (int j = 0; j < rank; j++)
      t->tiles[j] = 1;
  if (!tiling_valid(t)) {
    snprintf(why, nwhy, "the sharding uses a mesh axis twice");
    return false;
  }
  *out = t;
  return true;
syntax:
  snprintf(why, nwhy, "cannot read the Shardy sharding near '%.30s'", c->p);
  return false;
}

bool sdy_tiling(Arena *a, const SdyMeshes *ms, const char *text, int rank,
                int64_t ndev, Tiling **out, char *why, size_t nwhy) {
  Cur c = {text, a};
  SdyMesh inl;
  if (!lit(&c, "#sdy.sharding<")) {
    snprintf(why, nwhy, "expected #sdy.sharding<...>");
    return false;
  }
  const SdyMesh *m = mesh_ref(&c, ms, &inl);
  if (!m) {
    snprintf(why, nwhy, "the sharding's mesh is not among the module's "
             "xla.sdy.meshes");
    return false;
  }
  return dims_tiling(&c, m, rank, ndev, out, why, nwhy);
}

bool sdy_tiling_per_value(Arena *a, const SdyMeshes *ms, const char *text,
                          int k, const Shape *s, int64_t ndev, Tiling **out,
                          char *why, size_t nwhy) {
  Cur c = {text, a};
  if (!lit(&c, "#sdy.sharding_per_value<") || !lit(&c, "[")) {
    snprintf(why, nwhy, "expected #sdy.sharding_per_value<[...]>");
    return false;
  }
  for (int j = 0;; j++) {
    SdyMesh inl;
    if (!lit(&c, "<")) {
      snprintf(why, nwhy, "the sharding_per_value has %d values, fewer than "
               "%d", j, k + 1);
      return false;
    }
    const SdyMesh *m = mesh_ref(&c, ms, &inl);
    if (!m) {
      snprintf(why, nwhy, "the sharding's mesh is not among the module's "
               "xla.sdy.meshes");
      return false;
    }
    int rank = shape_is_array(s) ? s->rank : 0;
    Tiling *t = NULL;
    if (j == k)
      return dims_tiling(&c, m, rank, ndev, out, why, nwhy);
    /* skip this value: read it as rank-agnostic by scanning to its '>' at
     * depth 0 */
    int depth = 1;
    while (*c.p && depth > 0) {
      if (*c.p == '<')
        depth++;
      else if (*c.p == '>')
        depth--;
      c.p++;
    }
    (void)t;
    if (!lit(&c, ",")) {
      snprintf(why, nwhy, "the sharding_per_value has %d values, fewer than "
               "%d", j + 1, k + 1);
      return false;
    }
  }
}

bool sdy_manual_axes_valid(const SdyMeshes *ms, const char *text, char *why,
                           size_t nwhy) {
  Arena *a = arena_new();
  Cur c = {text, a};
  bool ok = false;
  int n = 0;
  char *names[64];
  if (lit(&c, "#sdy<") && lit(&c, "manual_axes") && lit(&c, "{")) {
    ok = true;
    if (!peekc(&c, '}')) {
      do {
        char *x = name(&c);
        if (!x || n >= 64) {
          ok = false;
          break;
        }
        names[n++] = x;
      } while (lit(&c, ","));
    }
    ok = ok && lit(&c, "}") && lit(&c, ">");
  }
  if (!ok) {
    snprintf(why, nwhy, "cannot read xla.sdy.manual_axes '%.40s'", text);
    arena_free(a);
    return false;
  }
  /* Every axis named must be an axis of some mesh. */
  for (int j = 0; j < n; j++) {
    bool found = false;
    for (int mi = 0; ms && mi < ms->n && !found; mi++)
      found = axis_index(&ms->m[mi], names[j]) >= 0;
    if (!found) {
      snprintf(why, nwhy, "xla.sdy.manual_axes names axis \"%s\", which "
               "no mesh of the module has", names[j]);
      arena_free(a);
      return false;
    }
  }
  arena_free(a);
  return true;
}
