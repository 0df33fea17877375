"""The MNIST data: its IDX files, the paper's preprocessing and the splits, as a model's
settings ask for them."""
