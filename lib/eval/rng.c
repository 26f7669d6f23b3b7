/*
 * rng.c - rng-bit-generator, bit-exact with XLA, and the `rng` op.
 *
 * rng-bit-generator follows XLA's RngBitGeneratorExpander and its builder
 * library (the same code the CPU and GPU compilers run; RNG_DEFAULT means
 * Philox there): the key is state[0]; three-fry counts from state[1], one
 * 64-bit counter per pair of 32-bit outputs with the shape split in halves
 * along its first even (else largest) dimension; Philox4x32-10 counts a
 * 128-bit counter (state[1..2], or (state[1], state[0]) for a two-word
 * state), emitting four words per counter value in round-robin order.
 * Outputs narrower than 32 bits keep the low bits of a 32-bit draw.
 *
 * The `rng` op draws what XLA's CPU compiler makes of it (XLA's own
 * evaluator draws from std::minstd_rand0, which nothing reproduces): the
 * RngExpander's Philox computation keyed by lib/hlo/rng_keys.c, uniform
 * floats from the top mantissa bits, integers by remainder, normal by
 * Box-Muller in the type's arithmetic, each rng counting from its own state
 * as rng-get-and-update-state does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evalp.h"

static uint32_t rotl32(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }

void ev_threefry2x32(uint32_t key0, uint32_t key1, uint32_t *x0, uint32_t *x1) {
  static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  uint32_t ks[3] = {key0, key1, 0x1BD11BDAu ^ key0 ^ key1};
  uint32_t a = *x0 + ks[0], b = *x1 + ks[1];
  for (int blk = 0; blk < 5; blk++) {
    const int *r = (blk % 2 == 0) ? rot : rot + 4;
    for (int k = 0; k < 4; k++) {
      a += b;
      b = rotl32(b, r[k]);
      b ^= a;
    }
    a += ks[(blk + 1) % 3];
    b += ks[(blk + 2) % 3] + (uint32_t)(blk + 1);
  }
  *x0 = a;
  *x1 = b;
}

static void philox4x32(uint32_t k0, uint32_t k1, uint32_t x[4]) {
  for (int round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)x[0] * 0xD2511F53u;
    uint64_t p1 = (uint64_t)x[2] * 0xCD9E8D57u;
    uint32_t n0 = (uint32_t)(p1 >> 32) ^ x[1] ^ k0;
    uint32_t n1 = (uint32_t)p1;
    uint32_t n2 = (uint32_t)(p0 >> 32) ^ x[3] ^ k1;
    uint32_t n3 = (uint32_t)p0;
    x[0] = n0;
    x[1] = n1;
    x[2] = n2;
    x[3] = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

/* Stores the low `bytes` bytes of v as element k. */
static void put_bits(uint8_t *out, int eb, int64_t k, uint64_t v) {
  memcpy(out + k * eb, &v, (size_t)eb);
}

/* Three-fry 32-bit (or narrower) outputs for `shape`; returns the new
 * counter. */
static uint64_t threefry_bits32(uint64_t key, uint64_t ctr, const Shape *s,
                                uint8_t *out, int eb) {
  int rank = s->rank;
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  if (rank == 0) {
    uint32_t x0 = (uint32_t)ctr, x1 = (uint32_t)(ctr >> 32);
    ev_threefry2x32(k0, k1, &x0, &x1);
    put_bits(out, eb, 0, x0);
    return ctr + 1;
  }
  int split = -1;
  for (int d = 0; d < rank; d++)
    if (s->dims[d] % 2 == 0) { split = d; break; }
  if (split < 0)
    for (int d = 0; d < rank; d++)
      if (split < 0 || s->dims[d] > s->dims[split]) split = d;
  /* half shape: dims with dims[split] -> ceil/2 */
  int64_t hdims[64], hst[64], ost[64];
  int64_t hn = 1;
  for (int d = 0; d < rank; d++) {
    hdims[d] = d == split ? (s->dims[d] + 1) / 2 : s->dims[d];
    hn *= hdims[d];
  }
  int64_t st = 1;
  for (int d = rank - 1; d >= 0; d--) {
    hst[d] = st;
    st *= hdims[d];
  }
  ev_strides(s, ost);
  int64_t idx[64] = {0};
  for (int64_t h = 0; h < hn; h++) {
    uint64_t in = ctr + (uint64_t)h;
    uint32_t x[2] = {(uint32_t)in, (uint32_t)(in >> 32)};
    ev_threefry2x32(k0, k1, &x[0], &x[1]);
    for (int w = 0; w < 2; w++) {
      int64_t j = idx[split] * 2 + w;
      if (j >= s->dims[split]) continue;
      int64_t o = 0;
      for (int d = 0; d < rank; d++) o += (d == split ? j : idx[d]) * ost[d];
      put_bits(out, eb, o, x[w]);
    }
    for (int d = rank - 1; d >= 0; d--) {
      if (++idx[d] < hdims[d]) break;
      idx[d] = 0;
    }
  }
  (void)hst;
  return ctr + (uint64_t)hn;
}

