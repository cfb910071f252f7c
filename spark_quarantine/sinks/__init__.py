"""Where run outcomes go: Delta tables (target, error table, stats table, DLQ)."""
