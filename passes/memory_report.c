/*
 * memory_report.c - where the bytes of a buffer assignment go: the peak of
 * live bytes over the schedule, the point where it occurs, the buffers live
 * there (largest first, with their instructions, shapes and source lines),
 * and the totals by kind (xhloc --stage=memory, the
 * *.memory-usage-report.txt dump).
 *
 * Live bytes at time t: every parameter and constant allocation (the
 * caller's buffers and the program's, live throughout), plus every group of
 * values in an output or temp allocation whose live range holds t.  The
 * temp allocation may be larger than its share of the peak: what the
 * best-fit packing loses to fragmentation.
 */
#include "ba_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct Live {
  int value;                      /* the member that holds the buffer then */
  int64_t size;
  int group;
} Live;

static int cmp_live(const void *pa, const void *pb) {
  const Live *a = pa, *b = pb;
  if (a->size != b->size)
    return a->size > b->size ? -1 : 1;
  return a->value - b->value;
}

typedef struct Step {
  int t;
  int64_t delta;
} Step;

static int cmp_step(const void *pa, const void *pb) {
  const Step *a = pa, *b = pb;
  if (a->t != b->t)
    return a->t < b->t ? -1 : 1;
  return (b->delta < 0) - (a->delta < 0);  /* frees first */
}

static bool counted(const BufferAssignment *ba, const Value *g) {
  if (g->alloc < 0 || g->alloc >= ba->allocs.len)
    return false;
  unsigned f = ba->allocs.data[g->alloc].flags;
  return (f & (ALLOC_TEMP | ALLOC_OUTPUT)) != 0;
}

/* The size of group root g: its largest member. */
static int64_t *group_sizes(const BufferAssignment *ba) {
  int64_t *gs = xcalloc((size_t)ba->vals.len + 1, sizeof *gs);
  for (int k = 0; k < ba->vals.len; k++) {
    const Value *v = &ba->vals.data[k];
    if (v->size > gs[v->parent])
      gs[v->parent] = v->size;
  }
  return gs;
}

int64_t ba_peak_bytes(const BufferAssignment *ba, int *at_time) {
  const Value *vals = ba->vals.data;
  int64_t base = 0;
  for (int a = 0; a < ba->allocs.len; a++)
    if (ba->allocs.data[a].flags & (ALLOC_PARAMETER | ALLOC_CONSTANT))
      base += ba->allocs.data[a].size;
  int64_t *gs = group_sizes(ba);
  Vec(Step) st = {0};
  for (int k = 0; k < ba->vals.len; k++) {
    const Value *g = &vals[k];
    if (g->parent != k || !counted(ba, g) || gs[k] == 0)
      continue;
    vec_push(&st, ((Step){g->gstart, gs[k]}));
    if (g->gend != END_OF_PROGRAM)
      vec_push(&st, ((Step){g->gend + 1, -gs[k]}));
  }
  free(gs);
  qsort(st.data, (size_t)st.len, sizeof *st.data, cmp_step);
  int64_t live = base, peak = base;
  int when = 1;
  for (int k = 0; k < st.len; k++) {
    live += st.data[k].delta;
    if (live > peak) {
      peak = live;
      when = st.data[k].t;
    }
  }
  vec_free(&st);
  if (at_time)
    *at_time = when;
  return peak;
}

/* For every group, the member whose buffer it is at time t: the latest
 * one begun by then (-1: none is live). */
static int *members_at(const BufferAssignment *ba, int t) {
  int *m = xcalloc((size_t)ba->vals.len + 1, sizeof *m);
  for (int k = 0; k < ba->vals.len; k++)
    m[k] = -1;
  for (int k = 0; k < ba->vals.len; k++) {
    const Value *v = &ba->vals.data[k];
    if (v->start > t || v->end < t)
      continue;
    int g = v->parent;
    if (m[g] < 0 || v->start > ba->vals.data[m[g]].start)
      m[g] = k;
  }
  return m;
}

typedef Vec(Live) LiveVec;