static uint64_t threefry_bits64(uint64_t key, uint64_t ctr, int64_t n, uint8_t *out) {
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  for (int64_t j = 0; j < n; j++) {
    uint64_t in = ctr + (uint64_t)j;
    uint32_t x0 = (uint32_t)in, x1 = (uint32_t)(in >> 32);
    ev_threefry2x32(k0, k1, &x0, &x1);
    put_bits(out, 8, j, (uint64_t)x0 | ((uint64_t)x1 << 32));
  }
  return ctr + (uint64_t)n;
}

/* Philox words: counter (lo, hi) + j for j < nvec, 4 words each, round
 * robin; emits the first `nwords` words through put. */
static void philox_words(uint64_t key, uint64_t lo, uint64_t hi, int64_t nwords,
                         uint32_t *words) {
  uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);
  int64_t nvec = (nwords + 3) / 4;
  for (int64_t j = 0; j < nvec; j++) {
    uint64_t l = lo + (uint64_t)j;
    uint64_t h = l < lo ? hi + 1 : hi;
    uint32_t x[4] = {(uint32_t)l, (uint32_t)(l >> 32), (uint32_t)h, (uint32_t)(h >> 32)};
    philox4x32(k0, k1, x);
    for (int w = 0; w < 4; w++)
      if (4 * j + w < nwords) words[4 * j + w] = x[w];
  }
}

