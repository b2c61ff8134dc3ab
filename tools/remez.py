"""Minimax coefficients for the math expansions in crates/lower/src/math/.

Each approximation is a weighted minimax fit found by the Remez exchange algorithm in 60-digit
arithmetic (mpmath), then rounded to the working dtype (f32 or f64); the script prints the
rounded coefficients as Rust literals and the weighted error before and after rounding.
Run `python3 tools/remez.py [name]` (mpmath only); docs/accuracy.md says what each fit is for.
"""
import sys
import mpmath as mp

mp.mp.dps = 60


def remez(f, w, powers, a, b, iters=40, grid=3000):
    """Coefficients c minimising max |w(x) (f(x) - sum c_k x^p_k)| on [a, b]."""
    n = len(powers)
    m = n + 1
    # Chebyshev-like first reference, nudged so that no point sits where a weight vanishes.
    xs = [(a + b) / 2 - (b - a) / 2 * mp.cos(mp.pi * (i + mp.mpf(1) / 7) / (m - 1 + mp.mpf(3) / 7))
          for i in range(m)]
    best = None
    for _ in range(iters):
        rows = []
        rhs = []
        for i, x in enumerate(xs):
            rows.append([x ** p for p in powers] + [(-1) ** i / w(x)])
            rhs.append(f(x))
        sol = mp.lu_solve(mp.matrix(rows), mp.matrix(rhs))
        c = [sol[k] for k in range(n)]
        level = abs(sol[n])

        def err(x):
            return w(x) * (f(x) - sum(ck * x ** p for ck, p in zip(c, powers)))

        pts = [a + (b - a) * i / grid for i in range(grid + 1)]
        vals = [err(x) for x in pts]
        # Split into runs of equal sign, keep the extreme of each run.
        ext = []
        start = 0
        sign = mp.sign(vals[0])
        for i in range(1, len(pts) + 1):
            s_i = 0 if i == len(pts) else mp.sign(vals[i])
            if sign == 0:
                sign = s_i
            if i == len(pts) or (s_i != 0 and s_i != sign):
                j = max(range(start, i), key=lambda k: abs(vals[k]))
                ext.append((pts[j], vals[j]))
                start = i
                sign = s_i
        # Keep m alternating extrema: drop the smallest one and merge its neighbours (which
        # then share a sign) into the larger of the two, until m remain.
        while len(ext) > m:
            i = min(range(len(ext)), key=lambda k: abs(ext[k][1]))
            ext.pop(i)
            if 0 < i < len(ext) and mp.sign(ext[i - 1][1]) == mp.sign(ext[i][1]):
                ext.pop(i if abs(ext[i][1]) < abs(ext[i - 1][1]) else i - 1)
        if len(ext) < m:
            break
        xs = [e[0] for e in ext]
        worst = max(abs(v) for v in vals)
        best = (c, worst)
        if worst - level < level * mp.mpf("1e-6"):
            break
    return best


def rounded(c, dtype):
    out = []
    for v in c:
        d = float(v)
        if dtype == "f32":
            import struct
            d = struct.unpack("f", struct.pack("f", d))[0]
        out.append(d)
    return out


def max_err(f, w, powers, c, a, b, n=20000):
    return max(
        abs(w(x) * (f(x) - sum(mp.mpf(ck) * x ** p for ck, p in zip(c, powers))))
        for x in (a + (b - a) * i / n for i in range(n + 1))
    )


def show(name, f, w, powers, a, b, dtype):
    c, e = remez(f, w, powers, mp.mpf(a), mp.mpf(b))
    r = rounded(c, dtype)
    er = max_err(f, w, powers, r, mp.mpf(a), mp.mpf(b))
    ulp = 2.0 ** -24 if dtype == "f32" else 2.0 ** -53
    print(f"// {name} ({dtype}): minimax weighted error {float(e):.3e} = {float(e) / ulp:.3f} ulp; "
          f"rounded {float(er):.3e} = {float(er) / ulp:.3f} ulp")
    print("    " + ", ".join(repr(v) for v in r) + ",")


def safe(g, at0):
    return lambda x: at0 if x == 0 else g(x)


LN2 = mp.log(2)
FITS = {}


def fit(name):
    def deco(fn):
        FITS[name] = fn
        return fn
    return deco


# exp(r) = 1 + r + r^2 P(r) on |r| <= ln2/2 (plus rounding slack); relative error.
def exp_fit(dtype, deg):
    h = LN2 / 2 * (1 + mp.mpf("1e-6"))
    g = safe(lambda r: (mp.exp(r) - 1 - r) / r ** 2, mp.mpf(1) / 2)
    w = lambda r: max(r ** 2, (h / 50) ** 2) / mp.exp(r)
    show(f"exp P deg {deg}", g, w, list(range(deg + 1)), -h, h, dtype)


@fit("exp")
def _():
    for d in (3, 4):
        exp_fit("f32", d)
    for d in (8, 9, 10):
        exp_fit("f64", d)


# expm1(y) = y + y^2 P(y) on |y| <= ln2/2 (f32 tanh's); relative error of expm1, whose weight
# y^2 / expm1(y) vanishes at 0 and is floored there as exp's is.
def expm1_fit(dtype, deg):
    h = LN2 / 2 * (1 + mp.mpf("1e-6"))
    g = safe(lambda y: (mp.expm1(y) - y) / y ** 2, mp.mpf(1) / 2)
    w = lambda y: max(abs(y), h / 50) * (1 if y == 0 else abs(y / mp.expm1(y)))
    show(f"expm1 P deg {deg}", g, w, list(range(deg + 1)), -h, h, dtype)


