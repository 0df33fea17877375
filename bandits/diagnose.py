"""``python -m bandits.diagnose``: where a run's regret went.

The command itself is :mod:`bandits.analysis.diagnose`; this module and the console
script ``bandits-diagnose`` start it (:class:`bandits.core.startup.Command`: Ctrl-C is
one line from the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.diagnose", "bandits.analysis.diagnose").entries()

if __name__ == "__main__":
    cli()
