"""A run's records, on the foundation and the agents: the regret log and the closing
ranking (:mod:`~bandits.records.regret`), ``memory.csv``
(:mod:`~bandits.records.memory`), reading a run's CSVs back
(:mod:`~bandits.records.tables`) and its regret figure
(:mod:`~bandits.records.figures`).
"""
