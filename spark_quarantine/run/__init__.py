"""One run, exactly once: the write protocol every mode shares (see :mod:`.protocol`)."""
