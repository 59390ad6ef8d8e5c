"""torch operators, their rules (fake shapes, vmap, gradients) and autograd."""