/* The groups live at step t (output and temp groups over their ranges;
 * with fixed, parameter and constant allocations too), each named by the
 * member that holds it then, largest first. */
static void live_at(const BufferAssignment *ba, int t, bool fixed,
                    LiveVec *out) {
  const Value *vals = ba->vals.data;
  int64_t *gs = group_sizes(ba);
  int *mem = members_at(ba, t);
  for (int k = 0; k < ba->vals.len; k++) {
    const Value *g = &vals[k];
    if (g->parent != k || gs[k] == 0)
      continue;
    bool whole = g->alloc >= 0 && (ba->allocs.data[g->alloc].flags &
                                   (ALLOC_PARAMETER | ALLOC_CONSTANT));
    if (whole ? !fixed
              : !counted(ba, g) || g->gstart > t || g->gend < t)
      continue;
    vec_push(out, ((Live){.value = whole || mem[k] < 0 ? k : mem[k],
                          .size = gs[k], .group = k}));
  }
  free(gs);
  free(mem);
  qsort(out->data, (size_t)out->len, sizeof *out->data, cmp_live);
}

static void put_source(StrBuf *b, const HloInstr *i) {
  const OpMetadata *md = i->metadata;
  if (md && md->source_file && *md->source_file) {
    sb_printf(b, "  %s", md->source_file);
    if (md->source_line > 0)
      sb_printf(b, ":%lld", (long long)md->source_line);
  }
  if (md && md->op_name && *md->op_name)
    sb_printf(b, "  (%s)", md->op_name);
}

static const char *kind_name(const BufferAssignment *ba, const Value *v) {
  const Value *g = &ba->vals.data[v->parent];
  unsigned f = g->alloc >= 0 ? ba->allocs.data[g->alloc].flags : 0;
  if (f & ALLOC_PARAMETER)
    return v->kind == VK_PARAM ? "parameter" : "donated";
  if (f & ALLOC_CONSTANT)
    return "constant";
  if ((f & ALLOC_OUTPUT) || g->goutput)
    return "output";
  if (v->kind == VK_TEMP && v->leaf >= 1 && v->def->op == HLO_CUSTOM_CALL &&
      v->def->shape->et == ET_TUPLE)
    return "workspace";
  return "temp";
}

static void put_total(StrBuf *b, const char *label, int64_t n, int count,
                      const char *what) {
  sb_printf(b, "  %-22s", label);
  ba_put_bytes(b, n);
  if (count >= 0)
    sb_printf(b, "  (%d %s)", count, what);
  sb_putc(b, '\n');
}

