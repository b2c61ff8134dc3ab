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
    for d in (4, 5):
        tanh_fit("f32", d, "0.55")
    for d in (10, 11, 12):
        tanh_fit("f64", d, "0.55")


if __name__ == "__main__":
    names = sys.argv[1:] or list(FITS)
    for n in names:
        FITS[n]()
