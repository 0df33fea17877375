"""The benchmark's reports: ``models.jsonl``, its rows, Tables 1 and 2, a command's own
tables, and the figures, all from the files models wrote."""
