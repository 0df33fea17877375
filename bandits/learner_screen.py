"""``python -m bandits.learner_screen`` (also ``python -m bandits.studies.learner_screen``):
the learner screen, settings of the bandit learner tried on a fixed data stream.

The command itself is :mod:`bandits.studies.learner_screen`; this module and the console
script ``bandits-learner-screen`` start it (:class:`bandits.core.startup.Command`: Ctrl-C
is one line from the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.learner_screen", "bandits.studies.learner_screen").entries()

if __name__ == "__main__":
    cli()
