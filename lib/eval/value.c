/*
 * value.c - the interpreter's values: allocation against the memory budget,
 * reference counting, errors and the time budget, element access, lanes and
 * XLA's element conversion rules.
 *
 * Conversion follows XLA: float to integer saturates and takes NaN to 0;
 * integer to float rounds to nearest even, to the small float types by way of
 * f32 (as Eigen's and ml_dtypes' constructors do), and so does f64 to bf16;
 * f64 to f16 and to the f8 types rounds once (XLA's CPU backend agrees on
 * all of these); complex to real keeps the real part; anything to pred is
 * "!= 0".
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evalp.h"

/*
 * Errors and budgets
 */
static bool ev_vfail(Eval *ev, const HloInstr *i, EvalErrKind kind,
                     const char *fmt, va_list ap) {
  if (ev->st && ev->st->kind == EVAL_OK) ev->st->kind = kind;
  StrBuf b;
  sb_init(&b);
  if (i) sb_printf(&b, "%s '%s': ", hlo_op_name(i->op), i->name ? i->name : "");
  sb_vprintf(&b, fmt, ap);
  Loc loc = {0};
  if (i) loc = i->loc;
  diag_error(ev->d, loc, "%s", b.s);
  sb_free(&b);
  return false;
}

bool ev_fail(Eval *ev, const HloInstr *i, EvalErrKind kind, const char *fmt,
             ...) {
  va_list ap;
  va_start(ap, fmt);
  ev_vfail(ev, i, kind, fmt, ap);
  va_end(ap);
  return false;
}

bool ev_fail_value(Eval *ev, const HloInstr *i, const char *fmt, ...) {
  if (ev->st && ev->st->kind == EVAL_OK)
    snprintf(ev->st->what, sizeof ev->st->what, "%s", hlo_op_name(i->op));
  va_list ap;
  va_start(ap, fmt);
  ev_vfail(ev, i, EVAL_ERR_VALUE, fmt, ap);
  va_end(ap);
  return false;
}

bool ev_unsupported(Eval *ev, const HloInstr *i, const char *what) {
  if (ev->st && ev->st->kind == EVAL_OK) {
    snprintf(ev->st->what, sizeof ev->st->what, "%s", what);
  }
  return ev_fail(ev, i, EVAL_ERR_UNSUPPORTED,
                 "the interpreter cannot run %s", what);
}

static bool ev_resource(Eval *ev, const HloInstr *i, const char *what,
                        const char *msg) {
  if (ev->st && ev->st->kind == EVAL_OK) {
    snprintf(ev->st->what, sizeof ev->st->what, "%s", what);
  }
  return ev_fail(ev, i, EVAL_ERR_RESOURCE, "%s", msg);
}

double ev_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool ev_check_time(Eval *ev, const HloInstr *i) {
  if (ev->o.time_budget <= 0) return true;
  if ((++ev->ticks & 15) != 0) return true;
  if (ev_now() - ev->start_time <= ev->o.time_budget) return true;
  char msg[96];
  snprintf(msg, sizeof msg, "time budget of %gs exceeded", ev->o.time_budget);
  return ev_resource(ev, i, "time", msg);
}

static bool ev_reserve(Eval *ev, const HloInstr *i, int64_t nbytes) {
  if (nbytes < 0) return ev_resource(ev, i, "memory", "value size overflows");
  if (ev->o.mem_budget > 0 && ev->live_bytes + nbytes > ev->o.mem_budget) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "memory budget of %lld bytes exceeded (%lld live, %lld more)",
             (long long)ev->o.mem_budget, (long long)ev->live_bytes,
             (long long)nbytes);
    return ev_resource(ev, i, "memory", msg);
  }
  ev->live_bytes += nbytes;
  if (ev->live_bytes > ev->peak_bytes) ev->peak_bytes = ev->live_bytes;
  return true;
}

EvalValue *ev_borrow(Eval *ev, const Shape *s, uint8_t *data) {
  int64_t n = ev_elems(s);
  int eb = et_bytes(s->et);
  int64_t nbytes = (n < 0 || (eb && n > INT64_MAX / eb)) ? -1 : n * eb;
  if (!ev_reserve(ev, NULL, nbytes)) return NULL;
  EvalValue *v = xcalloc(1, sizeof *v);
  v->refs = 1;
  v->shape = s;
  v->data = data;
  v->nbytes = nbytes;
  v->borrowed = true;
  return v;
}

