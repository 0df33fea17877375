"""Thompson sampling with Bayes-by-Backprop neural networks (Blundell et al. 2015).

The library core is light to import: :mod:`bandits.bayes` (Bayesian layers, priors,
complexity costs, pruning), :mod:`bandits.data` (finding data files) and
:mod:`bandits.buffer` (replay buffer). The entry points are ``python -m bandits.run``
(the bandit simulator; its populations run side by side in worker processes,
:mod:`bandits.parallel`), ``python -m bandits.sweep`` (many runs over settings, here
or on Ray), ``python -m bandits.plot`` (regret plots), ``python -m bandits.diagnose``
(where a run's regret went), ``python -m bandits.bench`` (training speed) and
``python -m bandits.mnist`` (the classification benchmark). The README's "Layout"
section lists every module in the order data flows through them.
"""

from bandits.version import __version__ as __version__


def simulate(out=None, **settings):
    """Run agents on a bandit and return their ranking by cumulative regret: the settings
    of ``python -m bandits.run`` as keywords (:func:`bandits.api.simulate`)."""
    from bandits.api import simulate as run

    return run(out, **settings)
