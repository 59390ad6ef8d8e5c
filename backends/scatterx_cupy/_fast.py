"""The opt-in fast paths of the cupy backend: the switch, and where each of them may run.

Off by default. ``SCATTERX_CUPY_FAST_PATHS=1`` (read at each call) or
:func:`set_fast_paths` turns them on. Their kernels (``_kernels_fast.cu``) are emulated on
the host by the tests but have not run on a GPU: ``tools/gpu_check.sh`` verifies them.
"""

from __future__ import annotations

import os

from . import _compile
from ._layout import Layout

ENV_VAR = "SCATTERX_CUPY_FAST_PATHS"
#: The strategies of the fast paths (see the package docstring).
FAST_STRATEGIES = ("winner", "warps", "rows")

_ON = frozenset({"1", "true", "yes", "on"})
_OFF = frozenset({"", "0", "false", "no", "off"})

#: One warp per column (axis innermost in indices) from this many columns and steps.
WARPS_MIN_COLS = 2048
WARPS_MIN_STEPS = 16
#: Winner arrays (4 or 8 bytes per element of data) for up to this many elements per update,
#: or up to WINNER_FREE elements whatever the number of updates.
WINNER_RATIO = 16
WINNER_FREE = 2**24
#: Winners number positions + 1 in 32 bits, 0 meaning none.
WINNER_MAX_UPDATES = 2**32 - 2
#: Sorting checks for whole index rows of one target (embeddings) from this many inner positions.
ROWS_MIN_INNER = 16

_choice: bool | None = None


def set_fast_paths(enabled: bool | None) -> None:
    """Turn the fast paths on or off in this process; None gives the choice back to the env var.

    Parameters
    ----------
    enabled : bool or None
        True: on, False: off, whatever ``SCATTERX_CUPY_FAST_PATHS`` says; None: as it says.

    Examples
    --------
    >>> import scatterx_cupy
    >>> scatterx_cupy.set_fast_paths(True)
    >>> scatterx_cupy.fast_paths_enabled()
    True
    >>> scatterx_cupy.set_fast_paths(None)
    """
    global _choice
    _choice = enabled


def fast_paths_enabled() -> bool:
    """Whether calls may take the fast paths: :func:`set_fast_paths`, else the env var.

    Raises
    ------
    ValueError
        When ``SCATTERX_CUPY_FAST_PATHS`` is set to something that is neither on nor off, so
        that a typo never silently runs (or verifies) the default paths instead.
    """
    if _choice is not None:
        return _choice
    value = os.environ.get(ENV_VAR, "").strip().lower()
    if value in _ON:
        return True
    if value in _OFF:
        return False
    msg = f"{ENV_VAR} must be 1 (on) or 0 (off); got {os.environ[ENV_VAR]!r}"
    raise ValueError(msg)


def before_columns(lay: Layout, key: str, reduction: str, data_size: int | None) -> str | None:
    """The fast strategy that goes before ``columns`` for a non-atomic call, or None.

    ``data_size`` (elements of ``data``) bounds the winner arrays; None: as many as updates.
    """
    if warps_fit(lay) and lay.n_cols >= WARPS_MIN_COLS:
        return "warps"
    n = lay.n_cols * lay.axis_len
    if _compile.uses_winners(key, reduction) and winners_fit(n, data_size or n):
        return "winner"
    return None


def warps_fit(lay: Layout) -> bool:
    """Whether the axis is innermost in indices with enough steps for a warp per column."""
    return lay.n_inner == 1 and lay.axis_len >= WARPS_MIN_STEPS


def winners_fit(n: int, data_size: int) -> bool:
    """Positions + 1 fit the 32-bit winners; the winner array is not much larger than ``n``."""
    return n <= WINNER_MAX_UPDATES and data_size <= max(WINNER_RATIO * n, WINNER_FREE)


def rows_fit(lay: Layout) -> bool:
    """Whether a sort is worth checking for index rows of one target first."""
    return lay.n_inner >= ROWS_MIN_INNER


def refusal(chosen: str, lay: Layout, key: str, reduction: str) -> str | None:
    """Why a forced fast strategy cannot give this call's bits (None: it can, or not fast)."""
    atomic = _compile.uses_atomics(key, reduction)
    if chosen == "warps" and (atomic or lay.n_inner != 1):
        return "warps need the axis innermost in indices and an ordered reduction"
    if chosen == "rows" and atomic:
        return "rows serve the ordered reductions; atomics are exact here"
    if chosen == "winner" and not (
        _compile.uses_winners(key, reduction) and lay.n_cols * lay.axis_len <= WINNER_MAX_UPDATES
    ):
        return "winners serve none, and float16/float32 max/min, under 2**32 - 1 updates"
    return None