void *ev_scratch(Eval *ev, const HloInstr *i, int64_t nbytes) {
  if (!ev_reserve(ev, i, nbytes)) return NULL;
  void *p = malloc(nbytes ? (size_t)nbytes : 1);
  if (!p) {
    ev->live_bytes -= nbytes;
    ev_resource(ev, i, "memory", "out of memory");
    return NULL;
  }
  return p;
}

void ev_scratch_free(Eval *ev, void *p, int64_t nbytes) {
  if (!p) return;
  free(p);
  ev->live_bytes -= nbytes;
}

/*
 * Values
 */
int64_t ev_elems(const Shape *s) {
  int64_t n = 1;
  for (int k = 0; k < s->rank; k++) {
    int64_t d = s->dims[k] < 0 ? 0 : s->dims[k];
    if (d != 0 && n > INT64_MAX / d) return -1;
    n *= d;
  }
  return n;
}

void ev_strides(const Shape *s, int64_t *strides) {
  int64_t st = 1;
  for (int k = s->rank - 1; k >= 0; k--) {
    strides[k] = st;
    st *= s->dims[k];
  }
}

static EvalValue *ev_array_impl(Eval *ev, const Shape *s, bool zero) {
  int64_t n = ev_elems(s);
  int eb = et_bytes(s->et);
  int64_t nbytes = (n < 0 || (eb && n > INT64_MAX / eb)) ? -1 : n * eb;
  if (!ev_reserve(ev, NULL, nbytes)) return NULL;
  EvalValue *v = xcalloc(1, sizeof *v);
  v->refs = 1;
  v->shape = s;
  v->nbytes = nbytes;
  v->data = zero ? calloc(1, nbytes ? (size_t)nbytes : 1)
                 : malloc(nbytes ? (size_t)nbytes : 1);
  if (!v->data) {
    free(v);
    ev->live_bytes -= nbytes;
    ev_resource(ev, NULL, "memory", "out of memory");
    return NULL;
  }
  return v;
}

EvalValue *ev_array(Eval *ev, const Shape *s) {
  return ev_array_impl(ev, s, true);
}

EvalValue *ev_array_nozero(Eval *ev, const Shape *s) {
  return ev_array_impl(ev, s, false);
}

EvalValue *ev_tuple(Eval *ev, const Shape *s, int n, EvalValue *const *elems) {
  EvalValue *v = xcalloc(1, sizeof *v);
  v->refs = 1;
  v->shape = s;
  v->ntuple = n;
  v->tuple = xcalloc(n ? (size_t)n : 1, sizeof *v->tuple);
  for (int k = 0; k < n; k++) v->tuple[k] = ev_ref(elems[k]);
  return v;
}

EvalValue *ev_token(Eval *ev, const Shape *s) {
  EvalValue *v = xcalloc(1, sizeof *v);
  v->refs = 1;
  v->shape = s;
  return v;
}

EvalValue *ev_view(Eval *ev, EvalValue *v, const Shape *s) {
  EvalValue *r = xcalloc(1, sizeof *r);
  r->refs = 1;
  r->shape = s;
  r->data = v->data;
  r->nbytes = v->nbytes;
  r->owner = ev_ref(v->owner ? v->owner : v);
  return r;
}

EvalValue *ev_ref(EvalValue *v) {
  if (v) v->refs++;
  return v;
}

void ev_unref(Eval *ev, EvalValue *v) {
  if (!v || --v->refs > 0) return;
  for (int k = 0; k < v->ntuple; k++) ev_unref(ev, v->tuple[k]);
  free(v->tuple);
  free(v->dsize);
  if (v->owner) {
    ev_unref(ev, v->owner);
  } else if (v->borrowed) {
    ev->live_bytes -= v->nbytes;
  } else if (v->data) {
    free(v->data);
    ev->live_bytes -= v->nbytes;
  }
  free(v);
}

