"""``out=`` (contract section 7): the result in ``out``, in place, every check, and ``out``
left byte for byte as it was when a call raises."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import pytest

import scatterx

BACKENDS = [
    "numpy",
    pytest.param(
        "numba",
        marks=pytest.mark.skipif(
            scatterx.explain(
                np.zeros(1), np.zeros(1, np.int64), np.zeros(1), backend="numba"
            ).backend
            is None,
            reason="numba is not available",
        ),
    ),
]
REDUCTIONS = ["none", "add", "mul", "max", "min"]
# Shapes that reach each numba strategy: columns, segments (a histogram), rows (constant
# index rows), last-axis columns with indices shorter than data off the axis.
SHAPES = [
    ((300, 400), (500, 400), 0),
    ((2000,), (100_000,), 0),
    ((3000, 64), (4096, 64), 0),
    ((64, 50), (60, 30), 1),
]
# Few dtypes: each storage family is a kernel signature numba compiles on a cold cache;
# these are the conformance matrix's (its strategy rows compile the same signatures).
DTYPES = [np.float32, np.int32, np.bool_]


def _case(shape: Any, index_shape: Any, axis: int, dtype: Any, seed: int = 0) -> tuple[Any, ...]:
    rng = np.random.default_rng(seed)
    size = shape[axis]
    indices = rng.integers(-size, size, index_shape)
    if index_shape == (4096, 64):  # an embedding gradient's rows: one id each
        indices = np.repeat(rng.integers(0, size, (4096, 1)), 64, axis=1)
    data = (rng.random(shape) * 3).astype(dtype)
    updates = (rng.random(index_shape) * 3).astype(dtype)
    return data, indices, updates


def _bits(array: Any) -> bytes:
    return np.ascontiguousarray(array).tobytes()


def _defined(dtype: Any, reduction: str) -> bool:
    return not (np.dtype(dtype).kind == "c" and reduction in ("max", "min"))


Test = TypeVar("Test", bound=Callable[..., None])


def _each_call(test: Test) -> Test:
    """Parametrize ``test`` over each backend, reduction and shape of SHAPES (``backend``,
    ``reduction``, ``shape``, ``index_shape``, ``axis``)."""
    test = pytest.mark.parametrize(("shape", "index_shape", "axis"), SHAPES)(test)
    test = pytest.mark.parametrize("reduction", REDUCTIONS)(test)
    return pytest.mark.parametrize("backend", BACKENDS)(test)


@_each_call
def test_out_and_in_place_equal_the_new_result(
    backend: str, reduction: str, shape: Any, index_shape: Any, axis: int
) -> None:
    for dtype in DTYPES:
        if not _defined(dtype, reduction):
            continue
        data, indices, updates = _case(shape, index_shape, axis, dtype)
        call = {"axis": axis, "reduction": reduction, "backend": backend}
        expected = scatterx.scatter_elements(data, indices, updates, **call)
        kept = data.copy()
        out = np.full_like(data, 7)
        assert scatterx.scatter_elements(data, indices, updates, out=out, **call) is out
        assert _bits(out) == _bits(expected), (dtype, "out")
        assert _bits(data) == _bits(kept)
        assert scatterx.scatter_elements(data, indices, updates, out=data, **call) is data
        assert _bits(data) == _bits(expected), (dtype, "in place")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("order", ["F", "strided", "big-endian"])
def test_out_of_any_layout_gets_the_result(backend: str, order: str) -> None:
    data, indices, updates = _case((300, 400), (500, 400), 0, np.float32)
    expected = scatterx.scatter_elements(data, indices, updates, reduction="add", backend=backend)
    if order == "F":
        out = np.asfortranarray(np.zeros_like(data))
    elif order == "strided":
        out = np.zeros((300, 800), np.float32)[:, ::2]
    else:
        out = np.zeros(data.shape, ">f4")
        data = data.astype(">f4")
        updates = updates.astype(">f4")
    result = scatterx.scatter_elements(
        data, indices, updates, reduction="add", out=out, backend=backend
    )
    assert result is out
    assert np.array_equal(out, expected)


@_each_call
def test_out_is_untouched_when_an_index_is_out_of_bounds(
    backend: str, reduction: str, shape: Any, index_shape: Any, axis: int
) -> None:
    data, indices, updates = _case(shape, index_shape, axis, np.float32, seed=1)
    bad = indices.copy()
    bad.reshape(-1)[-1] = shape[axis]  # last in C order: a kernel would have written the rest
    call = {"axis": axis, "reduction": reduction, "backend": backend}
    with pytest.raises(IndexError) as new:
        scatterx.scatter_elements(data, bad, updates, **call)
    for out in (np.full_like(data, 2.5), data):
        before = _bits(out)
        with pytest.raises(IndexError) as written:
            scatterx.scatter_elements(data, bad, updates, out=out, **call)
        assert str(written.value) == str(new.value)
        assert _bits(out) == before


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_into_out(backend: str) -> None:
    rng = np.random.default_rng(3)
    for dtype in (np.float32, np.bool_, np.complex128, np.int8):
        data = (rng.random((300, 40)) * 2).astype(dtype)
        indices = rng.integers(-300, 300, (5000, 40))
        expected = scatterx.gather_elements(data, indices, backend=backend)
        out = np.zeros((5000, 40), dtype)
        assert scatterx.gather_elements(data, indices, out=out, backend=backend) is out
        assert _bits(out) == _bits(expected)
        bad = indices.copy()
        bad[-1, -1] = 300
        before = _bits(out)
        with pytest.raises(IndexError, match="position \\(4999, 39\\)"):
            scatterx.gather_elements(data, bad, out=out, backend=backend)
        assert _bits(out) == before


def test_out_of_a_numpy_subclass_is_returned_itself(tmp_path: Any) -> None:
    stored = np.lib.format.open_memmap(tmp_path / "a.npy", "w+", np.float64, (4,))
    stored[:] = 1.0
    result = scatterx.scatter_elements(
        stored, np.array([1, 1]), np.array([2.0, 3.0]), reduction="mul", out=stored
    )
    assert result is stored
    assert stored.tolist() == [1.0, 6.0, 1.0, 1.0]


@pytest.mark.parametrize("dtype", ["object", "StringDType"])
def test_strings_into_out(dtype: str) -> None:
    kind = np.dtypes.StringDType() if dtype == "StringDType" else object
    data = np.array(["a", "b", "c"], dtype=kind)
    out = np.array(["", "", ""], dtype=kind)
    updates = np.array(["x", "y"], dtype=kind)
    scatterx.scatter_elements(data, np.array([2, 0]), updates, reduction="add", out=out)
    assert out.tolist() == ["ay", "b", "cx"]


def _refused(error: type[Exception], match: str, out: Any, **call: Any) -> None:
    data = call.pop("data", np.zeros((3, 4), np.float32))
    indices = call.pop("indices", np.zeros((2, 4), np.int64))
    updates = call.pop("updates", np.ones((2, 4), np.float32))
    before = _bits(out) if isinstance(out, np.ndarray) else None
    with pytest.raises(error, match=match):
        scatterx.scatter_elements(data, indices, updates, out=out, **call)
    if before is not None:
        assert _bits(out) == before


def test_out_of_another_dtype_shape_or_library_is_refused() -> None:
    _refused(
        TypeError,
        r"out must have the dtype of data, float32 \(no casting\); got float64",
        np.zeros((3, 4)),
    )
    _refused(
        ValueError,
        r"out must have the shape of data, \(3, 4\); got \(4, 3\)",
        np.zeros((4, 3), np.float32),
    )
    _refused(TypeError, "out must be an array to write the result into; got list", [[0.0] * 4] * 3)
    torch = pytest.importorskip("torch")
    _refused(
        TypeError,
        "out must come from the array library of data; got out: torch:Tensor",
        torch.zeros(3, 4),
    )


def test_read_only_and_masked_out_are_refused() -> None:
    frozen = np.zeros((3, 4), np.float32)
    frozen.flags.writeable = False
    _refused(ValueError, "out is read-only", frozen)
    masked = np.ma.masked_array(np.zeros((3, 4), np.float32))
    _refused(TypeError, "out is a numpy.ma.MaskedArray", masked)


def test_out_overlapping_an_input_is_refused() -> None:
    buffer = np.zeros((4, 4), np.float32)
    data, shifted = buffer[:3], buffer[1:]
    _refused(ValueError, "out overlaps data: .*pass out=data", shifted, data=data)
    updates = np.zeros((3, 4), np.float32)
    _refused(
        ValueError,
        "out overlaps updates",
        updates,
        indices=np.zeros((3, 4), np.int64),
        updates=updates,
    )
    raw = np.zeros(12, np.int64)
    _refused(
        ValueError,
        "out overlaps indices",
        raw.view(np.float64).reshape(3, 4),
        data=np.zeros((3, 4)),
        indices=raw[:8].reshape(2, 4),
        updates=np.ones((2, 4)),
    )
    # Interleaved columns of one buffer share no element: no overlap.
    both = np.zeros((3, 8), np.float32)
    result = scatterx.scatter_elements(
        both[:, ::2], np.zeros((1, 4), np.int64), np.ones((1, 4), np.float32), out=both[:, 1::2]
    )
    assert result[0].tolist() == [1.0] * 4


def test_gather_out_overlapping_data_is_refused() -> None:
    data = np.arange(8.0)
    with pytest.raises(ValueError, match="out overlaps data"):
        scatterx.gather_elements(data, np.array([1, 0, 2]), out=data[:3])


def test_immutable_and_lazy_libraries_refuse_out() -> None:
    jnp = pytest.importorskip("jax.numpy")
    with pytest.raises(TypeError, match="JAX arrays are immutable"):
        scatterx.scatter_elements(jnp.zeros(3), jnp.array([1]), jnp.ones(1), out=jnp.zeros(3))
    da = pytest.importorskip("dask.array")
    lazy = da.zeros(3)
    with pytest.raises(TypeError, match="Dask arrays are lazy"):
        scatterx.scatter_elements(lazy, da.from_array(np.array([1])), da.ones(1), out=lazy)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "complex64"])
def test_torch_out_and_in_place(backend: str, dtype: str) -> None:
    torch = pytest.importorskip("torch")
    kind = getattr(torch, dtype)
    generator = torch.Generator().manual_seed(0)
    data = torch.rand(3000, 40, generator=generator).to(kind)
    indices = torch.randint(0, 3000, (9000, 40), generator=generator)
    updates = torch.rand(9000, 40, generator=generator).to(kind)
    call = {"reduction": "add", "backend": backend}
    expected = scatterx.scatter_elements(data, indices, updates, **call)
    out = torch.empty_like(data)
    assert scatterx.scatter_elements(data, indices, updates, out=out, **call) is out
    assert torch.equal(out, expected)
    assert scatterx.scatter_elements(data, indices, updates, out=data, **call) is data
    assert torch.equal(data, expected)
    bad = indices.clone()
    bad[-1, -1] = 3000
    before = out.clone()
    with pytest.raises(IndexError):
        scatterx.scatter_elements(data, bad, updates, out=out, **call)
    assert torch.equal(out, before)


def test_torch_out_refusals() -> None:
    torch = pytest.importorskip("torch")
    data = torch.zeros(3, requires_grad=True)
    indices, updates = torch.tensor([1]), torch.ones(1)
    with pytest.raises(TypeError, match="autograd does not see writes into out"):
        scatterx.scatter_elements(data, indices, updates, out=torch.zeros(3))
    with torch.no_grad():
        out = torch.zeros(3)
        scatterx.scatter_elements(data, indices, updates, out=out)
    assert out.tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(TypeError, match="out requires grad"):
        scatterx.scatter_elements(
            torch.zeros(3), indices, updates, out=torch.zeros(3, requires_grad=True)
        )
    conj = torch.zeros(3, dtype=torch.complex64).conj()
    with pytest.raises(ValueError, match="conjugate or negative bit"):
        scatterx.scatter_elements(
            torch.zeros(3, dtype=torch.complex64),
            indices,
            torch.ones(1, dtype=torch.complex64),
            out=conj,
        )


def test_array_api_strict_out() -> None:
    xp = pytest.importorskip("array_api_strict")
    data = xp.asarray([1.0, 2.0, 3.0])
    out = xp.zeros(3)
    result = scatterx.scatter_elements(
        data, xp.asarray([0, 0]), xp.asarray([5.0, 6.0]), reduction="max", out=out
    )
    assert result is out
    assert np.asarray(out).tolist() == [6.0, 2.0, 3.0]


def test_explain_takes_out_and_checks_it_as_the_call_does() -> None:
    data = np.zeros(4, np.float32)
    indices, updates = np.array([1, 3]), np.ones(2, np.float32)
    for out, shown in ((data, "out=data"), (np.zeros(4, np.float32), "out=another array")):
        decision = scatterx.explain(data, indices, updates, out=out, backend="numpy")
        assert decision.backend == "numpy"
        assert decision.call.endswith(f"reduction='none', {shown})")
        assert out.tolist() == [0.0] * 4  # explain writes nothing
    frozen = np.zeros(4, np.float32)
    frozen.flags.writeable = False
    for call in (scatterx.scatter_elements, scatterx.explain):
        with pytest.raises(ValueError, match="out is read-only"):
            call(data, indices, updates, out=frozen)
        with pytest.raises(ValueError, match="shape"):
            call(data, indices, updates, out=np.zeros(5, np.float32))
    gathered = np.zeros(2, np.float32)
    assert scatterx.explain_gather(data, indices, out=gathered, backend="numpy").backend == "numpy"
    with pytest.raises(ValueError, match="out overlaps data"):
        scatterx.explain_gather(data, indices, out=data[:2])
