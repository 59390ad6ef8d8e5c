"""scatterx: ONNX's scatter and gather operators, with the same answer on every backend.

Backend authors: the seam is :mod:`scatterx.backend`.
"""

from . import backend
from ._api import (
    explain,
    explain_gather,
    explain_nd,
    gather_elements,
    gather_nd,
    scatter_elements,
    scatter_nd,
)
from ._config import set_backend, use_backend
from ._dtypes import DTYPE_KEYS, DTYPE_REDUCTIONS, REDUCTIONS, dtype_key
from ._errors import BackendError
from ._plan import Decision
from ._registry import BackendRecord, backends, register_backend
from ._torch.autograd import TorchCompileWarning

__version__ = "0.1.0"

__all__ = [
    "DTYPE_KEYS",
    "DTYPE_REDUCTIONS",
    "REDUCTIONS",
    "BackendError",
    "BackendRecord",
    "Decision",
    "TorchCompileWarning",
    "__version__",
    "backend",
    "backends",
    "dtype_key",
    "explain",
    "explain_gather",
    "explain_nd",
    "gather_elements",
    "gather_nd",
    "register_backend",
    "scatter_elements",
    "scatter_nd",
    "set_backend",
    "use_backend",
]