EvalValue *ev_copy(Eval *ev, EvalValue *v, const Shape *s) {
  if (v->ntuple || (s && shape_is_tuple(s))) {
    int n = v->ntuple;
    EvalValue **el = xcalloc(n ? (size_t)n : 1, sizeof *el);
    for (int k = 0; k < n; k++) {
      const Shape *es = s && k < s->ntuple ? s->tuple[k] : v->tuple[k]->shape;
      el[k] = ev_copy(ev, v->tuple[k], es);
      if (!el[k]) {
        for (int j = 0; j < k; j++) ev_unref(ev, el[j]);
        free(el);
        return NULL;
      }
    }
    EvalValue *t = ev_tuple(ev, s ? s : v->shape, n, el);
    for (int k = 0; k < n; k++) ev_unref(ev, el[k]);
    free(el);
    return t;
  }
  if (!v->data) return ev_token(ev, s ? s : v->shape);
  EvalValue *c = ev_array_nozero(ev, s ? s : v->shape);
  if (!c) return NULL;
  memcpy(c->data, v->data, (size_t)(c->nbytes < v->nbytes ? c->nbytes : v->nbytes));
  return c;
}

/*
 * Element access
 */
static int64_t sext(uint64_t v, int bits) {
  if (bits >= 64) return (int64_t)v;
  uint64_t m = (uint64_t)1 << (bits - 1);
  v &= ((uint64_t)1 << bits) - 1;
  return (int64_t)((v ^ m) - m);
}

static uint64_t raw_bits(ElemType et, const uint8_t *p) {
  switch (et_bytes(et)) {
  case 1: return p[0];
  case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
  case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
  case 8: { uint64_t x; memcpy(&x, p, 8); return x; }
  default: return 0;
  }
}

static void put_raw(ElemType et, uint8_t *p, uint64_t v) {
  switch (et_bytes(et)) {
  case 1: p[0] = (uint8_t)v; break;
  case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
  case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
  case 8: memcpy(p, &v, 8); break;
  default: break;
  }
}

