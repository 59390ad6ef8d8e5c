"""The cupy backend's CUDA source compiles with nvcc, and its float16 rounding is NumPy's.

These need nvcc only, no GPU: a kernel that does not compile fails CI here, the opt-in
fast paths' kernels (``_kernels_fast.cu``) and the gather's (``_kernels_gather.cu``) included.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from scatterx_cupy import _compile

NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on PATH")
SOURCE = Path(_compile.__file__).with_name(_compile.SOURCE)
FAST_SOURCE = Path(_compile.__file__).with_name(_compile.FAST_SOURCE)
GATHER_SOURCE = Path(_compile.__file__).with_name(_compile.GATHER_SOURCE)


#: One dtype of each C++ type family the kernels are instantiated for (the cupy
#: emulation's): every template meets each kind of element type. The PTX of these is the
#: default test's; the slow test compiles every dtype's kernels, through ptxas too.
FAMILY_KEYS = ("bool", "int32", "uint8", "float16", "float32", "float64", "complex64")


def _instantiations(gather_alone: bool = False, keys: tuple[str, ...] | None = None) -> str:
    """A translation unit that includes the sources and takes the address of every kernel
    of ``keys`` (default: every dtype).

    The list is the runtime's own (``name_expressions``, with and without the fast paths,
    and the gather's), so what NVRTC is asked to build is exactly what nvcc builds here.
    ``gather_alone``: the gather's source and kernels only, as NVRTC compiles them.
    """
    names = _compile.gather_expressions()
    sources = [GATHER_SOURCE]
    if not gather_alone:
        sources += [SOURCE, FAST_SOURCE]
        for fast in (False, True):
            for key in _compile.CPP_TYPES if keys is None else keys:
                names += _compile.name_expressions(key, fast)
            names += _compile.target_expressions(fast)
    lines = [f'#include "{source}"' for source in sources]
    lines += ["void* scx_every_kernel[] = {", *(f"    (void*)&{name}," for name in names), "};"]
    return "\n".join(lines) + "\n"


def _nvcc(*args: str) -> None:
    assert NVCC is not None
    done = subprocess.run([NVCC, *args], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-4000:]


def _compile_every_kernel(
    tmp_path: Path, *targets: str, gather_alone: bool = False, keys: tuple[str, ...] | None = None
) -> None:
    unit = tmp_path / "every_kernel.cu"
    unit.write_text(_instantiations(gather_alone, keys))
    options = [opt for opt in _compile.compile_options() if opt != "--ftz=false"]
    _nvcc(*options, *targets, str(unit), "-o", str(tmp_path / "every_kernel.out"))


@needs_nvcc
@pytest.mark.parametrize("gather_alone", [False, True], ids=["every-family", "gather-alone"])
def test_the_kernels_compile_to_ptx(tmp_path: Path, gather_alone: bool) -> None:
    # The C++ of each template for every family of element types, as NVRTC sees it; and
    # the gather module, which NVRTC builds from _kernels_gather.cu and nothing else.
    _compile_every_kernel(
        tmp_path, "-arch=compute_90", "--ptx", keys=FAMILY_KEYS, gather_alone=gather_alone
    )


@pytest.mark.slow
@needs_nvcc
def test_every_kernel_compiles_to_ptx(tmp_path: Path) -> None:
    # The C++ of every instantiation, as NVRTC sees it (the slow test below adds ptxas).
    _compile_every_kernel(tmp_path, "-arch=compute_90", "--ptx")


@pytest.mark.slow
@needs_nvcc
def test_every_kernel_compiles_for_sm80_and_sm90(tmp_path: Path) -> None:
    # ptxas too: register allocation and the machine code of both architectures.
    _compile_every_kernel(
        tmp_path,
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_90,code=sm_90",
        "-c",
    )


_HALF_PROGRAM = """
#include "{source}"
#include <cstdio>
int main(int argc, char** argv) {{
    FILE* in = fopen(argv[1], "rb");
    FILE* out = fopen(argv[2], "wb");
    unsigned int bits;
    while (fread(&bits, 4, 1, in) == 1) {{
        unsigned short half = scx_float_bits_to_half(bits);
        fwrite(&half, 2, 1, out);
    }}
    for (unsigned int half = 0; half < 65536; ++half) {{
        unsigned int wide = scx_half_to_float_bits((unsigned short)half);
        fwrite(&wide, 4, 1, out);
    }}
    fclose(in);
    fclose(out);
    return 0;
}}
"""


def _float_bits_to_check() -> np.ndarray:
    """Random words plus every float near the half range: ties, subnormals, overflow, NaN."""
    rng = np.random.default_rng(20240)
    near = np.arange(0x33000000 - 4096, 0x47800000 + 4096, 61, dtype=np.uint32)
    ties = (np.arange(65536, dtype=np.uint32) << 13) + 0x38001000
    nans = 0x7F800000 + np.arange(0, 2**23, 4099, dtype=np.uint32)
    words = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    bits = np.concatenate([near, ties, nans, words])
    return np.concatenate([bits, bits | np.uint32(0x80000000)])


@needs_nvcc
def test_float16_conversions_match_numpy(tmp_path: Path) -> None:
    program = tmp_path / "half.cu"
    program.write_text(_HALF_PROGRAM.format(source=SOURCE))
    _nvcc("-std=c++17", str(program), "-o", str(tmp_path / "half"))
    bits = _float_bits_to_check()
    bits.tofile(tmp_path / "in.bin")
    subprocess.run([tmp_path / "half", tmp_path / "in.bin", tmp_path / "out.bin"], check=True)
    raw = np.fromfile(tmp_path / "out.bin", dtype=np.uint8)
    halves = raw[: 2 * bits.size].view(np.uint16)
    widened = raw[2 * bits.size :].view(np.uint32)
    with np.errstate(over="ignore"):
        expected_halves = bits.view(np.float32).astype(np.float16).view(np.uint16)
    every_half = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    expected_widened = every_half.astype(np.float32).view(np.uint32)
    np.testing.assert_array_equal(halves, expected_halves)
    np.testing.assert_array_equal(widened, expected_widened)
