"""torch's import defines scatterx's operators here: a module that cannot fail to import.

torch loads the entry points of its ``torch.backends`` group at the end of its own import
(out-of-tree extension autoloading) and turns any error into a failed ``import torch``; so
the entry point names this module, which imports nothing at its own import, and whatever
goes wrong while scatterx defines its operators is a warning, never a torch that will not
import.
"""

from __future__ import annotations

import warnings


def torch_imported() -> None:
    """Define scatterx's torch operators, so that ``torch.ops.scatterx`` is there whatever
    the order of imports and a compiled function's first call finds them defined."""
    try:
        from scatterx._torch.ops import define

        define()
    except Exception as exc:
        warnings.warn(f"scatterx could not define its torch operators: {exc!r}", stacklevel=2)
