"""scatterx on the arrays of other libraries (torch CPU tensors, JAX CPU arrays) and their peers.

``python asv_bench/bench.py --library torch`` times the same scatterx call on a library's
arrays and on NumPy arrays side by side (performance.md: within 1.1x, at most 5 microseconds
more on the 3x3 call), and the library's own scatter beside them: ``torch.scatter`` /
``torch.scatter_reduce(include_self=True)``, and ``.at[].set/add/max`` under ``jax.jit``.
scatterx on JAX arrays runs under ``jax.jit`` too, as JAX users run it. Dask arrays
(``--library dask``), lazy, have a table of their own: :mod:`.dask_bench`.
"""

from __future__ import annotations

import contextlib
import statistics
import time
import timeit
from collections.abc import Iterator
from typing import Any

import numpy as np

from scatterx import BackendError, scatter_elements

from .base import BenchCase, Call, Unavailable, require
from .cases import make_call
from .dask_arrays import to_dask

LIBRARIES = ("numpy", "torch", "jax", "dask")
PEER = {"torch": "torch.scatter_reduce", "jax": "jax .at[] jit"}
PEER_NOTE = {
    "torch": "torch.scatter for none, torch.scatter_reduce(include_self=True) otherwise",
    "jax": ".at[].set/add/max(mode='promise_in_bounds') under jax.jit, compiled beforehand; "
    "the order of duplicate indices under set is unspecified: a speed peer only",
}
_JAX_AT = {"none": "set", "add": "add", "mul": "multiply", "max": "max", "min": "min"}


def on(backend: str, library: str) -> str:
    """The column of scatterx's ``backend`` on ``library``'s arrays: ``"numba on torch"``."""
    return f"{backend} on {library}"


def require_library(library: str) -> None:
    """Raise :class:`Unavailable` when ``library`` is not installed, naming the install."""
    if library not in LIBRARIES:
        msg = f"unknown library {library!r}; the libraries are {', '.join(LIBRARIES)}"
        raise ValueError(msg)
    require(library)


@contextlib.contextmanager
def arrays_of(library: str) -> Iterator[None]:
    """Where :func:`to_library` and the calls on its arrays run: JAX with 64-bit types on.

    JAX turns int64 into int32 unless ``jax_enable_x64`` is set; the standard cases' indices
    are int64, and the call on JAX arrays must be the call on NumPy arrays. The setting is
    the context's only (thread-local), so a test process keeps its own.
    """
    if library != "jax":
        yield
        return
    import jax

    with jax.enable_x64(True):
        yield


def to_library(case: BenchCase, library: str) -> BenchCase:
    """``case`` with its arrays made once in ``library``: zero-copy for torch, copied for JAX,
    Dask arrays chunked as :func:`.dask_arrays.to_dask` does by default.

    JAX arrays are made inside :func:`arrays_of`, which keeps their int64 indices.
    """
    require_library(library)
    if library == "numpy":
        return case
    if library == "dask":
        return to_dask(case)
    if library == "torch":
        import torch

        return case.to(torch.from_numpy)
    import jax

    moved = case.to(jax.device_put)
    for made, source in zip(moved.arrays, case.arrays, strict=True):
        if made.dtype != source.dtype:
            msg = f"jax made {made.dtype} of {source.dtype}: enter arrays_of('jax') first"
            raise RuntimeError(msg)
    for made in moved.arrays:
        made.block_until_ready()
    return moved


def in_layout_of(case: BenchCase, library: str) -> BenchCase:
    """``case``'s NumPy arrays laid out as :func:`to_library` holds them in ``library``, for
    the call on NumPy arrays that a library's row is compared with: JAX arrays are C-ordered
    whatever their source (square-transposed's Fortran-ordered arrays become C-ordered
    copies), so that side gets C-ordered copies too; torch's tensors and Dask's blocks keep
    the case's strides, and so does the case."""
    if library != "jax":
        return case
    return case.to(np.ascontiguousarray)


def _ready(call: Call) -> Call:
    """``call``, returning once a JAX result is computed (its dispatch is asynchronous)."""

    def run() -> Any:
        out = call()
        wait = getattr(out, "block_until_ready", None)
        return out if wait is None else wait()

    return run


def scatterx_call(backend: str, case: BenchCase, reduction: str) -> Call:
    """scatterx's ``backend`` on the arrays of ``case``, whichever library made them, warmed.

    A backend that declines them (or a scatterx that does not take them yet) is
    :class:`Unavailable`, its message saying why.
    """
    library = type(case.data).__module__.partition(".")[0]
    if library.startswith("jax"):
        return _scatterx_jit(backend, case, reduction)
    try:
        call = make_call(backend, case, reduction)
    except TypeError as exc:  # a library scatterx does not take (yet)
        msg = f"scatterx on {library} arrays: {exc}"
        raise Unavailable(msg) from exc
    return call


def _scatterx_jit(backend: str, case: BenchCase, reduction: str) -> Call:
    """scatterx's ``backend`` on JAX arrays under ``jax.jit``, as JAX users run it (the
    peer's way too), compiled and warmed beforehand."""
    import jax

    def scatter(data: Any, indices: Any, updates: Any) -> Any:
        return scatter_elements(
            data, indices, updates, axis=case.axis, reduction=reduction, backend=backend
        )

    jitted = jax.jit(scatter)
    data, indices, updates = case.arrays

    def call() -> Any:
        return jitted(data, indices, updates).block_until_ready()

    return _warmed(call, "scatterx under jax.jit")


#: The column label of scatterx on JAX arrays under ``jax.jit`` with ``data`` donated:
#: ``"numba on jax, donated"``.
DONATED = "jax, donated"
DONATED_NOTE = (
    "jax.jit(..., donate_argnums=0), each call donating the last one's result as its data "
    "(written in place); against the same call on NumPy arrays, returning a new array"
)


