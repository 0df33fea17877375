"""The benchmark's models: the ``R`` classifiers trained at once (and the autograd
reference), their settings (:class:`Config`) and the priors a setting makes. The lowest
layer of :mod:`bandits.mnist`."""
