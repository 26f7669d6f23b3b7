/*
 * test_codegen.c - the LLVM code generator (emitters/codegen.h) checked
 * against the reference interpreter: small HLO modules whose entry root is
 * one fusion (or one plain op) are compiled for the host into a shared
 * object, loaded with dlopen and run on the same inputs as eval_module; the
 * results must agree.  The same modules are compiled to PTX for sm_90 and
 * checked with ptxas (which must be installed: a missing ptxas fails).
 */
#include <criterion/criterion.h>

#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../emitters/codegen.h"
#include "../../lib/eval/eval.h"

extern char **environ;

typedef struct Case {
  const char *name;
  const char *hlo;
  const char *inputs[4];          /* input specs; NULL: random */
  double atol, rtol;
} Case;

#define F(body) "HloModule m\n\n" body

static const Case Cases[] = {
  {"chain", F(
    "%f (p0: f32[4,33], p1: f32[4,33]) -> f32[4,33] {\n"
    "  %p0 = f32[4,33]{1,0} parameter(0)\n"
    "  %p1 = f32[4,33]{1,0} parameter(1)\n"
    "  %a = f32[4,33]{1,0} add(%p0, %p1)\n"
    "  %m = f32[4,33]{1,0} multiply(%a, %p0)\n"
    "  %s = f32[4,33]{1,0} subtract(%m, %p1)\n"
    "  %d = f32[4,33]{1,0} divide(%s, %p1)\n"
    "  %mx = f32[4,33]{1,0} maximum(%d, %p0)\n"
    "  %mn = f32[4,33]{1,0} minimum(%mx, %a)\n"
    "  %c = pred[4,33]{1,0} compare(%mn, %p1), direction=GT\n"
    "  %n = f32[4,33]{1,0} negate(%mn)\n"
    "  ROOT %r = f32[4,33]{1,0} select(%c, %n, %a)\n"
    "}\n\n"
    "ENTRY %e (a: f32[4,33], b: f32[4,33]) -> f32[4,33] {\n"
    "  %a = f32[4,33]{1,0} parameter(0)\n"
    "  %b = f32[4,33]{1,0} parameter(1)\n"
    "  ROOT %r = f32[4,33]{1,0} fusion(%a, %b), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 1e-6, 1e-6},
  {"unary_f32", F(
    "%f (p: f32[1024]) -> (f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], pred[1024]) {\n"
    "  %p = f32[1024]{0} parameter(0)\n"
    "  %ab = f32[1024]{0} abs(%p)\n"
    "  %c = f32[] constant(0.25)\n"
    "  %cb = f32[1024]{0} broadcast(%c), dimensions={}\n"
    "  %q = f32[1024]{0} add(%ab, %cb)\n"
    "  %o0 = f32[1024]{0} exponential(%p)\n"
    "  %o1 = f32[1024]{0} log(%q)\n"
    "  %o2 = f32[1024]{0} log-plus-one(%p)\n"
    "  %o3 = f32[1024]{0} exponential-minus-one(%p)\n"
    "  %o4 = f32[1024]{0} tanh(%p)\n"
    "  %o5 = f32[1024]{0} logistic(%p)\n"
    "  %o6 = f32[1024]{0} sqrt(%q)\n"
    "  %o7 = f32[1024]{0} rsqrt(%q)\n"
    "  %o8 = f32[1024]{0} cbrt(%p)\n"
    "  %o9 = f32[1024]{0} sine(%p)\n"
    "  %o10 = f32[1024]{0} cosine(%p)\n"
    "  %o11 = f32[1024]{0} tan(%p)\n"
    "  %o12 = f32[1024]{0} erf(%p)\n"
    "  %o13 = f32[1024]{0} sign(%p)\n"
    "  %o14 = f32[1024]{0} floor(%p)\n"
    "  %o15 = f32[1024]{0} ceil(%p)\n"
    "  %o16 = f32[1024]{0} round-nearest-afz(%p)\n"
    "  %o17 = f32[1024]{0} round-nearest-even(%p)\n"
    "  %o18 = f32[1024]{0} atan2(%p, %q)\n"
    "  %o19 = f32[1024]{0} power(%q, %p)\n"
    "  %o20 = pred[1024]{0} is-finite(%o1)\n"
    "  ROOT %t = (f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, pred[1024]{0}) tuple(%o0, %o1, %o2, %o3, %o4, %o5, %o6, %o7, %o8, %o9, %o10, %o11, %o12, %o13, %o14, %o15, %o16, %o17, %o18, %o19, %o20)\n"
    "}\n\n"
    "ENTRY %e (a: f32[1024]) -> (f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], f32[1024], pred[1024]) {\n"
    "  %a = f32[1024]{0} parameter(0)\n"
    "  ROOT %r = (f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, f32[1024]{0}, pred[1024]{0}) fusion(%a), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 1e-6, 1e-6},
  {"special_f32", F(
    "%f (p: f32[12], q: f32[12]) -> (f32[12], f32[12], f32[12], f32[12], f32[12], pred[12], pred[12]) {\n"
    "  %p = f32[12]{0} parameter(0)\n"
    "  %q = f32[12]{0} parameter(1)\n"
    "  %mx = f32[12]{0} maximum(%p, %q)\n"
    "  %mn = f32[12]{0} minimum(%p, %q)\n"
    "  %rm = f32[12]{0} remainder(%p, %q)\n"
    "  %pw = f32[12]{0} power(%p, %q)\n"
    "  %sg = f32[12]{0} sign(%p)\n"
    "  %to = pred[12]{0} compare(%p, %q), direction=LT, type=TOTALORDER\n"
    "  %ne = pred[12]{0} compare(%p, %q), direction=NE\n"
    "  ROOT %t = (f32[12]{0}, f32[12]{0}, f32[12]{0}, f32[12]{0}, f32[12]{0}, pred[12]{0}, pred[12]{0}) tuple(%mx, %mn, %rm, %pw, %sg, %to, %ne)\n"
    "}\n\n"
    "ENTRY %e (a: f32[12], b: f32[12]) -> (f32[12], f32[12], f32[12], f32[12], f32[12], pred[12], pred[12]) {\n"
    "  %a = f32[12]{0} parameter(0)\n"
    "  %b = f32[12]{0} parameter(1)\n"
    "  ROOT %r = (f32[12]{0}, f32[12]{0}, f32[12]{0}, f32[12]{0}, f32[12]{0}, pred[12]{0}, pred[12]{0}) fusion(%a, %b), kind=kLoop, calls=%f\n"
    "}\n"),
   {"12xf32=nan 1 -0 0 inf -inf 2 -3 0 nan 5.5 -7",
    "12xf32=1 nan 0 -0 inf 2 -inf 0 0 nan -2 3"}, 0, 0},
  {"f64_math", F(
    "%f (p: f64[40]) -> (f64[40], f64[40], f64[40]) {\n"
    "  %p = f64[40]{0} parameter(0)\n"
    "  %e = f64[40]{0} exponential(%p)\n"
    "  %t = f64[40]{0} tanh(%p)\n"
    "  %l = f64[40]{0} log-plus-one(%p)\n"
    "  ROOT %r = (f64[40]{0}, f64[40]{0}, f64[40]{0}) tuple(%e, %t, %l)\n"
    "}\n\n"
    "ENTRY %e (a: f64[40]) -> (f64[40], f64[40], f64[40]) {\n"
    "  %a = f64[40]{0} parameter(0)\n"
    "  ROOT %r = (f64[40]{0}, f64[40]{0}, f64[40]{0}) fusion(%a), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 1e-12, 1e-12},
  {"converts", F(
    "%f (p: f32[10]) -> (s32[10], u8[10], s8[10], bf16[10], f16[10], s64[10], u32[10], pred[10]) {\n"
    "  %p = f32[10]{0} parameter(0)\n"
    "  %a = s32[10]{0} convert(%p)\n"
    "  %b = u8[10]{0} convert(%p)\n"
    "  %c = s8[10]{0} convert(%p)\n"
    "  %d = bf16[10]{0} convert(%p)\n"
    "  %e = f16[10]{0} convert(%p)\n"
    "  %g = s64[10]{0} convert(%p)\n"
    "  %h = u32[10]{0} convert(%p)\n"
    "  %i = pred[10]{0} convert(%p)\n"
    "  ROOT %t = (s32[10]{0}, u8[10]{0}, s8[10]{0}, bf16[10]{0}, f16[10]{0}, s64[10]{0}, u32[10]{0}, pred[10]{0}) tuple(%a, %b, %c, %d, %e, %g, %h, %i)\n"
    "}\n\n"
    "ENTRY %e (x: f32[10]) -> (s32[10], u8[10], s8[10], bf16[10], f16[10], s64[10], u32[10], pred[10]) {\n"
    "  %x = f32[10]{0} parameter(0)\n"
    "  ROOT %r = (s32[10]{0}, u8[10]{0}, s8[10]{0}, bf16[10]{0}, f16[10]{0}, s64[10]{0}, u32[10]{0}, pred[10]{0}) fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"),
   {"10xf32=1e10 -1e10 nan 2.5 -2.5 300 -300 0.5 1.00390625 65520"}, 0, 0},
  {"converts_narrow", F(
    "%f (p: bf16[8], q: f16[8], r: f64[8], s: s32[8]) -> (f32[8], f32[8], bf16[8], f16[8], f16[8], bf16[8], bf16[8]) {\n"
    "  %p = bf16[8]{0} parameter(0)\n"
    "  %q = f16[8]{0} parameter(1)\n"
    "  %r = f64[8]{0} parameter(2)\n"
    "  %s = s32[8]{0} parameter(3)\n"
    "  %a = f32[8]{0} convert(%p)\n"
    "  %b = f32[8]{0} convert(%q)\n"
    "  %c = bf16[8]{0} convert(%r)\n"
    "  %d = f16[8]{0} convert(%r)\n"
    "  %e = f16[8]{0} convert(%s)\n"
    "  %g = bf16[8]{0} convert(%q)\n"
    "  %h = bf16[8]{0} add(%p, %g)\n"
    "  ROOT %t = (f32[8]{0}, f32[8]{0}, bf16[8]{0}, f16[8]{0}, f16[8]{0}, bf16[8]{0}, bf16[8]{0}) tuple(%a, %b, %c, %d, %e, %g, %h)\n"
    "}\n\n"
    "ENTRY %e (w: bf16[8], x: f16[8], y: f64[8], z: s32[8]) -> (f32[8], f32[8], bf16[8], f16[8], f16[8], bf16[8], bf16[8]) {\n"
    "  %w = bf16[8]{0} parameter(0)\n"
    "  %x = f16[8]{0} parameter(1)\n"
    "  %y = f64[8]{0} parameter(2)\n"
    "  %z = s32[8]{0} parameter(3)\n"
    "  ROOT %r = (f32[8]{0}, f32[8]{0}, bf16[8]{0}, f16[8]{0}, f16[8]{0}, bf16[8]{0}, bf16[8]{0}) fusion(%w, %x, %y, %z), kind=kLoop, calls=%f\n"
    "}\n"),
   {"8xbf16=1.5 -2 3.25 nan inf 0.1 -0 100",
    "8xf16=0.333 65504 -1 nan 6e-5 0.1 2 -0",
    "8xf64=1.0000000001 3.14159265358979 1e300 -1e-300 nan 65519.99 0.1 -7",
    "8xs32=2049 -2049 16777217 0 65504 70000 -1 123456789"}, 0, 0},
  {"int_ops", F(
    "%f (p: s32[10], q: s32[10]) -> (s32[10], s32[10], s32[10], s32[10], s32[10], s32[10], s32[10], s32[10], s32[10], pred[10], s32[10], s32[10]) {\n"
    "  %p = s32[10]{0} parameter(0)\n"
    "  %q = s32[10]{0} parameter(1)\n"
    "  %a = s32[10]{0} divide(%p, %q)\n"
    "  %b = s32[10]{0} remainder(%p, %q)\n"
    "  %c = s32[10]{0} shift-left(%p, %q)\n"
    "  %d = s32[10]{0} shift-right-arithmetic(%p, %q)\n"
    "  %e = s32[10]{0} shift-right-logical(%p, %q)\n"
    "  %g = s32[10]{0} popcnt(%p)\n"
    "  %h = s32[10]{0} count-leading-zeros(%p)\n"
    "  %i = s32[10]{0} power(%p, %q)\n"
    "  %x = s32[10]{0} xor(%p, %q)\n"
    "  %n = s32[10]{0} not(%x)\n"
    "  %j = pred[10]{0} compare(%p, %q), direction=GE\n"
    "  %k = s32[10]{0} maximum(%p, %q)\n"
    "  %l = s32[10]{0} abs(%p)\n"
    "  ROOT %t = (s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, pred[10]{0}, s32[10]{0}, s32[10]{0}) tuple(%a, %b, %c, %d, %e, %g, %h, %i, %n, %j, %k, %l)\n"
    "}\n\n"
    "ENTRY %e (x: s32[10], y: s32[10]) -> (s32[10], s32[10], s32[10], s32[10], s32[10], s32[10], s32[10], s32[10], s32[10], pred[10], s32[10], s32[10]) {\n"
    "  %x = s32[10]{0} parameter(0)\n"
    "  %y = s32[10]{0} parameter(1)\n"
    "  ROOT %r = (s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, s32[10]{0}, pred[10]{0}, s32[10]{0}, s32[10]{0}) fusion(%x, %y), kind=kLoop, calls=%f\n"
    "}\n"),
   {"10xs32=7 -7 -2147483648 5 -1 3 100 -100 0 2",
    "10xs32=0 2 -1 32 33 -1 3 -3 5 31"}, 0, 0},
  {"uint_ops", F(
    "%f (p: u8[8], q: u8[8]) -> (u8[8], u8[8], u8[8], pred[8], u8[8], u8[8]) {\n"
    "  %p = u8[8]{0} parameter(0)\n"
    "  %q = u8[8]{0} parameter(1)\n"
    "  %a = u8[8]{0} divide(%p, %q)\n"
    "  %b = u8[8]{0} remainder(%p, %q)\n"
    "  %c = u8[8]{0} shift-right-arithmetic(%p, %q)\n"
    "  %d = pred[8]{0} compare(%p, %q), direction=LT\n"
    "  %e = u8[8]{0} minimum(%p, %q)\n"
    "  %g = u8[8]{0} multiply(%p, %q)\n"
    "  ROOT %t = (u8[8]{0}, u8[8]{0}, u8[8]{0}, pred[8]{0}, u8[8]{0}, u8[8]{0}) tuple(%a, %b, %c, %d, %e, %g)\n"
    "}\n\n"
    "ENTRY %e (x: u8[8], y: u8[8]) -> (u8[8], u8[8], u8[8], pred[8], u8[8], u8[8]) {\n"
    "  %x = u8[8]{0} parameter(0)\n"
    "  %y = u8[8]{0} parameter(1)\n"
    "  ROOT %r = (u8[8]{0}, u8[8]{0}, u8[8]{0}, pred[8]{0}, u8[8]{0}, u8[8]{0}) fusion(%x, %y), kind=kLoop, calls=%f\n"
    "}\n"),
   {"8xu8=200 255 7 0 128 3 9 250", "8xu8=0 16 2 0 7 8 3 200"}, 0, 0},
  {"pred_clamp", F(
    "%f (p: pred[6], q: pred[6], x: f32[6], lo: f32[], hi: f32[]) -> (pred[6], pred[6], f32[6], pred[6]) {\n"
    "  %p = pred[6]{0} parameter(0)\n"
    "  %q = pred[6]{0} parameter(1)\n"
    "  %x = f32[6]{0} parameter(2)\n"
    "  %lo = f32[] parameter(3)\n"
    "  %hi = f32[] parameter(4)\n"
    "  %a = pred[6]{0} and(%p, %q)\n"
    "  %n = pred[6]{0} not(%a)\n"
    "  %o = pred[6]{0} or(%n, %q)\n"
    "  %c = f32[6]{0} clamp(%lo, %x, %hi)\n"
    "  %e = pred[6]{0} compare(%p, %q), direction=EQ\n"
    "  ROOT %t = (pred[6]{0}, pred[6]{0}, f32[6]{0}, pred[6]{0}) tuple(%n, %o, %c, %e)\n"
    "}\n\n"
    "ENTRY %e (a: pred[6], b: pred[6], c: f32[6], d: f32[], g: f32[]) -> (pred[6], pred[6], f32[6], pred[6]) {\n"
    "  %a = pred[6]{0} parameter(0)\n"
    "  %b = pred[6]{0} parameter(1)\n"
    "  %c = f32[6]{0} parameter(2)\n"
    "  %d = f32[] parameter(3)\n"
    "  %g = f32[] parameter(4)\n"
    "  ROOT %r = (pred[6]{0}, pred[6]{0}, f32[6]{0}, pred[6]{0}) fusion(%a, %b, %c, %d, %g), kind=kLoop, calls=%f\n"
    "}\n"),
   {"6xpred=1 0 1 0 1 1", "6xpred=1 1 0 0 0 1", "6xf32=-5 0.5 nan 7 -0.25 0.3",
    "f32=-0.5"}, 0, 0},
  {"broadcast_transpose", F(
    "%f (p: f32[3,5], v: f32[5]) -> f32[5,3,2] {\n"
    "  %p = f32[3,5]{1,0} parameter(0)\n"
    "  %v = f32[5]{0} parameter(1)\n"
    "  %t = f32[5,3]{1,0} transpose(%p), dimensions={1,0}\n"
    "  %b = f32[5,3]{1,0} broadcast(%v), dimensions={0}\n"
    "  %a = f32[5,3]{1,0} add(%t, %b)\n"
    "  ROOT %r = f32[5,3,2]{2,1,0} broadcast(%a), dimensions={0,1}\n"
    "}\n\n"
    "ENTRY %e (x: f32[3,5], y: f32[5]) -> f32[5,3,2] {\n"
    "  %x = f32[3,5]{1,0} parameter(0)\n"
    "  %y = f32[5]{0} parameter(1)\n"
    "  ROOT %r = f32[5,3,2]{2,1,0} fusion(%x, %y), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 0, 0},
  {"layouts", F(
    "%f (p: f32[6,4], q: f32[6,4]) -> f32[6,4] {\n"
    "  %p = f32[6,4]{0,1} parameter(0)\n"
    "  %q = f32[6,4]{1,0} parameter(1)\n"
    "  ROOT %r = f32[6,4]{0,1} subtract(%p, %q)\n"
    "}\n\n"
    "ENTRY %e (x: f32[6,4], y: f32[6,4]) -> f32[6,4] {\n"
    "  %x = f32[6,4]{0,1} parameter(0)\n"
    "  %y = f32[6,4]{1,0} parameter(1)\n"
    "  ROOT %r = f32[6,4]{0,1} fusion(%x, %y), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 0, 0},
  {"reshape_slice_reverse", F(
    "%f (p: f32[4,6]) -> f32[2,3] {\n"
    "  %p = f32[4,6]{1,0} parameter(0)\n"
    "  %r = f32[3,8]{1,0} reshape(%p)\n"
    "  %s = f32[3,3]{1,0} slice(%r), slice={[0:3], [1:8:3]}\n"
    "  %v = f32[3,3]{1,0} reverse(%s), dimensions={0,1}\n"
    "  ROOT %o = f32[2,3]{1,0} slice(%v), slice={[1:3], [0:3]}\n"
    "}\n\n"
    "ENTRY %e (x: f32[4,6]) -> f32[2,3] {\n"
    "  %x = f32[4,6]{1,0} parameter(0)\n"
    "  ROOT %r = f32[2,3]{1,0} fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 0, 0},
  {"pad", F(
    "%f (p: f32[4,5], v: f32[]) -> f32[9,6] {\n"
    "  %p = f32[4,5]{1,0} parameter(0)\n"
    "  %v = f32[] parameter(1)\n"
    "  ROOT %r = f32[9,6]{1,0} pad(%p, %v), padding=1_1_1x-1_2_0\n"
    "}\n\n"
    "ENTRY %e (x: f32[4,5], y: f32[]) -> f32[9,6] {\n"
    "  %x = f32[4,5]{1,0} parameter(0)\n"
    "  %y = f32[] parameter(1)\n"
    "  ROOT %r = f32[9,6]{1,0} fusion(%x, %y), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 0, 0},
  {"concat_iota", F(
    "%f (p: s32[2,3], q: s32[2,1]) -> s32[2,8] {\n"
    "  %p = s32[2,3]{1,0} parameter(0)\n"
    "  %q = s32[2,1]{1,0} parameter(1)\n"
    "  %i = s32[2,4]{1,0} iota(), iota_dimension=1\n"
    "  ROOT %r = s32[2,8]{1,0} concatenate(%p, %i, %q), dimensions={1}\n"
    "}\n\n"
    "ENTRY %e (x: s32[2,3], y: s32[2,1]) -> s32[2,8] {\n"
    "  %x = s32[2,3]{1,0} parameter(0)\n"
    "  %y = s32[2,1]{1,0} parameter(1)\n"
    "  ROOT %r = s32[2,8]{1,0} fusion(%x, %y), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 0, 0},
  {"dynamic_slice", F(
    "%f (p: f32[6,7], i: s32[], j: s32[]) -> f32[3,4] {\n"
    "  %p = f32[6,7]{1,0} parameter(0)\n"
    "  %i = s32[] parameter(1)\n"
    "  %j = s32[] parameter(2)\n"
    "  ROOT %r = f32[3,4]{1,0} dynamic-slice(%p, %i, %j), dynamic_slice_sizes={3,4}\n"
    "}\n\n"
    "ENTRY %e (x: f32[6,7], y: s32[], z: s32[]) -> f32[3,4] {\n"
    "  %x = f32[6,7]{1,0} parameter(0)\n"
    "  %y = s32[] parameter(1)\n"
    "  %z = s32[] parameter(2)\n"
    "  ROOT %r = f32[3,4]{1,0} fusion(%x, %y, %z), kind=kLoop, calls=%f\n"
    "}\n"), {NULL, "s32=5", "s32=-2"}, 0, 0},
  {"constant_array_iota_f", F(
    "%f (p: f32[2,3]) -> f32[2,3] {\n"
    "  %p = f32[2,3]{1,0} parameter(0)\n"
    "  %c = f32[2,3]{1,0} constant({ {1, 2, 3}, {4, 5, 6} })\n"
    "  %i = f32[2,3]{1,0} iota(), iota_dimension=0\n"
    "  %m = f32[2,3]{1,0} multiply(%p, %c)\n"
    "  ROOT %r = f32[2,3]{1,0} add(%m, %i)\n"
    "}\n\n"
    "ENTRY %e (x: f32[2,3]) -> f32[2,3] {\n"
    "  %x = f32[2,3]{1,0} parameter(0)\n"
    "  ROOT %r = f32[2,3]{1,0} fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 1e-7, 1e-7},
  {"bitcast_layout", F(
    "%f (p: f32[4,6]) -> f32[6,4] {\n"
    "  %p = f32[4,6]{1,0} parameter(0)\n"
    "  %b = f32[6,4]{0,1} bitcast(%p)\n"
    "  ROOT %c = f32[6,4]{1,0} copy(%b)\n"
    "}\n\n"
    "ENTRY %e (x: f32[4,6]) -> f32[6,4] {\n"
    "  %x = f32[4,6]{1,0} parameter(0)\n"
    "  ROOT %r = f32[6,4]{1,0} fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 0, 0},
  {"single_op", F(
    "ENTRY %e (x: f32[3,300], y: f32[3,300]) -> f32[3,300] {\n"
    "  %x = f32[3,300]{1,0} parameter(0)\n"
    "  %y = f32[3,300]{1,0} parameter(1)\n"
    "  ROOT %r = f32[3,300]{1,0} atan2(%x, %y)\n"
    "}\n"), {NULL}, 1e-6, 1e-6},
  {"big_vectorized", F(
    "%f (p: f16[64,128]) -> f32[64,128] {\n"
    "  %p = f16[64,128]{1,0} parameter(0)\n"
    "  %c = f32[64,128]{1,0} convert(%p)\n"
    "  ROOT %r = f32[64,128]{1,0} tanh(%c)\n"
    "}\n\n"
    "ENTRY %e (x: f16[64,128]) -> f32[64,128] {\n"
    "  %x = f16[64,128]{1,0} parameter(0)\n"
    "  ROOT %r = f32[64,128]{1,0} fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 1e-6, 1e-6},
  {"reduce_epilogue", F(
    "%add (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(%a, %b)\n"
    "}\n\n"
    "%f (p: f32[5,7,3]) -> f32[5,3] {\n"
    "  %p = f32[5,7,3]{2,1,0} parameter(0)\n"
    "  %m = f32[5,7,3]{2,1,0} multiply(%p, %p)\n"
    "  %z = f32[] constant(0)\n"
    "  %r = f32[5,3]{1,0} reduce(%m, %z), dimensions={1}, to_apply=%add\n"
    "  ROOT %q = f32[5,3]{1,0} sqrt(%r)\n"
    "}\n\n"
    "ENTRY %e (x: f32[5,7,3]) -> f32[5,3] {\n"
    "  %x = f32[5,7,3]{2,1,0} parameter(0)\n"
    "  ROOT %r = f32[5,3]{1,0} fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 1e-6, 1e-6},
  {"variadic_reduce", F(
    "%argmax (a: f32[], i: s32[], b: f32[], j: s32[]) -> (f32[], s32[]) {\n"
    "  %a = f32[] parameter(0)\n"
    "  %i = s32[] parameter(1)\n"
    "  %b = f32[] parameter(2)\n"
    "  %j = s32[] parameter(3)\n"
    "  %g = pred[] compare(%a, %b), direction=GE\n"
    "  %v = f32[] select(%g, %a, %b)\n"
    "  %k = s32[] select(%g, %i, %j)\n"
    "  ROOT %t = (f32[], s32[]) tuple(%v, %k)\n"
    "}\n\n"
    "%f (p: f32[4,9]) -> (f32[4], s32[4]) {\n"
    "  %p = f32[4,9]{1,0} parameter(0)\n"
    "  %io = s32[4,9]{1,0} iota(), iota_dimension=1\n"
    "  %ninf = f32[] constant(-inf)\n"
    "  %z = s32[] constant(0)\n"
    "  %r = (f32[4]{0}, s32[4]{0}) reduce(%p, %io, %ninf, %z), dimensions={1}, to_apply=%argmax\n"
    "  %v = f32[4]{0} get-tuple-element(%r), index=0\n"
    "  %i = s32[4]{0} get-tuple-element(%r), index=1\n"
    "  %n = f32[4]{0} negate(%v)\n"
    "  ROOT %t = (f32[4]{0}, s32[4]{0}) tuple(%n, %i)\n"
    "}\n\n"
    "ENTRY %e (x: f32[4,9]) -> (f32[4], s32[4]) {\n"
    "  %x = f32[4,9]{1,0} parameter(0)\n"
    "  ROOT %r = (f32[4]{0}, s32[4]{0}) fusion(%x), kind=kLoop, calls=%f\n"
    "}\n"), {NULL}, 0, 0},
};

static char TmpDir[256];

static void make_tmpdir(void) {
  if (TmpDir[0])
    return;
  snprintf(TmpDir, sizeof TmpDir, "%s/test_codegen-XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  cr_assert(mkdtemp(TmpDir), "mkdtemp: %s", strerror(errno));
}

static void rm_tmpdir(void) {
  if (!TmpDir[0])
    return;
  char *argv[] = {"rm", "-rf", TmpDir, NULL};
  pid_t pid;
  if (posix_spawnp(&pid, "rm", NULL, NULL, argv, environ) == 0) {
    int st;
    waitpid(pid, &st, 0);
  }
  TmpDir[0] = 0;
}

TestSuite(codegen, .fini = rm_tmpdir);

static HloModule *parse_case(const Case *c, SrcFile **src) {
  *src = srcfile_from_string(c->name, c->hlo, strlen(c->hlo));
  ParseOptions po = {.strip_glog_prefixes = true};
  HloModule **mods = NULL;
  Diag d = {0};
  int n = hlo_parse(*src, &po, &mods, &d);
  cr_assert(n >= 1, "%s: parse: %s", c->name, d.msg);
  cr_assert(hlo_verify(mods[0], &d), "%s: verify: %s", c->name, d.msg);
  HloModule *m = mods[0];
  for (int k = 1; k < n; k++)
    hlo_module_free(mods[k]);
  free(mods);
  diag_clear(&d);
  return m;
}

/* Logical row-major element index <-> physical offset through the layout. */
static int64_t physical_offset(const Shape *s, int64_t logical) {
  int64_t idx[16];
  for (int k = s->rank - 1; k >= 0; k--) {
    idx[k] = logical % s->dims[k];
    logical /= s->dims[k];
  }
  int64_t off = 0;
  for (int k = s->rank - 1; k >= 0; k--) {
    int64_t d = s->layout->minor_to_major[k];
    off = off * s->dims[d] + idx[d];
  }
  return off;
}

static void to_physical(const Shape *s, const uint8_t *logical, uint8_t *phys) {
  int64_t n = shape_elements(s);
  int eb = et_bytes(s->et);
  for (int64_t k = 0; k < n; k++)
    memcpy(phys + physical_offset(s, k) * eb, logical + k * eb, (size_t)eb);
}

static void from_physical(const Shape *s, const uint8_t *phys, uint8_t *logical) {
  int64_t n = shape_elements(s);
  int eb = et_bytes(s->et);
  for (int64_t k = 0; k < n; k++)
    memcpy(logical + k * eb, phys + physical_offset(s, k) * eb, (size_t)eb);
}

typedef void (*HostKernel)(void **, int64_t, int64_t);

static void run_host_case(const Case *c, int which) {
  SrcFile *src;
  HloModule *m = parse_case(c, &src);
  Arena *a = arena_new();
  Diag d = {0};
  const HloComp *entry = m->entry;
  const HloInstr *root = entry->root;
  Literal **args = xcalloc((size_t)entry->nparams + 1, sizeof *args);
  for (int k = 0; k < entry->nparams; k++) {
    const Shape *s = entry->params[k]->shape;
    if (k < 4 && c->inputs[k]) {
      args[k] = io_parse_input(a, c->inputs[k], s, &d);
      cr_assert(args[k], "%s: input %d: %s", c->name, k, d.msg);
    } else {
      args[k] = io_random_literal(a, s, 1000u + (uint64_t)k * 17u, -1);
    }
  }
  Literal *expected;
  EvalOptions eo;
  eval_options_default(&eo);
  cr_assert(eval_module(m, entry->nparams, args, a, &eo, &expected, &d, NULL),
            "%s: eval: %s", c->name, d.msg);

  CodegenOptions o;
  codegen_options_default(&o);
  o.target = CG_TARGET_HOST;
  Codegen *cg = codegen_new(c->name, &o, &d);
  cr_assert(cg, "%s: codegen_new: %s", c->name, d.msg);
  LaunchDims ld;
  cr_assert(codegen_kernel(cg, root, "kern", &ld, &d), "%s: codegen_kernel: %s",
            c->name, d.msg);
  make_tmpdir();
  char path[512];
  snprintf(path, sizeof path, "%s/case%d.so", TmpDir, which);
  cr_assert(codegen_host_so(cg, path, &d), "%s: codegen_host_so: %s", c->name, d.msg);
  codegen_free(cg);

  /* kernel arguments: operand leaves (root operands are entry parameters),
   * then result leaves, all in physical layout order */
  PtrVec outs = {0};
  io_shape_leaves(root->shape, &outs);
  int nargs = root->nops + outs.len;
  void **kargs = xcalloc((size_t)nargs + 1, sizeof *kargs);
  for (int k = 0; k < root->nops; k++) {
    const HloInstr *p = root->ops[k];
    cr_assert(p->op == HLO_PARAMETER, "%s: root operand %d is not a parameter", c->name, k);
    const Shape *s = p->shape;
    kargs[k] = xcalloc((size_t)shape_byte_size(s) + 1, 1);
    to_physical(s, args[p->param_number]->data, kargs[k]);
  }
  for (int k = 0; k < outs.len; k++) {
    const Shape *s = outs.data[k];
    kargs[root->nops + k] = xcalloc((size_t)shape_byte_size(s) + 1, 1);
    memset(kargs[root->nops + k], 0xa5, (size_t)shape_byte_size(s));
  }
  void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  cr_assert(so, "%s: dlopen: %s", c->name, dlerror());
  HostKernel fn;
  *(void **)&fn = dlsym(so, "kern");
  cr_assert(fn, "%s: dlsym: %s", c->name, dlerror());
  /* the work units one at a time, last first: each must compute its own
   * part of the outputs whatever runs before it */
  cr_assert(ld.grid[0] >= 1 && ld.grid[1] == 1 && ld.grid[2] == 1, "%s: host grid %u %u %u",
            c->name, ld.grid[0], ld.grid[1], ld.grid[2]);
  for (int64_t u = ld.grid[0]; u-- > 0;)
    fn(kargs, u, u + 1);

  Literal **exp_leaves;
  int nexp = io_literal_leaves(expected, &exp_leaves);
  cr_assert_eq(nexp, outs.len);
  for (int k = 0; k < outs.len; k++) {
    const Shape *s = outs.data[k];
    Literal *got = literal_new(a, (Shape *)s);
    from_physical(s, kargs[root->nops + k], got->data);
    StrBuf why;
    sb_init(&why);
    bool same = io_compare(got, exp_leaves[k], c->atol, c->rtol, &why);
    cr_expect(same, "%s: output %d: %s", c->name, k, why.s ? why.s : "");
    sb_free(&why);
  }
  free(exp_leaves);
  dlclose(so);
  for (int k = 0; k < nargs; k++)
    free(kargs[k]);
  free(kargs);
  vec_free(&outs);
  free(args);
  diag_clear(&d);
  arena_free(a);
  hlo_module_free(m);
  srcfile_free(src);
}

#define HOST_TEST(N, IDX) \
  Test(codegen, host_##N) { run_host_case(&Cases[IDX], IDX); }

HOST_TEST(chain, 0)
HOST_TEST(unary_f32, 1)
HOST_TEST(special_f32, 2)
HOST_TEST(f64_math, 3)
HOST_TEST(converts, 4)
HOST_TEST(converts_narrow, 5)
HOST_TEST(int_ops, 6)
HOST_TEST(uint_ops, 7)
HOST_TEST(pred_clamp, 8)
HOST_TEST(broadcast_transpose, 9)
HOST_TEST(layouts, 10)
HOST_TEST(reshape_slice_reverse, 11)
HOST_TEST(pad, 12)
HOST_TEST(concat_iota, 13)
HOST_TEST(dynamic_slice, 14)
HOST_TEST(constant_array_iota_f, 15)
HOST_TEST(bitcast_layout, 16)
HOST_TEST(single_op, 17)
HOST_TEST(big_vectorized, 18)
HOST_TEST(reduce_epilogue, 19)
HOST_TEST(variadic_reduce, 20)

Test(codegen, every_case_has_a_host_test) {
  cr_assert_eq(ARRAY_LEN(Cases), 21);
}

/* All cases in one NVPTX module; its PTX must pass ptxas -arch=sm_90. */
Test(codegen, ptx_passes_ptxas) {
  Diag d = {0};
  CodegenOptions o;
  codegen_options_default(&o);
  Codegen *cg = codegen_new("ptx_cases", &o, &d);
  cr_assert(cg, "codegen_new: %s", d.msg);
  HloModule *mods[ARRAY_LEN(Cases)];
  SrcFile *srcs[ARRAY_LEN(Cases)];
  for (size_t k = 0; k < ARRAY_LEN(Cases); k++) {
    mods[k] = parse_case(&Cases[k], &srcs[k]);
    char name[64];
    snprintf(name, sizeof name, "kernel_%s", Cases[k].name);
    LaunchDims ld;
    cr_assert(codegen_kernel(cg, mods[k]->entry->root, name, &ld, &d),
              "%s: codegen_kernel: %s", Cases[k].name, d.msg);
    cr_assert(ld.block[0] >= 1 && ld.block[0] <= 1024 && ld.grid[0] >= 1);
  }
  StrBuf ptx;
  sb_init(&ptx);
  cr_assert(codegen_ptx(cg, &ptx, &d), "codegen_ptx: %s", d.msg);
  cr_assert(strstr(ptx.s, ".entry kernel_chain"), "no kernel entry in the PTX");
  cr_assert(strstr(ptx.s, ".target sm_90"), "PTX not for sm_90");
  make_tmpdir();
  char path[512];
  snprintf(path, sizeof path, "%s/cases.ptx", TmpDir);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fwrite(ptx.s, 1, ptx.len, f);
  fclose(f);
  const char *cuda = getenv("CUDA_HOME") ? getenv("CUDA_HOME") : "/usr/local/cuda";
  char ptxas[512];
  snprintf(ptxas, sizeof ptxas, "%s/bin/ptxas", cuda);
  cr_assert(access(ptxas, X_OK) == 0,
            "ptxas not found at %s: install the CUDA toolkit or set CUDA_HOME", ptxas);
  char *argv[] = {ptxas, "-arch=sm_90", path, "-o", "/dev/null", NULL};
  pid_t pid;
  cr_assert(posix_spawn(&pid, ptxas, NULL, NULL, argv, environ) == 0);
  int st = 0;
  waitpid(pid, &st, 0);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ptxas rejected %s", path);
  sb_free(&ptx);
  codegen_free(cg);
  for (size_t k = 0; k < ARRAY_LEN(Cases); k++) {
    hlo_module_free(mods[k]);
    srcfile_free(srcs[k]);
  }
  diag_clear(&d);
}

/* Ops no emitter supports are errors at the op's location, naming it. */
Test(codegen, unsupported_op_is_an_error) {
  static const char *hlo = F(
    "%cmp (a: f32[], b: f32[]) -> pred[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %c = pred[] compare(%a, %b), direction=LT\n"
    "}\n\n"
    "%f (p: f32[8]) -> f32[8] {\n"
    "  %p = f32[8]{0} parameter(0)\n"
    "  %n = f32[8]{0} negate(%p)\n"
    "  ROOT %s = f32[8]{0} sort(%n), dimensions={0}, to_apply=%cmp\n"
    "}\n\n"
    "ENTRY %e (x: f32[8]) -> f32[8] {\n"
    "  %x = f32[8]{0} parameter(0)\n"
    "  ROOT %r = f32[8]{0} fusion(%x), kind=kLoop, calls=%f\n"
    "}\n");
  Case c = {"sort", hlo, {NULL}, 0, 0};
  SrcFile *src;
  HloModule *m = parse_case(&c, &src);
  Diag d = {0};
  CodegenOptions o;
  codegen_options_default(&o);
  o.target = CG_TARGET_HOST;
  Codegen *cg = codegen_new("bad", &o, &d);
  cr_assert(cg);
  LaunchDims ld;
  cr_assert_not(codegen_kernel(cg, m->entry->root, "k", &ld, &d));
  /* a sort kernel sorts its fusion's parameters; a fused producer is
   * refused */
  cr_assert(d.has_error && strstr(d.msg, "sort"), "message: %s", d.msg);
  cr_assert_eq(d.loc.line, 12, "error at line %d", d.loc.line);
  /* the module stays usable after the refusal */
  StrBuf ir;
  sb_init(&ir);
  diag_clear(&d);
  cr_assert(codegen_llvm_ir(cg, true, &ir, &d), "%s", d.msg);
  cr_assert_null(strstr(ir.s, "define void @k"));
  sb_free(&ir);
  codegen_free(cg);
  hlo_module_free(m);
  srcfile_free(src);
}

Test(codegen, unknown_arch_is_refused) {
  Diag d = {0};
  CodegenOptions o;
  codegen_options_default(&o);
  o.arch = "sm_999";
  cr_assert_null(codegen_new("x", &o, &d));
  cr_assert(d.has_error && strstr(d.msg, "sm_999"));
  diag_clear(&d);
}
