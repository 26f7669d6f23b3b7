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
 * The `rng` op is not reproducible across implementations (XLA's evaluator
 * uses std::minstd_rand0 and libstdc++ distributions).  Here it draws from
 * Philox keyed by the evaluation's seed: uniform in [low, high) (floats
 * re-drawn when rounding reaches high), normal by Box-Muller.
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
 * The rng op
 */
static uint32_t next_word(Eval *ev) {
  uint64_t c = ev->rng_counter++;
  uint32_t x[4] = {(uint32_t)(c >> 2), (uint32_t)(c >> 34), 0x52414e47u, 0};
  philox4x32((uint32_t)ev->o.rng_seed, (uint32_t)(ev->o.rng_seed >> 32), x);
  return x[c & 3];
}

static double next_unit(Eval *ev) {   /* [0, 1) with 53 bits */
  uint64_t hi = next_word(ev), lo = next_word(ev);
  return (double)(((hi << 32) | lo) >> 11) * 0x1p-53;
}

EvalValue *eval_rng(Eval *ev, const HloInstr *i, EvalValue *const *a) {
  const Shape *s = i->shape;
  if (i->nops != 2 || !shape_is_array(s) || ev_elems(i->ops[0]->shape) != 1 ||
      ev_elems(i->ops[1]->shape) != 1 || i->ops[0]->shape->et != s->et ||
      i->ops[1]->shape->et != s->et) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "malformed rng");
    return NULL;
  }
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  int64_t n = ev_elems(s);
  int eb = et_bytes(s->et);
  ElemType et = s->et;
  if (et_is_float(et)) {
    double p = ev_get_f64(et, a[0]->data), q = ev_get_f64(et, a[1]->data);
    for (int64_t k = 0; k < n; k++) {
      uint8_t *o = r->data + k * eb;
      if (i->rng_dist == RNG_NORMAL) {
        double u1 = next_unit(ev), u2 = next_unit(ev);
        if (u1 < 1e-300) u1 = 1e-300;
        ev_set_f64(et, o, p + q * sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2));
        continue;
      }
      for (int tries = 0;; tries++) {
        ev_set_f64(et, o, p + (q - p) * next_unit(ev));
        double v = ev_get_f64(et, o);
        if ((v >= p && v < q) || tries > 64) break;
      }
    }
  } else if (et_is_int(et) && i->rng_dist == RNG_UNIFORM) {
    int64_t lo = ev_get_s64(et, a[0]->data), hi = ev_get_s64(et, a[1]->data);
    uint64_t range = hi > lo ? (uint64_t)hi - (uint64_t)lo : 1;
    for (int64_t k = 0; k < n; k++) {
      uint64_t w = ((uint64_t)next_word(ev) << 32) | next_word(ev);
      ev_set_s64(et, r->data + k * eb, (int64_t)((uint64_t)lo + w % range));
    }
  } else if (et == ET_PRED && i->rng_dist == RNG_UNIFORM) {
    for (int64_t k = 0; k < n; k++) r->data[k] = next_word(ev) & 1;
  } else {
    ev_unref(ev, r);
    ev_unsupported(ev, i, "rng of this distribution and type");
    return NULL;
  }
  return r;
}

/* rng-get-and-update-state: (seed, counter) of this evaluation, the counter
 * advancing by the instruction's delta (1 when absent) per call. */
EvalValue *eval_rng_get_and_update_state(Eval *ev, const HloInstr *i) {
  const Shape *s = i->shape;
  if (!shape_is_array(s) || s->et != ET_U64 || ev_elems(s) != 2) {
    ev_fail(ev, i, EVAL_ERR_INVALID, "rng-get-and-update-state must return u64[2]");
    return NULL;
  }
  int64_t delta = i->rng_delta;
  EvalValue *r = ev_array_nozero(ev, s);
  if (!r) return NULL;
  uint64_t v[2] = {ev->o.rng_seed, ev->rng_counter};
  memcpy(r->data, v, 16);
  ev->rng_counter += (uint64_t)delta;
  return r;
}
