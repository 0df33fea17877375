"""Thompson sampling with Bayes-by-Backprop neural networks (Blundell et al. 2015).

The library core is light to import: :mod:`bandits.bayes` (Bayesian layers),
:mod:`bandits.data` (finding data files) and :mod:`bandits.buffer` (replay
buffer). The entry points are ``python -m bandits.run`` (the bandit simulator),
``python -m bandits.plot`` (regret plots) and ``python -m bandits.mnist`` (the
classification benchmark).
"""

__version__ = "0.1.0"
