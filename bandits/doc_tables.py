"""``python -m bandits.doc_tables``: the result tables of the README and the docs, written from the
shipped result files (``--check``: that none has drifted).

The command itself is :mod:`bandits.tools.doc_tables`; this module and the console
script ``bandits-doc-tables`` start it (:class:`bandits.core.startup.Command`: Ctrl-C is
one line from the first moment, and the kernels are set before torch loads)."""

from bandits.core.startup import Command

main, cli = Command("bandits.doc_tables", "bandits.tools.doc_tables").entries()

if __name__ == "__main__":
    cli()