def donated_call(backend: str, case: BenchCase, reduction: str) -> Call:
    """scatterx's ``backend`` under ``jax.jit(..., donate_argnums=0)``, warmed: each call
    donates the last call's result as its ``data`` (a training step's way), which the
    call updates in place; ``mul`` takes updates near 1 (:func:`.cases.in_place_case`'s
    rule), so that the products stay normal numbers. ``case`` holds JAX arrays."""
    import jax
    import jax.numpy as jnp

    def scatter(data: Any, indices: Any, updates: Any) -> Any:
        return scatter_elements(
            data, indices, updates, axis=case.axis, reduction=reduction, backend=backend
        )

    jitted = jax.jit(scatter, donate_argnums=0)
    _, indices, updates = case.arrays
    if reduction == "mul":
        updates = (updates - 1) * _NEAR_ONE + 1
    state = [jnp.array(case.data, copy=True)]

    def call() -> Any:
        state[0] = jitted(state[0], indices, updates)
        return state[0].block_until_ready()

    return _warmed(call, "scatterx under jax.jit, data donated")


_NEAR_ONE = 1 / 1024  # as .cases' in-place mul


def _warmed(call: Call, what: str) -> Call:
    """``call``, run once; :class:`Unavailable` where scatterx refuses it, saying why."""
    try:
        call()
    except (BackendError, TypeError) as exc:
        msg = f"{what}: {exc}"
        raise Unavailable(msg) from exc
    return call


def peer_call(library: str, case: BenchCase, reduction: str) -> Call:
    """The library's own scatter on its arrays of ``case`` (:data:`PEER_NOTE`), warmed."""
    if library == "torch":
        return make_call("torch", case, reduction)
    if library == "jax":
        call = _jax_at(case, reduction)
        call()  # compiles: outside the timing
        return call
    msg = f"{library} has no peer here"
    raise Unavailable(msg)


def _jax_at(case: BenchCase, reduction: str) -> Call:
    """``data.at[index].set/add/...(updates)`` under ``jax.jit``: ``index`` is ``indices`` on
    ``axis`` and the position itself on every other dimension (iotas made inside the jit)."""
    import jax
    from jax import lax

    axis, method = case.axis, _JAX_AT[reduction]

    def scatter(data: Any, indices: Any, updates: Any) -> Any:
        index = tuple(
            indices if dim == axis else lax.broadcasted_iota(indices.dtype, indices.shape, dim)
            for dim in range(indices.ndim)
        )
        return getattr(data.at[index], method)(updates, mode="promise_in_bounds")

    jitted = jax.jit(scatter)
    data, indices, updates = case.arrays
    return lambda: jitted(data, indices, updates).block_until_ready()


def paired_ms(calls: dict[str, Call], repeat: int) -> dict[str, float]:
    """Median ms of each call, the calls taking turns sample by sample, after one untimed call.

    For calls of one backend on two libraries' arrays: the same thread pool runs both, and
    a load that comes and goes on the machine hits both alike, which keeps their ratio.
    """
    for call in calls.values():
        call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            samples[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(times) for name, times in samples.items()}


def small_calls(
    library: str, case: BenchCase, backends: list[str]
) -> tuple[dict[str, Call], list[tuple[str, str]]]:
    """The 3x3 calls to time for ``library``: scatterx on NumPy and on ``library`` per backend.

    ``case`` holds NumPy arrays (:func:`~.cases.spec_example`). Keys are ``(auto) on numpy``,
    ``(auto) on torch`` (automatic choice), then ``numba on numpy``, ``numba on torch``...
    and the peer. Returns the calls and ``(name, why)`` for each one that cannot run.
    """
    moved = to_library(case, library)
    calls: dict[str, Call] = {}
    skipped: list[tuple[str, str]] = []
    for backend in [None, *backends]:
        name = backend or "(auto)"
        try:
            pair = {on(name, "numpy"): _front_end(case, backend)}
            pair[on(name, library)] = _front_end(moved, backend)
        except Unavailable as why:
            skipped.append((name, str(why)))
            continue
        calls.update(pair)
    if library in PEER:
        try:
            calls[PEER[library]] = peer_call(library, moved, "none")
        except Unavailable as why:
            skipped.append((PEER[library], str(why)))
    return calls, skipped


def _front_end(case: BenchCase, backend: str | None) -> Call:
    """``scatter_elements`` as a user calls it, on the arrays of ``case``, warmed up once."""
    data, indices, updates = case.arrays

    def call() -> Any:
        return scatter_elements(data, indices, updates, axis=case.axis, backend=backend)

    library = type(data).__module__.partition(".")[0]
    run = _ready(call) if library.startswith("jax") else call
    return _warmed(run, f"scatterx on {library} arrays")


def interleaved_us(
    calls: dict[str, Call], number: int, rounds: int, sample_s: float = 0.05
) -> dict[str, list[float]]:
    """Microseconds per call of each call, one sample per round; the calls take turns.

    Each sample is the mean of ``number`` calls in a row (``timeit``), as
    ``tools/small_call_ratio.py`` and asv time the 3x3 call; of fewer for a call slower
    than ``sample_s / number`` (the numba backend's parallel launch), about ``sample_s``.
    """
    counts = {}
    for name, call in calls.items():
        once = timeit.timeit(call, number=5) / 5
        counts[name] = max(5, min(number, int(sample_s / max(once, 1e-9))))
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(timeit.timeit(call, number=counts[name]) / counts[name] * 1e6)
    return samples


def median_difference(first: list[float], second: list[float]) -> float:
    """Median over rounds of ``second - first``: a per-round difference, so load cancels."""
    return statistics.median(b - a for a, b in zip(first, second, strict=True))
