"""The bandit simulator, on the foundation, the agents, the environments and the records:
a run's record (:mod:`~bandits.simulator.settings`; the run's own settings and the
presets: :mod:`~bandits.simulator.parts`), its identity and resume
(:mod:`~bandits.simulator.resume`), the loop (env -> agent.act -> env.step -> buffer ->
agent.update, :mod:`~bandits.simulator.loop`) with its hooks, its populations in worker
processes (:mod:`~bandits.simulator.parallel`), the command
(:mod:`~bandits.simulator.run`) and :func:`bandits.simulate`
(:mod:`~bandits.simulator.api`).
"""
