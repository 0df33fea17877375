"""Thompson sampling with Bayes-by-Backprop neural networks (Blundell et al. 2015).

The folders are the layers, each importing only those before it: :mod:`bandits.bayes`
(the library: Bayesian layers, priors, complexity costs, pruning) and
:mod:`bandits.core` (the foundation: settings, data files, the replay buffer, outputs,
checkpoints, processes); the agents and environments (the top-level packages ``agents``
and ``envs``) on them; :mod:`bandits.records` (a run's regret log, tables and figure);
:mod:`bandits.simulator` (the loop, workers, resume); :mod:`bandits.analysis` (plots,
diagnosis); :mod:`bandits.experiments` (sweeps); :mod:`bandits.tools` and
:mod:`bandits.studies` (benchmarks, the toy regression, the docs' tables, the learner
screen). :mod:`bandits.mnist` (the classification benchmark) stands on the foundation
alone. The commands are the thin modules beside them: ``python -m bandits.run``,
``bandits.sweep``, ``bandits.plot``, ``bandits.diagnose``, ``bandits.bench``,
``bandits.regression``, ``bandits.gradient_variance``, ``bandits.doc_tables`` and
``bandits.mnist``. ``docs/layout.md`` draws the tree.
"""

from bandits.core.version import __version__ as __version__


def simulate(out=None, **settings):
    """Run agents on a bandit and return their ranking by cumulative regret: the settings
    of ``python -m bandits.run`` as keywords (:func:`bandits.simulator.api.simulate`)."""
    from bandits.simulator.api import simulate as run

    return run(out, **settings)
