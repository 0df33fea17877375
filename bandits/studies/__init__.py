"""Studies and baselines kept beside the MNIST benchmark (:mod:`bandits.mnist`), not part
of its training or its tables:

* :mod:`~bandits.studies.adam_probe`: ``python -m bandits.mnist adam-probe``, what
  Adam's per-weight step size does to each prior's weights;
* :mod:`~bandits.studies.autograd_baseline`: one model trained with autograd through
  :mod:`bandits.bayes`'s layers, the baseline ``python -m bandits.mnist bench`` times
  the batched trainer against.
"""
