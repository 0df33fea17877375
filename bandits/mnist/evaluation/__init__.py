"""One trained classifier evaluated (test error, pruning by signal-to-noise ratio) and the
files a model leaves, with the text formatting its tables share."""
