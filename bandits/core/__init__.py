"""The foundation: what every other part of the project stands on, importing nothing of
it but :mod:`bandits.bayes` and each other. Settings as dataclass fields
(:mod:`~bandits.core.config`) turned into a command line
(:mod:`~bandits.core.command_line`), finding and checking data files
(:mod:`~bandits.core.data`, :mod:`~bandits.core.idx`), the replay buffer
(:mod:`~bandits.core.buffer`), atomic files and machine records
(:mod:`~bandits.core.files`), output folders and their claims
(:mod:`~bandits.core.outputs`), checkpoints (:mod:`~bandits.core.checkpoint`), worker
processes (:mod:`~bandits.core.processes`), a kind of run with its identity and resume
(:mod:`~bandits.core.runner`), and what an entry point does first
(:mod:`~bandits.core.startup`, :mod:`~bandits.core.kernels`).
"""
