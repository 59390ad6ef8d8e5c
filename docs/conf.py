"""Sphinx configuration of the scatterx documentation."""

from __future__ import annotations

import sys
from pathlib import Path

import scatterx

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))

project = "scatterx"
author = "the scatterx developers"
copyright = "the scatterx developers"
release = scatterx.__version__
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "support_table",
    "bench_table",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# The generated tables are not pages: contract.md and performance.md include them.
exclude_patterns = ["_build", "generated/*_table.md"]
templates_path: list[str] = []

myst_enable_extensions = ["colon_fence", "deflist", "substitution"]


def _small_call_updates() -> str:
    """The numba backend's small-call threshold, read from the code so the pages follow it."""
    try:
        from scatterx_numba import SMALL_CALL_UPDATES
    except ImportError:  # docs built without the numba backend installed
        return "a few thousand"
    return str(SMALL_CALL_UPDATES)


myst_substitutions = {"numba_small_call_updates": _small_call_updates()}
myst_heading_anchors = 3

autosummary_generate = True
autodoc_typehints = "none"
# numpydoc lists class members itself; autosummary's own tables would list them twice.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# numpydoc checks every docstring the API pages render (warnings, so errors under -W), with
# all its checks but three: an extended summary, See Also, and Examples, which numpydoc
# would ask of every class, property and exception too.
numpydoc_validation_checks = {"all", "ES01", "SA01", "EX01"}
# Public objects whose docstrings still lack what numpydoc asks for (mostly Parameters,
# Returns or Yields sections); each leaves this list when its docstring is completed.
numpydoc_validation_exclude = {
    r"(^|\.)_",  # private names, and the __init__ of classes their docstring documents
    r"\.[A-Z][A-Z0-9_]*$",  # constants: numpydoc would check the docstring of their type
    # Protocols are never constructed: numpydoc would ask for their (*args, **kwargs).
    r"^scatterx\.backend\.(Backend|GathersElements|SkipsAutomatic|ConvertsArrays)$",
    r"\.(Scatter|Gather)Request\.(count|index)$",  # the methods a named tuple has from tuple
    # NumpyArrays implements ConvertsArrays' two methods, whose docstrings document them.
    r"^scatterx\.backend\.NumpyArrays\.(from_numpy|to_numpy)$",
    # Class attributes (a str, a tuple): numpydoc would check the docstring of their type.
    r"\.(Scatter|Gather)Request\.(roles|operation)$",
}
numpydoc_validation_overrides = {
    # A record (dataclass, named tuple) documents its fields under Attributes, not
    # Parameters, and a named tuple's field has Python's docstring, without a period.
    "PR01": [r"\n\s*Attributes\n\s*-+\n"],
    "SS03": [r"\AAlias for field number \d+\Z"],
}

html_theme = "furo"
html_title = f"scatterx {release}"
html_static_path = ["_static"]
