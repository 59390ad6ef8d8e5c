"""The array-api-strict adapter: which of its devices are CPU memory."""

from __future__ import annotations

from .base import Array, Library


class ArrayApiStrict(Library):
    """array-api-strict: its devices other than ``CPU_DEVICE`` stand for memory NumPy
    cannot reach (its DLPack refuses them), though they say they are CPU memory."""

    def memory(self, array: Array) -> str | None:
        import array_api_strict

        return "cpu" if array.device == array_api_strict.Device("CPU_DEVICE") else None
