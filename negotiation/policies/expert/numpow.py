"""numpy's float64 power inside compiled code, bit for bit (pow_row).

The posterior's figures were first computed with numpy, and the expert's play is pinned to
them. numpy's ``power`` does not round like the C library's ``pow`` everywhere: on a CPU
with AVX-512 (numpy's AVX512_SKX dispatch) it calls Intel's SVML ``__svml_pow8_ha``, eight
lanes at a time, which differs from the C library in about 5 % of results' last bit;
elsewhere it calls the C library's ``pow``. Compiled code must call the same function to
give the same figures, so at import this module finds numpy's SVML entry point (numpy
exports it), checks on a sample that it reproduces ``np.power`` exactly, and the compiled
kernels call it (SVML_POW); where it is absent or does not match, they call ``pow`` (what
numba's ``**`` on two floats compiles to), checked the same way (EXACT: one of the two
reproduced numpy on the sample).

A lane's result depends on that lane alone (SVML evaluates each lane independently, numpy
pads a short tail with ones), so any grouping of the elements into eights gives numpy's
figures.
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import binding, ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

_SYMBOL = "__svml_pow8_ha"
_LANES = 8


def _svml_address() -> int | None:
    """The address of numpy's SVML power, where numpy exports it and this CPU runs it.
    numpy exports the symbol on every x86-64 machine, but calls it only under its
    AVX512_SKX dispatch; anywhere else the call is an illegal instruction (SIGILL)."""
    try:
        from numpy._core import _multiarray_umath as umath

        if not umath.__cpu_features__.get("AVX512_SKX"):
            return None
        return ctypes.cast(getattr(ctypes.CDLL(umath.__file__), _SYMBOL), ctypes.c_void_p).value
    except (AttributeError, ImportError, OSError):
        return None


_ADDRESS = _svml_address()
if _ADDRESS:
    binding.add_symbol(_SYMBOL, _ADDRESS)

_VEC = ir.VectorType(ir.DoubleType(), _LANES)


@intrinsic
def _pow8(typingctx, x, y, out):
    """out[0:8] = x[0:8] ** y[0:8] with numpy's SVML (three addresses of 8 float64s)."""

    def codegen(context, builder, signature, args):
        px, py, po = (builder.inttoptr(a, ir.PointerType(_VEC)) for a in args)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_VEC, [_VEC, _VEC]), _SYMBOL
        )
        res = builder.call(fn, [builder.load(px, align=8), builder.load(py, align=8)])
        builder.store(res, po, align=8)
        return context.get_dummy_value()

    return types.void(x, y, out), codegen


@njit(cache=True)
def _svml_pow(x, y, out):
    """x ** y into out (1-d, contiguous) with numpy's SVML, eight at a time."""
    buf = np.ones((3, _LANES))
    n = len(x)
    for s in range(0, n, _LANES):
        for lane in range(_LANES):
            if s + lane < n:
                buf[0, lane], buf[1, lane] = x[s + lane], y[s + lane]
        _pow8(buf[0].ctypes.data, buf[1].ctypes.data, buf[2].ctypes.data)
        for lane in range(_LANES):
            if s + lane < n:
                out[s + lane] = buf[2, lane]


@njit(cache=True)
def _libm_pow(x, y, out):
    for i in range(len(x)):
        out[i] = x[i] ** y[i]


def _matches(fn) -> bool:
    """Whether ``fn`` reproduces np.power on a sample of the posterior's powers (bases in
    (0, 1.3], exponents of either sign over two decades)."""
    rng = np.random.default_rng(35)
    x = np.concatenate([rng.uniform(1e-3, 1.3, 4093), [1.0, 0.5, 1.0 + 1e-12]])
    y = np.exp(rng.uniform(-2.6, 2.6, len(x))) * np.where(np.arange(len(x)) % 2, 1.0, -1.0)
    out = np.empty_like(x)
    fn(x, y, out)
    return bool(np.array_equal(out, np.power(x, y)))


SVML_POW = bool(_ADDRESS) and _matches(_svml_pow)
EXACT = SVML_POW or _matches(_libm_pow)


@njit(cache=True, nogil=True)
def pow_row(base: float, exps: np.ndarray, out: np.ndarray) -> None:
    """out[c] = base ** exps[c] as numpy computes it (1-d, contiguous; out may be exps)."""
    n = len(exps)
    if SVML_POW:
        xs = np.full(_LANES, base)
        buf = np.ones((2, _LANES))
        px, pe, po = xs.ctypes.data, exps.ctypes.data, out.ctypes.data  # hoisted: each
        s = 0  # .ctypes costs a reference count's round trip
        while s + _LANES <= n:
            _pow8(px, pe + 8 * s, po + 8 * s)
            s += _LANES
        if s < n:
            for lane in range(n - s):
                buf[0, lane] = exps[s + lane]
            _pow8(xs.ctypes.data, buf[0].ctypes.data, buf[1].ctypes.data)
            for lane in range(n - s):
                out[s + lane] = buf[1, lane]
    else:
        for c in range(n):
            out[c] = base ** exps[c]


@njit(cache=True, nogil=True)
def pow_into(x: np.ndarray, y: np.ndarray, out: np.ndarray) -> None:
    """out[i] = x[i] ** y[i] as numpy computes it (1-d, contiguous; out may alias)."""
    n = len(x)
    if SVML_POW:
        buf = np.ones((3, _LANES))
        px, py, po = x.ctypes.data, y.ctypes.data, out.ctypes.data
        s = 0
        while s + _LANES <= n:
            _pow8(px + 8 * s, py + 8 * s, po + 8 * s)
            s += _LANES
        if s < n:
            for lane in range(n - s):
                buf[0, lane], buf[1, lane] = x[s + lane], y[s + lane]
            _pow8(buf[0].ctypes.data, buf[1].ctypes.data, buf[2].ctypes.data)
            for lane in range(n - s):
                out[s + lane] = buf[2, lane]
    else:
        for i in range(n):
            out[i] = x[i] ** y[i]
