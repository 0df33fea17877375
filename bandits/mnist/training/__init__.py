"""Training runs: a command's models trained in batches with checkpoints, what a finished
model leaves, the Adam probe and the speed benchmark."""
