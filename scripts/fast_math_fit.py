#!/usr/bin/env python3
# fast_math_fit.py - fits the coefficients of emitters/fast_math.c.
#
#   python3 scripts/fast_math_fit.py      (needs mpmath; about a minute)
#
# Each polynomial or rational function is a weighted minimax fit on a
# Chebyshev grid: weighted least squares, reweighted by Lawson's rule
# toward the minimax solution (for the rational one, linearized around the
# previous denominator).  Prints each set as C hex floats (rounded to f32
# where fast_math.c evaluates in f32) with the fit's weighted error.
import re
import struct
import mpmath as mp

mp.mp.dps = 50


def f32(x):
    return struct.unpack('f', struct.pack('f', float(x)))[0]


def cheb_grid(a, b, n):
    return [(a + b) / 2 + (b - a) / 2 * mp.cos(mp.pi * (k + mp.mpf(0.5)) / n)
            for k in range(n)]


def lsq(rows, rhs, w):
    m = len(rows[0])
    A = mp.matrix(m, m)
    v = mp.matrix(m, 1)
    for r, y, wi in zip(rows, rhs, w):
        for i in range(m):
            v[i] += wi * r[i] * y
            for j in range(i, m):
                A[i, j] += wi * r[i] * r[j]
    for i in range(m):
        for j in range(i):
            A[i, j] = A[j, i]
    return mp.lu_solve(A, v)


def lawson(rows, ys, w0, iters):
    lw = [mp.mpf(1)] * len(ys)
    for _ in range(iters):
        c = lsq(rows, ys, [a * b for a, b in zip(w0, lw)])
        errs = [abs(sum(ci * ri for ci, ri in zip(c, r)) - y) * mp.sqrt(wi)
                for r, y, wi in zip(rows, ys, w0)]
        s = sum(l * e for l, e in zip(lw, errs))
        lw = [l * e / s for l, e in zip(lw, errs)]
    return c, max(errs)


def poly_fit(xs, n, f, wfun, iters=40):
    rows = [[x ** k for k in range(n)] for x in xs]
    return lawson(rows, [f(x) for x in xs], [wfun(x) ** 2 for x in xs], iters)


def odd_rational_fit(xs, np_, nq, f, wfun, outer=8, iters=30):
    """f(x) ~ x P(x^2) / Q(x^2) with Q(0) = 1."""
    ys = [f(x) for x in xs]
    qprev = [mp.mpf(1)] * len(xs)
    for _ in range(outer):
        rows = [[x * (x * x) ** k for k in range(np_)] +
                [-y * (x * x) ** k for k in range(1, nq + 1)]
                for x, y in zip(xs, ys)]
        c, _ = lawson(rows, ys, [(wfun(x) / q) ** 2 for x, q in zip(xs, qprev)],
                      iters)
        p, q = c[:np_], [mp.mpf(1)] + list(c[np_:])
        qprev = [sum(qk * (x * x) ** k for k, qk in enumerate(q)) for x in xs]
    err = max(abs(x * sum(pk * (x * x) ** k for k, pk in enumerate(p)) / qv - y) * wfun(x)
              for x, y, qv in zip(xs, ys, qprev))
    return p, q, err


def show(name, cs, err, single=True):
    vals = [float(f32(c)) if single else float(c) for c in cs]
    print('%s (weighted error %s):' % (name, mp.nstr(err, 3)))
    print('  {' + ', '.join(re.sub('0+p', 'p', v.hex()) for v in vals) + '}')


def main():
    # exp and expm1: expm1(r) = r + r^2 P(r), |r| <= ln2/2 plus rounding.
    rs = cheb_grid(mp.mpf(-0.3467), mp.mpf(0.3467), 300)
    g = lambda r: (mp.exp(r) - 1 - r) / r ** 2
    c, e = poly_fit(rs, 5, g, lambda r: r * r / mp.exp(r))
    show('EXP_P, relative error of exp(r)', c, e)
    c, e = poly_fit(rs, 5, g, lambda r: abs(r))
    show('EXPM1_P, ~relative error of expm1(r)', c, e)

    # log: log1p(f) = 2s + s z T(z), s = f/(2+f), z = s^2.
    smax = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1) * mp.mpf('1.0001')
    zs = cheb_grid(mp.mpf(0), smax ** 2, 200)

    def t_of(z):
        s = mp.sqrt(z)
        return (mp.log((1 + s) / (1 - s)) - 2 * s) / (s * z)
    c, e = poly_fit(zs, 3, t_of, lambda z: z / 2)
    show('LOG_T, relative error of log1p(f)', c, e)

    # sin(r) = r + r^3 S(z), cos(r) = 1 - z/2 + z^2 C(z), z = r^2.
    zs = cheb_grid(mp.mpf(0), (mp.pi / 4 * mp.mpf('1.001')) ** 2, 200)
    sr = lambda z: mp.sqrt(z)
    c, e = poly_fit(zs, 3, lambda z: (mp.sin(sr(z)) - sr(z)) / (sr(z) * z),
                    lambda z: z * sr(z) / mp.sin(sr(z)))
    show('SIN_S, relative error of sin(r)', c, e)
    c, e = poly_fit(zs, 3, lambda z: (mp.cos(sr(z)) - 1 + z / 2) / (z * z),
                    lambda z: z * z / mp.cos(sr(z)))
    show('COS_C, relative error of cos(r)', c, e)

    # erf(x) = x P(x^2) / Q(x^2) on [0, 4], in double.
    xs = cheb_grid(mp.mpf(0), mp.mpf(4), 240)
    p, q, e = odd_rational_fit(xs, 7, 5, mp.erf, lambda x: 1 / mp.erf(x))
    show('ERF_P, relative error of erf(x)', p, e, single=False)
    show('ERF_Q', q, e, single=False)


if __name__ == '__main__':
    main()
