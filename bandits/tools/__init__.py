"""The project's own tools, on everything below: speed benchmarks
(:mod:`~bandits.tools.bench`), the toy regression (:mod:`~bandits.tools.regression`),
the gradient variance of each estimator (:mod:`~bandits.tools.gradient_variance`) and
the README's and docs' result tables (:mod:`~bandits.tools.doc_tables`). The learner
screen (:mod:`bandits.studies`) is on this floor too.
"""
