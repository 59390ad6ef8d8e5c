"""What every contestant is built from: a case's arrays, the call, its mode, why it cannot run.

The lowest module of the harness: :mod:`.peers` and :mod:`.cases` build on it (the peers
are contestants that :mod:`.cases` names), and it imports neither.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

Call = Callable[[], Any]
#: scatterx_numba's compile mode (``wait`` or ``background``), read on every call.
NUMBA_COMPILE = "SCATTERX_NUMBA_COMPILE"
NUMBA_COMPILE_MODES = ("wait", "background")
#: How a contestant delivers its result: a new array (``"new"``), or written into a data
#: array of the benchmark's own, call after call (``"in-place"``: scatterx's ``out=data``,
#: ``Tensor.scatter_``, ``np.put_along_axis``, ``ufunc.at`` on data itself).
Mode = Literal["new", "in-place"]
MODES: tuple[Mode, ...] = ("new", "in-place")
FLOOR = "copy-floor"
#: What a case computes: ONNX ScatterElements (the standard cases), GatherElements (a
#: standard case's data and indices, :func:`.cases.gather_case`), ScatterND, GatherND.
Operation = Literal["scatter_elements", "gather_elements", "scatter_nd", "gather_nd"]
#: The operations that read data into a result of indices' making: no updates, no reduction.
GATHERS = ("gather_elements", "gather_nd")

BENCH_EXTRA = "pip install 'scatterx[bench]'"
_INSTALL = {
    "onnx": BENCH_EXTRA,
    "onnxruntime": BENCH_EXTRA,
    "torch": "pip install torch",
    "cupy": "pip install 'scatterx[cupy]'",
    "jax": "pip install 'scatterx[jax]'",
    "dask": "pip install 'scatterx[dask]'",
}


@dataclass(frozen=True)
class BenchCase:
    """One case's inputs (data and updates of one float dtype, integer indices) and its axis.

    ``op`` says what it computes: for ``scatter_nd`` and ``gather_nd`` the rows of
    ``indices`` name slices of data (``axis`` is 0), and a gather has no updates (None).
    """

    name: str
    data: Any
    indices: Any
    updates: Any
    axis: int
    op: Operation = "scatter_elements"

    @property
    def arrays(self) -> tuple[Any, Any, Any]:
        """``(data, indices, updates)``."""
        return self.data, self.indices, self.updates

    def to(self, convert: Callable[[Any], Any]) -> BenchCase:
        """The same case with each array passed through ``convert`` (``cupy.asarray``)."""
        data, indices, updates = (None if a is None else convert(a) for a in self.arrays)
        return replace(self, data=data, indices=indices, updates=updates)


class Unavailable(NotImplementedError):
    """A contestant that cannot run here; the message says why (and what to install)."""


def require(module: str) -> None:
    """Raise :class:`Unavailable` when ``module`` is not installed, naming the install."""
    if importlib.util.find_spec(module) is None:
        msg = f"{module} is not installed ({_INSTALL.get(module, f'pip install {module}')})"
        raise Unavailable(msg)


def synchronised(call: Call, array: Any) -> Call:
    """``call``, returning once the GPU holding ``array`` is done (launches are asynchronous)."""
    cupy = sys.modules.get("cupy")
    if cupy is None or not isinstance(array, cupy.ndarray):
        return call
    return then(call, cupy.cuda.get_current_stream().synchronize)


def then(call: Call, wait: Callable[[], object]) -> Call:
    """``call``, then ``wait()`` (a device's synchronisation) before returning its result."""

    def run() -> Any:
        out = call()
        wait()
        return out

    return run


def wait_for_numba() -> None:
    """Make automatic choice wait for numba's compiles, in this process and those it starts.

    The harnesses time compiled code: in automatic choice (Dask's blocks, gradients, the
    libraries' calls) numba would otherwise leave a call's first runs, warm-ups included, to
    numpy while it compiles in the background. The environment, not
    ``scatterx_numba.set_compile_mode``: worker processes (distributed's) inherit it. The
    entry points call this (asv suites in ``setup``, ``tools/gpu_bench.py``; the command has
    ``--numba-compile``); importing the harness changes nothing.
    """
    os.environ[NUMBA_COMPILE] = "wait"


@contextlib.contextmanager
def numba_compile(mode: str) -> Iterator[None]:
    """Within the block, ``SCATTERX_NUMBA_COMPILE`` is ``mode`` (:func:`wait_for_numba` says
    why); as it was afterwards."""
    if mode not in NUMBA_COMPILE_MODES:
        msg = f"the numba compile mode is one of {', '.join(NUMBA_COMPILE_MODES)}; got {mode!r}"
        raise ValueError(msg)
    before = os.environ.get(NUMBA_COMPILE)
    os.environ[NUMBA_COMPILE] = mode
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(NUMBA_COMPILE, None)
        else:
            os.environ[NUMBA_COMPILE] = before
