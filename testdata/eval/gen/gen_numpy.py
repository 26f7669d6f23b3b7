#!/usr/bin/env python3
"""gen_numpy.py - golden interpreter tests whose HLO is written here by hand
and whose expected values come from NumPy/SciPy evaluating the operation's
definition (XLA's operation semantics), independently of xhloc.

Used for ops JAX does not lower to a single HLO op on the CPU (cholesky and
triangular-solve become LAPACK custom calls; acos and friends are expanded)
and for ops JAX does not emit (batch-norm-*).  Writes testdata/eval/np_*.hlo;
the files are checked in.  Regenerate with
    python3 testdata/eval/gen/gen_numpy.py      # from the repository root
"""
import math
import os

import numpy as np
import scipy.linalg

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
rng = np.random.default_rng(99)

NAMES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64",
         np.dtype(np.int32): "s32", np.dtype(np.complex64): "c64"}


def fmt(v):
    if isinstance(v, complex) or np.iscomplexobj(v):
        v = complex(v)
        re, im = fmt(v.real), fmt(v.imag)
        return f"{re}{'' if im.startswith('-') else '+'}{im}j"
    x = float(v)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    r = repr(x)
    return r[:-2] if r.endswith(".0") else r


def spec(a):
    a = np.asarray(a)
    dims = "x".join(str(d) for d in a.shape)
    t = NAMES[a.dtype]
    return (f"{dims}x{t}" if dims else t) + "=" + " ".join(fmt(v) for v in a.reshape(-1))


def write(name, what, hlo, cases, tol):
    lines = [f"// {what}",
             "// Expected values: NumPy/SciPy from the operation's definition "
             "(testdata/eval/gen/gen_numpy.py), not this interpreter.",
             f"// TOL: {tol[0]} {tol[1]}"]
    for cname, ins, outs in cases:
        lines.append(f"// CASE: {cname}")
        lines += [f"// INPUT: {spec(a)}" for a in ins]
        lines += [f"// EXPECT: {spec(o)}" for o in outs]
    path = os.path.join(OUT, f"np_{name}.hlo")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n\n" + hlo.strip() + "\n")
    print("wrote", path)


