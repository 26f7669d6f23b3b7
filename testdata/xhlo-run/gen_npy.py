#!/usr/bin/env python3
"""gen_npy.py - write the .npy fixtures of tests/check-xhlo-run.sh with NumPy
itself (so the tests check interoperability with real NumPy files).

Each npy/<name>.npy holds a 2x3 array with the values listed in
npy/values.txt (name, then the values in xhlo-run's text form).  Also a
Fortran-order file, a big-endian file, a format-2.0 file and a bfloat16 file
(ml_dtypes; NumPy records it as a 2-byte void dtype).  Checked in; run from
the repository root:  python3 testdata/xhlo-run/gen_npy.py
"""
import os
import numpy as np
import ml_dtypes

D = os.path.join(os.path.dirname(os.path.abspath(__file__)), "npy")
os.makedirs(D, exist_ok=True)

arrays = {
    "pred": np.array([[True, False, True], [False, False, True]]),
    "s8": np.array([[-128, -1, 0], [1, 2, 127]], np.int8),
    "s16": np.array([[-32768, -1, 0], [1, 300, 32767]], np.int16),
    "s32": np.array([[-2**31, -1, 0], [1, 70000, 2**31 - 1]], np.int32),
    "s64": np.array([[-2**63, -1, 0], [1, 2**40, 2**63 - 1]], np.int64),
    "u8": np.array([[0, 1, 2], [128, 254, 255]], np.uint8),
    "u16": np.array([[0, 1, 2], [300, 65534, 65535]], np.uint16),
    "u32": np.array([[0, 1, 2], [70000, 2**32 - 2, 2**32 - 1]], np.uint32),
    "u64": np.array([[0, 1, 2], [2**40, 2**64 - 2, 2**64 - 1]], np.uint64),
    "f16": np.array([[0.5, -1.5, 65504], [1e-4, -0.0, 3.140625]], np.float16),
    "f32": np.array([[0.1, -1.5, 3.4e38], [1e-40, -0.0, 2.5]], np.float32),
    "f64": np.array([[0.1, -1.5, 1e300], [5e-324, -0.0, 2.5]], np.float64),
    "c64": np.array([[1 + 2j, -0.5j, 3], [0, 1e10 - 1j, -1 - 1j]], np.complex64),
    "c128": np.array([[1 + 2j, -0.5j, 3], [0, 1e100 - 1j, -1 - 1j]], np.complex128),
}


def text(a):
    out = []
    for v in a.reshape(-1):
        if a.dtype == np.bool_:
            out.append("1" if v else "0")
        elif np.iscomplexobj(a):
            re, im = repr(float(v.real)), repr(float(v.imag))
            out.append(f"{re}{'' if im.startswith('-') else '+'}{im}j")
        elif np.issubdtype(a.dtype, np.integer):
            out.append(str(int(v)))
        else:
            out.append(repr(float(v)))
    return " ".join(out)


with open(os.path.join(D, "values.txt"), "w") as f:
    for name, a in arrays.items():
        np.save(os.path.join(D, f"{name}.npy"), a)
        f.write(f"{name}\t{text(a)}\n")

f32 = arrays["f32"]
np.save(os.path.join(D, "f32_fortran.npy"), np.asfortranarray(f32))
np.save(os.path.join(D, "f32_bigendian.npy"), f32.astype(">f4"))
with open(os.path.join(D, "f32_v2.npy"), "wb") as f:
    np.lib.format.write_array(f, f32, version=(2, 0))
np.save(os.path.join(D, "bf16.npy"), np.array([[1, -2.5, 0.1], [3, 1e30, -0.0]], ml_dtypes.bfloat16))
np.save(os.path.join(D, "f32_scalar.npy"), np.float32(7.25))
np.save(os.path.join(D, "f32_empty.npy"), np.zeros((0, 3), np.float32))
with open(os.path.join(D, "bf16.bin"), "wb") as f:
    f.write(np.array([[1, -2.5, 0.1], [3, 1e30, -0.0]], ml_dtypes.bfloat16).tobytes())
# malformed files
good = open(os.path.join(D, "f32.npy"), "rb").read()
open(os.path.join(D, "bad_magic.npy"), "wb").write(b"\x93NUMPZ" + good[6:])
open(os.path.join(D, "truncated.npy"), "wb").write(good[:-5])
open(os.path.join(D, "bad_header.npy"), "wb").write(good[:10] + good[10:].replace(b"'shape'", b"'shaep'"))
print("wrote", D)