@fit("expm1")
def _():
    for d in (4, 5):
        expm1_fit("f32", d)


# log(1+f) = f - hfsq + s (hfsq + z U(z)), s = f/(2+f), z = s^2: U(z) = T(z)/z with
# T(z) = 2 atanh(s)/s - 2 (the odd series after its first term).
def log_fit(dtype, deg):
    smax = (mp.sqrt(2) - 1) / (mp.sqrt(2) + 1)
    zmax = smax ** 2 * (1 + mp.mpf("1e-6"))
    def U(z):
        if z == 0:
            return mp.mpf(2) / 3
        s = mp.sqrt(z)
        return (2 * mp.atanh(s) / s - 2) / z
    # The error s z dU reaches the result 2 s: weight z / 2.
    w = lambda z: z / 2
    show(f"log U deg {deg}", U, w, list(range(deg + 1)), 0, zmax, dtype)


@fit("log")
def _():
    for d in (2, 3):
        log_fit("f32", d)
    for d in (5, 6, 7):
        log_fit("f64", d)


# tanh(x) = x + x^3 P(x^2) on |x| <= t; relative error: weight z * x / tanh(x).
def tanh_fit(dtype, deg, t):
    zmax = mp.mpf(t) ** 2
    P = safe(lambda z: (mp.tanh(mp.sqrt(z)) - mp.sqrt(z)) / mp.sqrt(z) ** 3, -mp.mpf(1) / 3)
    w = lambda z: z if z == 0 else z * mp.sqrt(z) / mp.tanh(mp.sqrt(z))
    show(f"tanh P deg {deg} on |x| <= {t}", P, w, list(range(deg + 1)), 0, zmax, dtype)


@fit("tanh")
def _():
    for d in (10, 11, 12):
        tanh_fit("f64", d, "0.55")


# erf(x) = x (2/sqrt(pi) + x^2 Q(x^2)) on |x| <= 1, the constant kept exact (in two parts);
# relative error: weight z / P(z).
def erf_small_fit(dtype, deg):
    c0 = 2 / mp.sqrt(mp.pi)
    P = safe(lambda z: mp.erf(mp.sqrt(z)) / mp.sqrt(z), c0)
    Q = lambda z: -c0 / 3 if z == 0 else (P(z) - c0) / z
    w = lambda z: max(z, mp.mpf(1) / 2500) / P(z)
    show(f"erf Q deg {deg} on |x| <= 1", Q, w, list(range(deg + 1)), 0, 1, dtype)


# erfc(x) = e^(-x^2) G(t), t = 1 / (1 + x / 2), 1 <= x <= X: G(t) = erfcx(x); relative error.
def erfc_fit(dtype, deg, xmax):
    x_of = lambda t: 2 * (1 / t - 1)
    G = lambda t: mp.erfc(x_of(t)) * mp.exp(x_of(t) ** 2)
    w = lambda t: 1 / G(t)
    a, b = 1 / (1 + mp.mpf(xmax) / 2), mp.mpf(2) / 3
    show(f"erfc G deg {deg} on 1 <= x <= {xmax}", G, w, list(range(deg + 1)), a, b, dtype)


@fit("erf")
def _():
    for d in (5,):
        erf_small_fit("f32", d)
    for d in (6,):
        erfc_fit("f32", d, 4)
    for d in (11,):
        erf_small_fit("f64", d)
    for d in (16, 18):
        erfc_fit("f64", d, 6)


# sin(r) = r + r^3 S(r^2), cos(r) = 1 - r^2/2 + r^4 C(r^2) on |r| <= pi/4; relative error.
def sin_fit(dtype, deg):
    zmax = (mp.pi / 4) ** 2 * (1 + mp.mpf("1e-6"))
    S = safe(lambda z: (mp.sin(mp.sqrt(z)) - mp.sqrt(z)) / mp.sqrt(z) ** 3, -mp.mpf(1) / 6)
    w = lambda z: max(z, zmax / 2500) * mp.sqrt(z) / mp.sin(mp.sqrt(z)) if z > 0 else zmax / 2500
    show(f"sin S deg {deg}", S, w, list(range(deg + 1)), 0, zmax, dtype)


def cos_fit(dtype, deg):
    zmax = (mp.pi / 4) ** 2 * (1 + mp.mpf("1e-6"))
    C = safe(lambda z: (mp.cos(mp.sqrt(z)) - 1 + z / 2) / z ** 2, mp.mpf(1) / 24)
    w = lambda z: max(z, zmax / 50) ** 2 / mp.cos(mp.sqrt(z))
    show(f"cos C deg {deg}", C, w, list(range(deg + 1)), 0, zmax, dtype)


@fit("trig")
def _():
    for d in (2, 3):
        sin_fit("f32", d)
        cos_fit("f32", d)
    for d in (5, 6):
        sin_fit("f64", d)
        cos_fit("f64", d)


if __name__ == "__main__":
    names = sys.argv[1:] or list(FITS)
    for n in names:
        FITS[n]()
