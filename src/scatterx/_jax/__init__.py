"""JAX traces: jit, vmap and grad; the XLA FFI target and its frame."""