EvalValue *eval_rng_bit_generator(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *ss = i->ops[0]->shape, *rs = i->shape;
  if (i->nops == 1 && shape_is_array(ss) && ss->et != ET_U64) {
    char what[96];
    snprintf(what, sizeof what, "rng-bit-generator with a %s state", et_name(ss->et));
    ev_unsupported(ev, i, what);
    return NULL;
  }
  if (i->nops != 1 || !shape_is_array(ss) || ss->rank != 1 || ss->et != ET_U64 ||
      ss->dims[0] < 2 || rs->et != ET_TUPLE || rs->ntuple != 2 ||
      !shape_is_array(rs->tuple[1]) || !shape_is_array(rs->tuple[0]) ||
      ev_elems(rs->tuple[0]) != ss->dims[0]) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed rng-bit-generator");
    return NULL;
  }
  const Shape *ds = rs->tuple[1];
  int bits = et_bits(ds->et), eb = et_bytes(ds->et);
  ElemClass cls = et_class(ds->et);
  if (bits > 64 || bits < 1 || cls == ETC_PRED || cls == ETC_COMPLEX ||
      (bits > 32 && bits != 64)) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "rng-bit-generator cannot produce %s", et_name(ds->et));
    return NULL;
  }
  uint64_t st[3] = {0, 0, 0};
  int nst = (int)(ss->dims[0] < 3 ? ss->dims[0] : 3);
  memcpy(st, a[0]->data, (size_t)nst * 8);
  uint64_t key = st[0];
  EvalValue *state = ev_array_nozero(ev, rs->tuple[0]);
  EvalValue *data = state ? ev_array(ev, ds) : NULL;
  if (!data) {
    ev_unref(ev, state);
    return NULL;
  }
  memcpy(state->data, a[0]->data, (size_t)state->nbytes);
  int64_t n = ev_elems(ds);
  RngAlgo algo = i->rng_algo == RNG_THREE_FRY ? RNG_THREE_FRY : RNG_PHILOX;
  uint64_t *out_state = (uint64_t *)state->data;
  if (algo == RNG_THREE_FRY) {
    uint64_t ctr = st[1], next;
    if (bits == 64) next = threefry_bits64(key, ctr, n, data->data);
    else next = threefry_bits32(key, ctr, ds, data->data, eb);
    memcpy(&out_state[1], &next, 8);
  } else {
    uint64_t lo = st[1], hi = ss->dims[0] >= 3 ? st[2] : st[0];
    int64_t nwords = bits == 64 ? 2 * n : n;
    uint32_t *words = ev_scratch(ev, i, (nwords + 4) * 4);
    if (!words) {
      ev_unref(ev, state);
      ev_unref(ev, data);
      return NULL;
    }
    philox_words(key, lo, hi, nwords, words);
    if (bits == 64) {
      /* bits64[0] = w0|w1<<32, bits64[1] = w2|w3<<32, interleaved */
      for (int64_t j = 0; j < n; j++) {
        uint64_t v = (uint64_t)words[2 * j] | ((uint64_t)words[2 * j + 1] << 32);
        put_bits(data->data, 8, j, v);
      }
    } else {
      for (int64_t j = 0; j < n; j++) put_bits(data->data, eb, j, words[j]);
    }
    ev_scratch_free(ev, words, (nwords + 4) * 4);
    uint64_t nvec = (uint64_t)((nwords + 3) / 4);
    uint64_t nlo = lo + nvec, nhi = nlo < lo ? hi + 1 : hi;
    memcpy(&out_state[1], &nlo, 8);
    if (ss->dims[0] >= 3) memcpy(&out_state[2], &nhi, 8);
  }
  /* sub-byte integer outputs hold their low bits */
  if (et_bits(ds->et) < 8)
    for (int64_t j = 0; j < n; j++) ev_set_s64(ds->et, data->data + j, data->data[j]);
  EvalValue *el[2] = {state, data};
  EvalValue *t = ev_tuple(ev, rs, 2, el);
  ev_unref(ev, state);
  ev_unref(ev, data);
  return t;
}

/*
 * The rng op, as XLA's CPU compiler runs it: RngExpander's Philox
 * computation (passes/rng_philox.c builds the same one as HLO), keyed by
 * hlo_rng_key of the rng's place in the expansion order, counted from the
 * rng's own 128-bit state.
 */
typedef struct EvRngState {
  const HloInstr *i;
  uint64_t lo, hi;
} EvRngState;

/* XLA's CPU runtime starts every rng-get-and-update-state at this
 * (kRngStateInitialValue) and adds its delta at each execution. */
enum { RNG_STATE_INIT = 0x7012395 };

/* The state of i before this execution; advances it by delta words. */
static void take_state(Eval *ev, const HloInstr *i, uint64_t delta,
                       uint64_t *lo, uint64_t *hi) {
  EvRngState *s = NULL;
  for (int k = 0; k < ev->nrng_states && !s; k++)
    if (ev->rng_states[k].i == i) s = &ev->rng_states[k];
  if (!s) {
    ev->rng_states = xreallocarray(ev->rng_states, (size_t)ev->nrng_states + 1,
                                   sizeof *ev->rng_states);
    s = &ev->rng_states[ev->nrng_states++];
    *s = (EvRngState){i, RNG_STATE_INIT, 0};
  }
  *lo = s->lo;
  *hi = s->hi;
  uint64_t nlo = s->lo + delta;
  s->hi += nlo < s->lo;
  s->lo = nlo;
}

void ev_rng_free(Eval *ev) {
  free(ev->rng_states);
  free(ev->rng_order);
  ev->rng_states = NULL;
  ev->rng_order = NULL;
  ev->nrng_states = 0;
  ev->nrng_order = -1;
}