void ba_print_memory_report(StrBuf *b, const BufferAssignment *ba,
                            int max_buffers) {
  const Value *vals = ba->vals.data;
  int t;
  int64_t peak = ba_peak_bytes(ba, &t);
  int64_t total = 0, by[4] = {0};
  int nby[4] = {0};
  for (int a = 0; a < ba->allocs.len; a++) {
    const BufAlloc *al = &ba->allocs.data[a];
    int k = al->flags & ALLOC_PARAMETER ? 0
            : al->flags & ALLOC_CONSTANT ? 1
            : al->flags & ALLOC_OUTPUT   ? 2
                                         : 3;
    by[k] += al->size;
    nby[k]++;
    total += al->size;
  }
  int64_t ws_max = 0;
  int nws = 0;
  for (int k = 0; k < ba->vals.len; k++)
    if (!strcmp(kind_name(ba, &vals[k]), "workspace")) {
      nws++;
      if (vals[k].size > ws_max)
        ws_max = vals[k].size;
    }

  sb_printf(b, "Memory usage report for module %s\n\n", ba->m->name);
  sb_puts(b, "Total bytes used: ");
  ba_put_bytes(b, total);
  sb_printf(b, " (%lld)\n", (long long)total);
  sb_puts(b, "Peak live bytes:  ");
  ba_put_bytes(b, peak);
  sb_printf(b, " (%lld)", (long long)peak);
  const HloInstr *at = t > 0 && t < ba->at.len ? ba->at.data[t] : NULL;
  if (at)
    sb_printf(b, " at step %d of %d, %s (%s, in %s)", t, ba->now, at->name,
              hlo_op_name(at->op), at->parent ? at->parent->name : "?");
  sb_puts(b, "\n\nBy kind:\n");
  put_total(b, "parameters", by[0], nby[0], "allocations");
  put_total(b, "constants", by[1], nby[1], "allocations");
  /* the results: in allocations of their own (a donated parameter's), or
   * packed with the temps */
  int64_t packed = 0;
  int npacked = 0;
  for (int k = 0; k < ba->vals.len; k++) {
    const Value *g = &vals[k];
    if (g->parent == k && g->goutput && g->alloc >= 0 &&
        (ba->allocs.data[g->alloc].flags & ALLOC_TEMP)) {
      packed += g->size;
      npacked++;
    }
  }
  if (nby[2] || !npacked)
    put_total(b, "outputs", by[2], nby[2], "allocations");
  if (npacked)
    put_total(b, "results in temp", packed, npacked, "values, each live from "
              "its definition");
  put_total(b, "temp", by[3], -1, NULL);
  if (nws) {
    sb_printf(b, "  %-22s", "  library workspaces");
    ba_put_bytes(b, ws_max);
    sb_printf(b, "  (the largest of %d, inside temp)\n", nws);
  }
  int64_t live_temp = 0;

  /* The buffers live at the peak, parameters and constants included. */
  LiveVec lv = {0};
  live_at(ba, t, true, &lv);
  for (int k = 0; k < lv.len; k++) {
    const Value *g = &vals[lv.data[k].group];
    if (ba->allocs.data[g->alloc].flags & ALLOC_TEMP)
      live_temp += lv.data[k].size;
  }
  sb_printf(b, "  %-22s", "temp live at the peak");
  ba_put_bytes(b, live_temp);
  sb_printf(b, "  (fragmentation ");
  ba_put_bytes(b, by[3] > live_temp ? by[3] - live_temp : 0);
  sb_puts(b, ")\n");
  sb_puts(b, "  ");
  sb_printf(b, "%-22s", "total");
  ba_put_bytes(b, total);
  sb_putc(b, '\n');

  sb_printf(b, "\nLive at the peak: %d buffers, largest first", lv.len);
  if (max_buffers > 0 && lv.len > max_buffers)
    sb_printf(b, " (the first %d)", max_buffers);
  sb_puts(b, ":\n");
  for (int k = 0; k < lv.len && (max_buffers <= 0 || k < max_buffers);
       k++) {
    const Value *v = &vals[lv.data[k].value];
    sb_puts(b, "  ");
    ba_put_bytes(b, lv.data[k].size);
    sb_printf(b, "  %-9s %s", kind_name(ba, v), v->def->name);
    if (v->def->shape->et == ET_TUPLE)
      sb_printf(b, "{leaf %d}", v->leaf);
    sb_puts(b, " ");
    shape_print(b, v->shape, true);
    put_source(b, v->def);
    sb_putc(b, '\n');
  }
  vec_free(&lv);
}

int ba_live_at_peak(const BufferAssignment *ba, int *at_time,
                    BaLiveBuffer **out) {
  const Value *vals = ba->vals.data;
  int t;
  ba_peak_bytes(ba, &t);
  LiveVec lv = {0};
  live_at(ba, t, false, &lv);
  BaLiveBuffer *r = xcalloc((size_t)lv.len + 1, sizeof *r);
  for (int k = 0; k < lv.len; k++) {
    const Value *v = &vals[lv.data[k].value];
    const Value *g = &vals[lv.data[k].group];
    r[k] = (BaLiveBuffer){v->def, v->leaf, lv.data[k].size,
                          (ba->allocs.data[g->alloc].flags & ALLOC_TEMP) != 0};
  }
  int n = lv.len;
  vec_free(&lv);
  *at_time = t;
  *out = r;
  return n;
}
