"""One module per paper: ``PAPER`` and ``reproduce(run) -> Result``.  Only the harness imports these."""