static uint64_t rng_key(Eval *ev, const HloInstr *i) {
  if (ev->nrng_order < 0) ev->nrng_order = hlo_rng_order(ev->m, &ev->rng_order);
  int k = 0;
  while (k < ev->nrng_order && ev->rng_order[k] != i) k++;
  return hlo_rng_key(k);
}

/* Uniform [lo, hi) of type et (f32 or f64) from draw j of words. */
static double uniform_at(ElemType et, const uint32_t *words, int64_t j, double lo, double hi) {
  if (et == ET_F64) {
    uint64_t b = (uint64_t)words[2 * j] | ((uint64_t)words[2 * j + 1] << 32);
    double u = (double)(b >> 12) * 0x1p-52;
    double range = hi - lo;
    double v = u * range;
    return v + lo;
  }
  float u = (float)(words[j] >> 9) * 0x1p-23f;
  float range = (float)hi - (float)lo;
  float v = u * range;
  return (double)(v + (float)lo);
}

/* Box-Muller of XLA's prng library on (x0, x1) in type et: y0 (sin) or y1
 * (cos) by `second`. */
static double box_muller(ElemType et, double x0, double x1, bool second) {
  if (et == ET_F64) {
    double u1 = x0 > (double)1.0e-7f ? x0 : (double)1.0e-7f;
    double v1 = 2.0 * M_PI * x1;
    double u2 = sqrt(-2.0 * log(u1));
    return (second ? cos(v1) : sin(v1)) * u2;
  }
  float f0 = (float)x0, f1 = (float)x1;
  float u1 = f0 > 1.0e-7f ? f0 : 1.0e-7f;
  float v1 = (float)(2.0 * M_PI) * f1;
  float l = -2.0f * logf(u1);
  float u2 = sqrtf(l);
  return (double)((second ? cosf(v1) : sinf(v1)) * u2);
}

/* SplitShapeIntoHalves: s as (pre, d, post) around the split dimension d
 * (the first even, else the largest); a scalar is (1, 1, 1). */
static void split_halves(const Shape *s, int64_t *pre, int64_t *d, int64_t *post) {
  *pre = *d = *post = 1;
  if (s->rank == 0) return;
  int split = -1;
  for (int k = 0; k < s->rank && split < 0; k++)
    if (s->dims[k] % 2 == 0) split = k;
  if (split < 0) {
    split = 0;
    for (int k = 1; k < s->rank; k++)
      if (s->dims[k] > s->dims[split]) split = k;
  }
  for (int k = 0; k < s->rank; k++) {
    if (k < split) *pre *= s->dims[k];
    else if (k > split) *post *= s->dims[k];
  }
  *d = s->dims[split];
}

/* NormalFloatingPointDistribution: uniform draws over the split shape
 * (pre, ceil(d/2), 2, post); output index j along d takes the Box-Muller
 * pair at half index j / 2, sine for even j, cosine for odd. */
static void normal(const HloInstr *i, ElemType ct, const uint32_t *words, double mean,
                   double sigma, EvalValue *r) {
  const Shape *s = i->shape;
  int64_t pre, d, post;
  split_halves(s, &pre, &d, &post);
  int eb = et_bytes(s->et);
  for (int64_t p = 0; p < pre; p++)
    for (int64_t j = 0; j < d; j++)
      for (int64_t q = 0; q < post; q++) {
        int64_t h = j / 2, base = ((p * ((d + 1) / 2) + h) * 2) * post + q;
        double x0 = uniform_at(ct, words, base, 0.0, 1.0);
        double x1 = uniform_at(ct, words, base + post, 0.0, 1.0);
        double y = box_muller(ct, x0, x1, j % 2 == 1);
        double v;
        if (ct == ET_F64) {
          double t = sigma * y;
          v = mean + t;
        } else {
          float t = (float)sigma * (float)y;
          v = (double)((float)mean + t);
        }
        ev_set_f64(s->et, r->data + ((p * d + j) * post + q) * eb, v);
      }
}

