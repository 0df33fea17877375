"""``python -m bandits.gradient_variance``: the variance of each estimator's gradient, per layer.

The command itself is :mod:`bandits.tools.gradient_variance`; this module and the
console script ``bandits-gradient-variance`` start it
(:class:`bandits.core.startup.Command`: Ctrl-C is one line from the first moment, and
the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.gradient_variance", "bandits.tools.gradient_variance").entries()

if __name__ == "__main__":
    cli()
