"""``python -m bandits.doc_tables``: the result tables of the README and the docs, written from
the shipped result files (``--check``: that none has drifted). The command itself:
:mod:`bandits.tools.doc_tables`."""

from bandits.core.startup import Command

main, cli = Command("bandits.doc_tables", "bandits.tools.doc_tables").entries()

if __name__ == "__main__":
    cli()
