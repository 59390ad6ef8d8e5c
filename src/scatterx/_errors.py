"""Exceptions of scatterx and the index-bounds error every backend raises alike."""

from __future__ import annotations


class BackendError(RuntimeError):
    """A named backend cannot run the call; the message says why."""


def out_of_bounds_error(value: int, position: tuple[int, ...], axis: int, size: int) -> IndexError:
    """Build the contract's IndexError for the first bad index in C order.

    Every backend raises exactly this message, whether it checks bounds before or
    inside its kernel.

    Parameters
    ----------
    value : int
        The bad index.
    position : tuple of int
        Its position in ``indices``.
    axis : int
        The (non-negative) axis of the call.
    size : int
        The length of ``data`` along ``axis``.

    Returns
    -------
    IndexError
        The error to raise.

    Examples
    --------
    >>> from scatterx.backend import out_of_bounds_error
    >>> print(out_of_bounds_error(5, (0, 1), 1, 3))  # doctest: +NORMALIZE_WHITESPACE
    index 5 at position (0, 1) of indices is out of bounds for axis 1 with size 3:
    valid indices are in [-3, 2]
    """
    valid = f"valid indices are in [{-size}, {size - 1}]" if size else "no index is valid"
    msg = (
        f"index {value} at position {position} of indices is out of bounds "
        f"for axis {axis} with size {size}: {valid}"
    )
    return IndexError(msg)
