"""``python -m bandits.gradient_variance``: the variance of each estimator's gradient, per
layer. The command itself: :mod:`bandits.tools.gradient_variance`."""

from bandits.core.startup import Command

main, cli = Command("bandits.gradient_variance", "bandits.tools.gradient_variance").entries()

if __name__ == "__main__":
    cli()
