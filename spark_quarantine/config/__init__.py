"""Typed configuration, parsed once at the edge: run settings and the end-to-end API's I/O configs."""

from spark_quarantine.config.settings import Settings, parse_user_conf

__all__ = ["Settings", "parse_user_conf"]
