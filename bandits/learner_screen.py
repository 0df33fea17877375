"""``python -m bandits.learner_screen`` (also ``python -m bandits.studies.learner_screen``):
the learner screen, settings of the bandit learner tried on a fixed data stream. The command
itself: :mod:`bandits.studies.learner_screen`."""

from bandits.core.startup import Command

main, cli = Command("bandits.learner_screen", "bandits.studies.learner_screen").entries()

if __name__ == "__main__":
    cli()
