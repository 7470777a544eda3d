"""Data sources: Markov chains, manifolds' intrinsic dimension, kinship graphs."""