def main():
    # cholesky
    a = rng.uniform(-1, 1, (2, 3, 3))
    spd = (a @ np.swapaxes(a, 1, 2) + 3 * np.eye(3)).astype(np.float32)
    low = np.linalg.cholesky(spd.astype(np.float64))
    up = np.swapaxes(low, 1, 2)
    write("cholesky", "cholesky of a batch, lower and upper (other triangle zero)", """
HloModule cholesky
ENTRY e {
  a = f32[2,3,3] parameter(0)
  l = f32[2,3,3] cholesky(a), lower=true
  u = f32[2,3,3] cholesky(a), lower=false
  ROOT t = (f32[2,3,3], f32[2,3,3]) tuple(l, u)
}""", [("spd", [spd], [low.astype(np.float32), up.astype(np.float32)])], (1e-5, 1e-5))

    # triangular-solve
    m = (np.tril(rng.uniform(-1, 1, (3, 3))) + 3 * np.eye(3)).astype(np.float32)
    mu = (np.triu(rng.uniform(-1, 1, (3, 3))) + 3 * np.eye(3)).astype(np.float32)
    b = rng.uniform(-1, 1, (3, 2)).astype(np.float32)
    c = rng.uniform(-1, 1, (2, 3)).astype(np.float32)
    M, MU = m.astype(np.float64), mu.astype(np.float64)
    unit = np.tril(M, -1) + np.eye(3)
    x1 = scipy.linalg.solve_triangular(M, b, lower=True)
    x2 = np.linalg.solve(M.T, c.T).T                     # X M = C
    x3 = scipy.linalg.solve_triangular(M, b, lower=True, trans=1)
    x4 = np.linalg.solve(unit, b)
    x5 = scipy.linalg.solve_triangular(MU, b, lower=False)
    x6 = np.linalg.solve(MU.T, c.T).T                    # X U = C
    x7 = np.linalg.solve(MU, c.T).T                      # X U^T = C
    write("triangular_solve", "triangular-solve: left/right, lower/upper, transpose, unit diagonal "
          "(junk in the unused triangle is ignored)", """
HloModule trsm
ENTRY e {
  a = f32[3,3] parameter(0)
  au = f32[3,3] parameter(1)
  b = f32[3,2] parameter(2)
  c = f32[2,3] parameter(3)
  x1 = f32[3,2] triangular-solve(a, b), left_side=true, lower=true, transpose_a=NO_TRANSPOSE
  x2 = f32[2,3] triangular-solve(a, c), left_side=false, lower=true, transpose_a=NO_TRANSPOSE
  x3 = f32[3,2] triangular-solve(a, b), left_side=true, lower=true, transpose_a=TRANSPOSE
  x4 = f32[3,2] triangular-solve(a, b), left_side=true, lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE
  x5 = f32[3,2] triangular-solve(au, b), left_side=true, lower=false, transpose_a=NO_TRANSPOSE
  x6 = f32[2,3] triangular-solve(au, c), left_side=false, lower=false, transpose_a=NO_TRANSPOSE
  x7 = f32[2,3] triangular-solve(au, c), left_side=false, lower=false, transpose_a=TRANSPOSE
  ROOT t = (f32[3,2], f32[2,3], f32[3,2], f32[3,2], f32[3,2], f32[2,3], f32[2,3]) tuple(x1, x2, x3, x4, x5, x6, x7)
}""", [("values", [m + np.triu(np.full((3, 3), 7.0, np.float32), 1), mu + np.tril(np.full((3, 3), -5.0, np.float32), -1), b, c],
        [x.astype(np.float32) for x in (x1, x2, x3, x4, x5, x6, x7)])], (1e-5, 1e-5))

    # complex: Hermitian cholesky and an adjoint triangular solve
    z = rng.uniform(-1, 1, (3, 3)) + 1j * rng.uniform(-1, 1, (3, 3))
    herm = (z @ z.conj().T + 3 * np.eye(3)).astype(np.complex64)
    cl = np.linalg.cholesky(herm.astype(np.complex128))
    bz = (rng.uniform(-1, 1, (3, 2)) + 1j * rng.uniform(-1, 1, (3, 2))).astype(np.complex64)
    adj = np.linalg.solve(cl.conj().T, bz.astype(np.complex128))     # L^H X = B
    write("complex_linalg", "cholesky of a Hermitian matrix (c64); triangular-solve with ADJOINT", """
HloModule complex_linalg
ENTRY e {
  a = c64[3,3] parameter(0)
  b = c64[3,2] parameter(1)
  l = c64[3,3] cholesky(a), lower=true
  x = c64[3,2] triangular-solve(l, b), left_side=true, lower=true, transpose_a=ADJOINT
  ROOT t = (c64[3,3], c64[3,2]) tuple(l, x)
}""", [("hermitian", [herm, bz], [cl.astype(np.complex64), adj.astype(np.complex64)])], (1e-5, 1e-5))

    # inverse trig and hyperbolic ops (XLA's newer unary ops)
    xs = np.array([-0.9, -0.5, 0.0, 0.25, 0.75, 1.0, 1.5, np.nan], np.float32)
    ys = np.array([1.0, 1.5, 2.0, 10.0, 0.5, 3.0, -2.0, 0.0], np.float32)
    with np.errstate(all="ignore"):
        outs = [np.arccos(xs), np.arcsin(xs), np.arctan(xs), np.arctanh(xs),
                np.arccosh(ys), np.arcsinh(ys), np.cosh(ys), np.sinh(ys)]
    write("inverse_trig", "acos, asin, atan, atanh, acosh, asinh, cosh, sinh on f32", """
HloModule trig
ENTRY e {
  x = f32[8] parameter(0)
  y = f32[8] parameter(1)
  a = f32[8] acos(x)
  b = f32[8] asin(x)
  c = f32[8] atan(x)
  d = f32[8] atanh(x)
  e = f32[8] acosh(y)
  f = f32[8] asinh(y)
  g = f32[8] cosh(y)
  h = f32[8] sinh(y)
  ROOT t = (f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8], f32[8]) tuple(a, b, c, d, e, f, g, h)
}""", [("values", [xs, ys], [o.astype(np.float32) for o in outs])], (1e-6, 2e-6))

    # batch norm
    x = rng.uniform(-2, 2, (2, 3, 4)).astype(np.float32)   # feature_index=1
    scale = np.array([1.0, 0.5, -2.0], np.float32)
    offset = np.array([0.0, 1.0, 0.25], np.float32)
    mean = np.array([0.1, -0.2, 0.3], np.float32)
    var = np.array([1.0, 0.25, 2.0], np.float32)
    eps = np.float32(0.001)
    X = x.astype(np.float64)
    bshape = (1, 3, 1)
    def b(v):
        return v.astype(np.float64).reshape(bshape)
    inf = b(scale) * (X - b(mean)) / np.sqrt(b(var) + float(eps)) + b(offset)
    mu = X.mean(axis=(0, 2))
    va = X.var(axis=(0, 2))
    tr = b(scale) * (X - mu.reshape(bshape)) / np.sqrt(va.reshape(bshape) + float(eps)) + b(offset)
    dy = rng.uniform(-1, 1, x.shape).astype(np.float32)
    DY = dy.astype(np.float64)
    N = 8
    xc = X - b(mean)
    sdy = DY.sum(axis=(0, 2))
    sdyxc = (DY * xc).sum(axis=(0, 2))
    ve = var.astype(np.float64) + float(eps)
    gx = b(scale) / np.sqrt(b(var) + float(eps)) * (DY - (sdy / N).reshape(bshape)
                                                    - xc * (sdyxc / (N * ve)).reshape(bshape))
    gs = sdyxc / np.sqrt(ve)
    f32 = np.float32
    write("batch_norm", "batch-norm-inference, -training and -grad (feature_index=1)", """
HloModule bn
ENTRY e {
  x = f32[2,3,4] parameter(0)
  scale = f32[3] parameter(1)
  offset = f32[3] parameter(2)
  mean = f32[3] parameter(3)
  var = f32[3] parameter(4)
  dy = f32[2,3,4] parameter(5)
  bni = f32[2,3,4] batch-norm-inference(x, scale, offset, mean, var), epsilon=0.001, feature_index=1
  tr = (f32[2,3,4], f32[3], f32[3]) batch-norm-training(x, scale, offset), epsilon=0.001, feature_index=1
  gr = (f32[2,3,4], f32[3], f32[3]) batch-norm-grad(x, scale, mean, var, dy), epsilon=0.001, feature_index=1
  ROOT t = (f32[2,3,4], (f32[2,3,4], f32[3], f32[3]), (f32[2,3,4], f32[3], f32[3])) tuple(bni, tr, gr)
}""", [("values", [x, scale, offset, mean, var, dy],
        [inf.astype(f32), tr.astype(f32), mu.astype(f32), va.astype(f32),
         gx.astype(f32), gs.astype(f32), sdy.astype(f32)])], (1e-5, 1e-5))


if __name__ == "__main__":
    main()
