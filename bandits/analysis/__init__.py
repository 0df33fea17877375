"""Looking at runs after they ran: regret plots (:mod:`~bandits.analysis.plot`) and where
a run's regret went (:mod:`~bandits.analysis.diagnose`).
"""
