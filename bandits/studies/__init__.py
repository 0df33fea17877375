"""Studies of the bandit simulator's learners, kept beside it, not part of a run:

* :mod:`~bandits.studies.learner_screen`: ``python -m bandits.studies.learner_screen``,
  whether each reward network averages noisy rewards or memorises them, in minutes,
  on fixed replay buffers.
"""