EvalValue *eval_rng(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (i->nops < 2 || !shape_is_array(s) || ev_elems(i->ops[0]->shape) != 1 ||
      ev_elems(i->ops[1]->shape) != 1 || i->ops[0]->shape->et != s->et ||
      i->ops[1]->shape->et != s->et) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed rng");
    return NULL;
  }
  ElemType et = s->et;
  /* ConvertSmallFpRngToF32Rng: f16 and bf16 draw in f32 */
  ElemType ct = et == ET_F16 || et == ET_BF16 ? ET_F32 : et;
  bool fp = ct == ET_F32 || ct == ET_F64;
  bool in = ct == ET_S32 || ct == ET_U32 || ct == ET_S64 || ct == ET_U64;
  if ((i->rng_dist == RNG_NORMAL && !fp) || (i->rng_dist == RNG_UNIFORM && !fp && !in) ||
      (i->rng_dist != RNG_NORMAL && i->rng_dist != RNG_UNIFORM)) {
    char what[96];
    snprintf(what, sizeof what, "rng %s of %s (XLA's expansion has none)",
             i->rng_dist == RNG_NORMAL ? "rng_normal" : "rng_uniform", et_name(et));
    ev_unsupported(ev, i, what);
    return NULL;
  }
  int64_t n = ev_elems(s);
  int wpe = et_bits(ct) / 32;              /* 32-bit words per element */
  int64_t drawn = n;                       /* elements the generator makes */
  if (i->rng_dist == RNG_NORMAL) {
    int64_t pre, d, post;
    split_halves(s, &pre, &d, &post);
    drawn = pre * ((d + 1) / 2) * 2 * post;
  }
  uint64_t lo, hi;
  take_state(ev, i, (uint64_t)(n * wpe), &lo, &hi);
  uint64_t key = rng_key(ev, i);
  int64_t nwords = drawn * wpe;
  uint32_t *words = ev_scratch(ev, i, (nwords + 4) * 4);
  if (!words) return NULL;
  philox_words(key, lo, hi, nwords, words);
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) {
    ev_scratch_free(ev, words, (nwords + 4) * 4);
    return NULL;
  }
  int eb = et_bytes(et);
  if (fp) {
    double p = ev_get_f64(et, a[0]->data), q = ev_get_f64(et, a[1]->data);
    if (i->rng_dist == RNG_NORMAL)
      normal(i, ct, words, p, q, r);
    else
      for (int64_t k = 0; k < n; k++)
        ev_set_f64(et, r->data + k * eb, uniform_at(ct, words, k, p, q));
  } else {
    /* ConvertRandomBitsToUniformInt, wrapping in the type's width */
    uint64_t mask = wpe == 2 ? ~0ULL : 0xFFFFFFFFULL;
    uint64_t p = ev_get_u64(et, a[0]->data) & mask, q = ev_get_u64(et, a[1]->data) & mask;
    uint64_t range = (q - p) & mask;
    for (int64_t k = 0; k < n; k++) {
      uint64_t bits = wpe == 2 ? (uint64_t)words[2 * k] | ((uint64_t)words[2 * k + 1] << 32)
                               : words[k];
      uint64_t dist = range ? bits % range : bits;
      uint64_t half = dist >> 1;
      ev_set_s64(et, r->data + k * eb, (int64_t)((p + half + (dist - half)) & mask));
    }
  }
  ev_scratch_free(ev, words, (nwords + 4) * 4);
  return r;
}

/* rng-get-and-update-state: this instruction's 128-bit state (low word
 * first), then advanced by its delta, as XLA's CPU runtime does (a fresh
 * executable starts at 0x7012395). */
EvalValue *eval_rng_get_and_update_state(Eval *ev, const HloInstr *i) {
  const Shape *s = i->shape;
  if (!shape_is_array(s) || s->et != ET_U64 || ev_elems(s) != 2) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "rng-get-and-update-state must return u64[2]");
    return NULL;
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  uint64_t v[2];
  take_state(ev, i, (uint64_t)i->rng_delta, &v[0], &v[1]);
  memcpy(r->data, v, 16);
  return r;
}
