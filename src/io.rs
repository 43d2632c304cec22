//! Reading lattices and writing labels: `.npy` and `.h5`, written atomically.
