"""``python -m spark_quarantine.cli``: the console script ``spark-quarantine``."""

from spark_quarantine.cli import main

raise SystemExit(main())
