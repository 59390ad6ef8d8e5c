"""scatterx: ONNX ScatterElements, with the same answer on every backend."""

from ._api import explain, scatter_elements
from ._dtypes import DTYPE_KEYS, DTYPE_REDUCTIONS, REDUCTIONS, dtype_key
from ._errors import BackendError, check_bounds_numpy, out_of_bounds_error
from ._registry import Backend, BackendRecord, backends, register_backend
from ._request import ScatterRequest
from ._select import Decision, set_backend, use_backend

__version__ = "0.1.0"

__all__ = [
    "DTYPE_KEYS",
    "DTYPE_REDUCTIONS",
    "REDUCTIONS",
    "Backend",
    "BackendError",
    "BackendRecord",
    "Decision",
    "ScatterRequest",
    "__version__",
    "backends",
    "check_bounds_numpy",
    "dtype_key",
    "explain",
    "out_of_bounds_error",
    "register_backend",
    "scatter_elements",
    "set_backend",
    "use_backend",
]
