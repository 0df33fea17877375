"""``python -m bandits.same_bytes``: the shipped results' bytes on an emulated second processor
(a command's bytes checked without a second machine). The command itself:
:mod:`bandits.tools.same_bytes`."""

from bandits.core.startup import Command

main, cli = Command("bandits.same_bytes", "bandits.tools.same_bytes").entries()

if __name__ == "__main__":
    cli()
