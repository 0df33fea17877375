"""``python -m bandits.same_bytes``: the shipped results' bytes on an emulated second
processor (a command's bytes checked without a second machine).

The command itself is :mod:`bandits.tools.same_bytes`; this module and the console
script ``bandits-same-bytes`` start it (:class:`bandits.core.startup.Command`: Ctrl-C is
one line from the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.same_bytes", "bandits.tools.same_bytes").entries()

if __name__ == "__main__":
    cli()