int64_t ev_get_s64(ElemType et, const uint8_t *p) {
  switch (et_class(et)) {
  case ETC_PRED: return p[0] != 0;
  case ETC_SINT: return sext(raw_bits(et, p), et_bits(et));
  case ETC_UINT: {
    int b = et_bits(et);
    uint64_t v = raw_bits(et, p);
    return (int64_t)(b >= 64 ? v : v & (((uint64_t)1 << b) - 1));
  }
  case ETC_FLOAT: {
    double x = ev_get_f64(et, p);
    if (x != x) return 0;
    if (x >= 9223372036854775808.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
  }
  case ETC_COMPLEX: {
    double x = ev_get_f64(et, p);
    return x != x ? 0 : (int64_t)x;
  }
  default: return 0;
  }
}

uint64_t ev_get_u64(ElemType et, const uint8_t *p) {
  if (et_class(et) == ETC_UINT) {
    int b = et_bits(et);
    uint64_t v = raw_bits(et, p);
    return b >= 64 ? v : v & (((uint64_t)1 << b) - 1);
  }
  return (uint64_t)ev_get_s64(et, p);
}

int64_t ev_get_index(ElemType et, const uint8_t *p) {
  if (et == ET_U64) {
    uint64_t v = ev_get_u64(et, p);
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
  }
  return ev_get_s64(et, p);
}

double ev_get_f64(ElemType et, const uint8_t *p) {
  switch (et) {
  case ET_F32: { float f; memcpy(&f, p, 4); return f; }
  case ET_F64: { double x; memcpy(&x, p, 8); return x; }
  case ET_C64: { float f; memcpy(&f, p, 4); return f; }
  case ET_C128: { double x; memcpy(&x, p, 8); return x; }
  default: break;
  }
  switch (et_class(et)) {
  case ETC_FLOAT: return fp_to_double(et_fp_format(et), raw_bits(et, p));
  case ETC_UINT: return (double)ev_get_u64(et, p);
  case ETC_PRED:
  case ETC_SINT: return (double)ev_get_s64(et, p);
  default: return 0;
  }
}

void ev_set_s64(ElemType et, uint8_t *p, int64_t v) {
  switch (et_class(et)) {
  case ETC_PRED: p[0] = v != 0; break;
  case ETC_SINT:
  case ETC_UINT: {
    int b = et_bits(et);
    put_raw(et, p, b >= 64 ? (uint64_t)v : (uint64_t)v & (((uint64_t)1 << b) - 1));
    break;
  }
  default: ev_set_f64(et, p, (double)v); break;
  }
}

void ev_set_f64(ElemType et, uint8_t *p, double v) {
  switch (et) {
  case ET_F32: { float f = (float)v; memcpy(p, &f, 4); return; }
  case ET_F64: memcpy(p, &v, 8); return;
  case ET_C64: { float f[2] = {(float)v, 0}; memcpy(p, f, 8); return; }
  case ET_C128: { double x[2] = {v, 0}; memcpy(p, x, 16); return; }
  default: break;
  }
  switch (et_class(et)) {
  case ETC_FLOAT: put_raw(et, p, fp_from_double(et_fp_format(et), v)); return;
  case ETC_PRED: p[0] = v != 0; return;
  default: {
    uint8_t tmp[8];
    memcpy(tmp, &v, 8);
    ev_convert_elems(ET_F64, tmp, et, p, 1);
    return;
  }
  }
}

/*
 * Lanes
 */

/* f32 -> bf16, round to nearest even; NaN -> quiet NaN of the same sign
 * (what fp_from_double and Eigen give, without the trip through double). */
static uint16_t bf16_from_float(float f) {
  uint32_t w;
  memcpy(&w, &f, 4);
  if ((w & 0x7fffffffu) > 0x7f800000u) return (w >> 31) ? 0xffc0 : 0x7fc0;
  w += 0x7fffu + ((w >> 16) & 1);
  return (uint16_t)(w >> 16);
}
Lane ev_lane(ElemType et) {
  switch (et_class(et)) {
  case ETC_FLOAT: return et == ET_F64 ? LANE_F64 : LANE_F32;
  case ETC_SINT: return LANE_S64;
  case ETC_COMPLEX: return et == ET_C128 ? LANE_C128 : LANE_C64;
  default: return LANE_U64;
  }
}

void ev_lane_load(ElemType et, const uint8_t *base, int64_t start, int n,
                  bool scalar, LaneBuf *dst) {
  int eb = et_bytes(et);
  const uint8_t *p = base + (scalar ? 0 : start * eb);
  int step = scalar ? 0 : eb;
  switch (et) {
  case ET_F32:
    if (!scalar) { memcpy(dst->f, p, (size_t)n * 4); return; }
    for (int k = 0; k < n; k++) memcpy(&dst->f[k], p, 4);
    return;
  case ET_F64:
    if (!scalar) { memcpy(dst->d, p, (size_t)n * 8); return; }
    for (int k = 0; k < n; k++) memcpy(&dst->d[k], p, 8);
    return;
  case ET_C64:
    for (int k = 0; k < n; k++, p += step) {
      float f[2];
      memcpy(f, p, 8);
      dst->cf[k] = CMPLXF(f[0], f[1]);
    }
    return;
  case ET_C128:
    for (int k = 0; k < n; k++, p += step) {
      double x[2];
      memcpy(x, p, 16);
      dst->cd[k] = CMPLX(x[0], x[1]);
    }
    return;
  case ET_S32:
    for (int k = 0; k < n; k++, p += step) { int32_t x; memcpy(&x, p, 4); dst->s[k] = x; }
    return;
  case ET_S64:
    if (!scalar) { memcpy(dst->s, p, (size_t)n * 8); return; }
    for (int k = 0; k < n; k++) memcpy(&dst->s[k], p, 8);
    return;
  case ET_U32:
    for (int k = 0; k < n; k++, p += step) { uint32_t x; memcpy(&x, p, 4); dst->u[k] = x; }
    return;
  case ET_PRED:
    for (int k = 0; k < n; k++, p += step) dst->u[k] = p[0] != 0;
    return;
  case ET_BF16:
    for (int k = 0; k < n; k++, p += step) {
      uint16_t h;
      memcpy(&h, p, 2);
      uint32_t w = (uint32_t)h << 16;
      memcpy(&dst->f[k], &w, 4);
    }
    return;
  default: break;
  }
  switch (ev_lane(et)) {
  case LANE_F32: {
    FpFormat f = et_fp_format(et);
    for (int k = 0; k < n; k++, p += step)
      dst->f[k] = (float)fp_to_double(f, raw_bits(et, p));
    return;
  }
  case LANE_S64:
    for (int k = 0; k < n; k++, p += step) dst->s[k] = ev_get_s64(et, p);
    return;
  case LANE_U64:
    for (int k = 0; k < n; k++, p += step) dst->u[k] = ev_get_u64(et, p);
    return;
  default: return;
  }
}

void ev_lane_store(ElemType et, uint8_t *base, int64_t start, int n,
                   const LaneBuf *src) {
  int eb = et_bytes(et);
  uint8_t *p = base + start * eb;
  switch (et) {
  case ET_F32: memcpy(p, src->f, (size_t)n * 4); return;
  case ET_F64: memcpy(p, src->d, (size_t)n * 8); return;
  case ET_S64: memcpy(p, src->s, (size_t)n * 8); return;
  case ET_U64: memcpy(p, src->u, (size_t)n * 8); return;
  case ET_C64:
    for (int k = 0; k < n; k++, p += 8) {
      float f[2] = {crealf(src->cf[k]), cimagf(src->cf[k])};
      memcpy(p, f, 8);
    }
    return;
  case ET_C128:
    for (int k = 0; k < n; k++, p += 16) {
      double x[2] = {creal(src->cd[k]), cimag(src->cd[k])};
      memcpy(p, x, 16);
    }
    return;
  case ET_S32:
    for (int k = 0; k < n; k++, p += 4) { int32_t x = (int32_t)(uint32_t)src->s[k]; memcpy(p, &x, 4); }
    return;
  case ET_U32:
    for (int k = 0; k < n; k++, p += 4) { uint32_t x = (uint32_t)src->u[k]; memcpy(p, &x, 4); }
    return;
  case ET_PRED:
    for (int k = 0; k < n; k++) p[k] = src->u[k] != 0;
    return;
  case ET_BF16:
    for (int k = 0; k < n; k++, p += 2) {
      uint16_t h = bf16_from_float(src->f[k]);
      memcpy(p, &h, 2);
    }
    return;
  default: break;
  }
  switch (ev_lane(et)) {
  case LANE_F32: {
    FpFormat f = et_fp_format(et);
    for (int k = 0; k < n; k++, p += eb) put_raw(et, p, fp_from_double(f, src->f[k]));
    return;
  }
  case LANE_S64:
    for (int k = 0; k < n; k++, p += eb) ev_set_s64(et, p, src->s[k]);
    return;
  case LANE_U64:
    for (int k = 0; k < n; k++, p += eb) ev_set_s64(et, p, (int64_t)src->u[k]);
    return;
  default: return;
  }
}

/*
 * Conversion
 */
static void int_limits(ElemType et, double *lo, double *hi_excl,
                       int64_t *smin, int64_t *smax, uint64_t *umax) {
  int b = et_bits(et);
  if (et_class(et) == ETC_SINT) {
    *smin = b >= 64 ? INT64_MIN : -((int64_t)1 << (b - 1));
    *smax = b >= 64 ? INT64_MAX : ((int64_t)1 << (b - 1)) - 1;
    *lo = (double)*smin;
    *hi_excl = ldexp(1.0, b - 1);
    *umax = 0;
  } else {
    *smin = 0;
    *smax = 0;
    *umax = b >= 64 ? UINT64_MAX : ((uint64_t)1 << b) - 1;
    *lo = 0;
    *hi_excl = ldexp(1.0, b);
  }
}

/* A real value x (exact) to an integer type, saturating; NaN -> 0. */
static void float_to_int(ElemType to, uint8_t *p, double x) {
  double lo, hi;
  int64_t smin, smax;
  uint64_t umax;
  int_limits(to, &lo, &hi, &smin, &smax, &umax);
  if (x != x) { ev_set_s64(to, p, 0); return; }
  if (et_class(to) == ETC_SINT) {
    int64_t v = x >= hi ? smax : x <= lo ? smin : (int64_t)x;
    ev_set_s64(to, p, v);
  } else {
    uint64_t v = x >= hi ? umax : x <= 0 ? 0 : (uint64_t)x;
    ev_set_s64(to, p, (int64_t)v);
  }
}

/* A real value of source type `from` (x exact; ix/ux the integer value when
 * from is an integer) stored as real type `to`. */
static void real_to_float(ElemType from, double x, int64_t ix, uint64_t ux,
                          ElemType to, uint8_t *p) {
  ElemClass fc = et_class(from);
  bool is_int = fc == ETC_SINT || fc == ETC_UINT || fc == ETC_PRED;
  if (to == ET_F64) {
    double d = fc == ETC_SINT ? (double)ix : fc == ETC_UINT ? (double)ux : x;
    memcpy(p, &d, 8);
    return;
  }
  float f = fc == ETC_SINT ? (float)ix : fc == ETC_UINT ? (float)ux : (float)x;
  if (to == ET_F32) { memcpy(p, &f, 4); return; }
  FpFormat fmt = et_fp_format(to);
  double v = x;
  if (is_int || (to == ET_BF16 && from == ET_F64)) v = f;
  put_raw(to, p, fp_from_double(fmt, v));
}

void ev_convert_elems(ElemType from, const uint8_t *src, ElemType to,
                      uint8_t *dst, int64_t n) {
  int fb = et_bytes(from), tb = et_bytes(to);
  if (from == to) {
    memcpy(dst, src, (size_t)(n * fb));
    return;
  }
  /* Many elements of a 1- or 2-byte type: convert each possible encoding
   * once and look the results up (exactly the same conversions). */
  if ((fb == 1 && n > 1024) || (fb == 2 && n > 4 * 65536)) {
    int64_t ncodes = fb == 1 ? 256 : 65536;
    uint8_t *codes = xmalloc((size_t)(ncodes * fb));
    uint8_t *table = xmalloc((size_t)(ncodes * tb));
    for (int64_t c = 0; c < ncodes; c++) {
      codes[c * fb] = (uint8_t)c;
      if (fb == 2) codes[c * fb + 1] = (uint8_t)(c >> 8);
    }
    ev_convert_elems(from, codes, to, table, ncodes);
    for (int64_t k = 0; k < n; k++, src += fb, dst += tb) {
      int64_t c = fb == 1 ? src[0] : (int64_t)src[0] | (int64_t)src[1] << 8;
      memcpy(dst, table + c * tb, (size_t)tb);
    }
    free(codes);
    free(table);
    return;
  }
  ElemClass fc = et_class(from), tc = et_class(to);
  for (int64_t k = 0; k < n; k++, src += fb, dst += tb) {
    double x = 0, xi = 0;
    int64_t ix = 0;
    uint64_t ux = 0;
    switch (fc) {
    case ETC_PRED: ix = src[0] != 0; ux = (uint64_t)ix; x = (double)ix; break;
    case ETC_SINT: ix = ev_get_s64(from, src); x = (double)ix; break;
    case ETC_UINT: ux = ev_get_u64(from, src); x = (double)ux; break;
    case ETC_FLOAT: x = ev_get_f64(from, src); break;
    case ETC_COMPLEX:
      if (from == ET_C64) {
        float f[2];
        memcpy(f, src, 8);
        x = f[0];
        xi = f[1];
      } else {
        double d[2];
        memcpy(d, src, 16);
        x = d[0];
        xi = d[1];
      }
      break;
    default: break;
    }
    ElemType rfrom = fc == ETC_COMPLEX ? et_complex_component(from) : from;
    switch (tc) {
    case ETC_PRED:
      dst[0] = fc == ETC_SINT ? ix != 0 : fc == ETC_UINT ? ux != 0
             : (x != 0 || xi != 0);
      break;
    case ETC_SINT:
    case ETC_UINT:
      if (fc == ETC_SINT || fc == ETC_PRED) ev_set_s64(to, dst, ix);
      else if (fc == ETC_UINT) ev_set_s64(to, dst, (int64_t)ux);
      else float_to_int(to, dst, x);
      break;
    case ETC_FLOAT:
      real_to_float(rfrom, x, ix, ux, to, dst);
      break;
    case ETC_COMPLEX: {
      ElemType comp = et_complex_component(to);
      int cb = et_bytes(comp);
      real_to_float(rfrom, x, ix, ux, comp, dst);
      if (fc == ETC_COMPLEX) real_to_float(rfrom, xi, 0, 0, comp, dst + cb);
      else memset(dst + cb, 0, (size_t)cb);
      break;
    }
    default: memset(dst, 0, (size_t)tb); break;
    }
  }
}
