"""Many runs at once: a grid of settings, its points, their tables and figures, run here
or on Ray (:mod:`~bandits.experiments.sweep`).
"""
