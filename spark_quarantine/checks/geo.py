"""DQX's geometry checks, with DQX's names, arguments and NULL behaviour.

Each compiles to Spark SQL over the session's spatial functions, as DQX's do:
``try_to_geometry`` and the ``st_*`` functions of Databricks Runtime 17.1+ and serverless (and
the ``h3_*`` functions for the approximate ``is_geo_covers`` / ``is_geo_intersects``). A
session without them cannot run these checks: the run refuses such a rule at validation, with
``SQ-R031`` naming the functions it lacks, before any job (see
:func:`spark_quarantine.evaluate.check_rules_against`). A session with Apache Sedona is
detected and refused by name: Sedona's parsers raise on a value that is no geometry, where
``try_to_geometry`` gives NULL, so one bad row would fail the job instead of the check.

``has_x_coordinate_between`` and ``has_y_coordinate_between`` need nothing extra: they read
the coordinates out of the WKT text in plain Spark SQL, like ``is_latitude`` and ``is_longitude``.

A NULL value passes every check, as in DQX. A value that is no geometry fails every check but
``is_not_null_island`` (DQX: only a real null island fails it).
"""

from __future__ import annotations

from typing import Any

from spark_quarantine.checks import (
    CheckSql,
    _ArgumentError,
    _builtin,
    _Col,
    _column,
    _concat,
    _limit,
    _null_passes,
    _said,
    _show,
    _text,
    sql_argument,
    sql_literal,
)

__all__ = ["GEOMETRY_FUNCTIONS"]

#: The spatial functions each family of checks calls; the refusal names the missing ones.
GEOMETRY_FUNCTIONS = ("try_to_geometry", "st_geometrytype")

_TYPES = {
    "point": "ST_Point",
    "linestring": "ST_LineString",
    "polygon": "ST_Polygon",
    "multipoint": "ST_MultiPoint",
    "multilinestring": "ST_MultiLineString",
    "multipolygon": "ST_MultiPolygon",
    "geometrycollection": "ST_GeometryCollection",
}


def _geom(col: _Col) -> str:
    return f"try_to_geometry({col.sql})"


def _parsed_and(col: _Col, condition: str, text: str, kind: str = "geometry") -> CheckSql:
    """Passes a NULL; else the value must parse as a geometry and meet ``condition``."""
    parsed = f"try_to_{kind}({col.sql})"
    return CheckSql(_null_passes(col, f"coalesce({parsed} IS NOT NULL AND {condition}, false)"), _said(col, text))


@_builtin(nulls="passes", requires=("try_to_geometry",))
def is_geometry(column: str) -> CheckSql:
    """Passes when ``column`` parses as a geometry (WKT, WKB, EWKT, EWKB, GeoJSON): ``try_to_geometry``."""
    return _parsed_and(_column(column), "true", "is not a geometry")


@_builtin(nulls="passes", requires=("try_to_geography",))
def is_geography(column: str) -> CheckSql:
    """Passes when ``column`` parses as a geography: ``try_to_geography``."""
    return _parsed_and(_column(column), "true", "is not a geography", kind="geography")


def _typed(column: str, kind: str) -> CheckSql:
    col = _column(column)
    return _parsed_and(col, f"st_geometrytype({_geom(col)}) = '{_TYPES[kind]}'", f"is not a {kind} geometry")


@_builtin(nulls="passes", requires=GEOMETRY_FUNCTIONS)
def is_point(column: str) -> CheckSql:
    """Passes when ``column`` is a point geometry."""
    return _typed(column, "point")


@_builtin(nulls="passes", requires=GEOMETRY_FUNCTIONS)
def is_linestring(column: str) -> CheckSql:
    """Passes when ``column`` is a linestring geometry."""
    return _typed(column, "linestring")


@_builtin(nulls="passes", requires=GEOMETRY_FUNCTIONS)
def is_polygon(column: str) -> CheckSql:
    """Passes when ``column`` is a polygon geometry."""
    return _typed(column, "polygon")


@_builtin(nulls="passes", requires=GEOMETRY_FUNCTIONS)
def is_multipoint(column: str) -> CheckSql:
    """Passes when ``column`` is a multipoint geometry."""
    return _typed(column, "multipoint")


@_builtin(nulls="passes", requires=GEOMETRY_FUNCTIONS)
def is_multilinestring(column: str) -> CheckSql:
    """Passes when ``column`` is a multilinestring geometry."""
    return _typed(column, "multilinestring")


@_builtin(nulls="passes", requires=GEOMETRY_FUNCTIONS)
def is_multipolygon(column: str) -> CheckSql:
    """Passes when ``column`` is a multipolygon geometry."""
    return _typed(column, "multipolygon")


@_builtin(nulls="passes", requires=GEOMETRY_FUNCTIONS)
def is_geometrycollection(column: str) -> CheckSql:
    """Passes when ``column`` is a geometry collection."""
    return _typed(column, "geometrycollection")


@_builtin(nulls="passes", requires=("try_to_geometry", "st_isvalid"))
def is_ogc_valid(column: str) -> CheckSql:
    """Passes when ``column`` is a valid geometry in the OGC sense: ``st_isvalid``."""
    col = _column(column)
    return _parsed_and(col, f"st_isvalid({_geom(col)})", "is not a valid geometry (in the OGC sense)")


@_builtin(nulls="passes", requires=("try_to_geometry", "st_isempty"))
def is_non_empty_geometry(column: str) -> CheckSql:
    """Passes when ``column`` is a geometry that is not empty: ``st_isempty``."""
    col = _column(column)
    return _parsed_and(col, f"NOT st_isempty({_geom(col)})", "is an empty geometry")


@_builtin(nulls="passes", requires=("try_to_geometry", "st_geometrytype", "st_x", "st_y", "st_z", "st_m"))
def is_not_null_island(column: str) -> CheckSql:
    """Fails a point at (0, 0) (with Z and M 0 or absent), the "null island"; anything else passes (DQX)."""
    col = _column(column)
    g = _geom(col)
    island = (
        f"{g} IS NOT NULL AND st_geometrytype({g}) = 'ST_Point' AND st_x({g}) = 0.0 AND st_y({g}) = 0.0 "
        f"AND coalesce(st_z({g}), 0.0) = 0.0 AND coalesce(st_m({g}), 0.0) = 0.0"
    )
    return CheckSql(_null_passes(col, f"NOT coalesce({island}, false)"), _said(col, "is the null island (0, 0)"))


@_builtin(nulls="passes", requires=("try_to_geometry", "st_dimension"))
def has_dimension(column: str, dimension: int) -> CheckSql:
    """Passes when ``column`` is a geometry of ``dimension`` (0 point, 1 line, 2 area): ``st_dimension``."""
    if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension not in (0, 1, 2):
        raise _ArgumentError("0, 1 or 2", dimension, "dimension")
    col = _column(column)
    return _parsed_and(
        col, f"st_dimension({_geom(col)}) = {dimension}", f"does not have the required dimension ({dimension})"
    )


# The coordinate checks read WKT in plain SQL: the text after the type, split at parentheses
# and commas into coordinate tuples, each "x y [z [m]]". Text that is not WKT fails, as a value
# try_to_geometry cannot parse fails DQX's check; an EMPTY geometry has no coordinates and passes.
_WKT = r"^\s*[A-Za-z]+(\s+(Z|M|ZM))?\s*(\(.*\)|EMPTY)\s*$"


def _coordinates(col: _Col, index: int) -> str:
    tuples = f"filter(split(regexp_replace({col.sql}, '^[^(]*', ''), '[(),]'), t -> trim(t) <> '')"
    return f"transform({tuples}, t -> try_cast(try_element_at(split(trim(t), '\\\\s+'), {index + 1}) AS DOUBLE))"


def _number(value: Any, argument: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _ArgumentError("a number", value, argument)
    return sql_literal(float(value))


def _coordinate_between(column: str, min_value: Any, max_value: Any, axis: str) -> CheckSql:
    col = _column(column)
    low, high = _number(min_value, "min_value"), _number(max_value, "max_value")
    values = _coordinates(col, 0 if axis == "x" else 1)
    within = (
        f"upper({col.sql}) LIKE '%EMPTY%' OR (size({values}) > 0 AND "
        f"forall({values}, v -> v IS NOT NULL AND v BETWEEN {low} AND {high}))"
    )
    condition = f"coalesce({col.sql} RLIKE {sql_literal(_WKT)} AND ({within}), false)"
    return CheckSql(
        _null_passes(col, condition),
        _said(col, f"has {axis} coordinates outside the range [{min_value}, {max_value}] or is not WKT"),
    )


@_builtin(nulls="passes")
def has_x_coordinate_between(column: str, min_value: float, max_value: float) -> CheckSql:
    """Passes when every x coordinate of the WKT geometry in ``column`` is within [min_value, max_value].

    Plain SQL over the WKT text: no spatial functions needed.
    """
    return _coordinate_between(column, min_value, max_value, "x")


@_builtin(nulls="passes")
def has_y_coordinate_between(column: str, min_value: float, max_value: float) -> CheckSql:
    """Passes when every y coordinate of the WKT geometry in ``column`` is within [min_value, max_value].

    Plain SQL over the WKT text: no spatial functions needed.
    """
    return _coordinate_between(column, min_value, max_value, "y")


_COMPARE = {
    "equal_to": ("=", "not equal to"),
    "not_equal_to": ("<>", "equal to"),
    "not_greater_than": ("<=", "greater than"),
    "not_less_than": (">=", "less than"),
}


def _measured(
    column: str, value: Any, function: str, label: str, op: str, srid: Any = None, geodesic: bool = False
) -> CheckSql:
    col = _column(column)
    if isinstance(geodesic, bool) is False:
        raise _ArgumentError("true or false", geodesic, "geodesic")
    if srid is not None and (isinstance(srid, bool) or not isinstance(srid, int) or srid <= 0):
        raise _ArgumentError("a positive SRID such as 3857, or null", srid, "srid")
    if geodesic:
        shape, kind = f"try_to_geography({col.sql})", "geography"
    elif srid:
        shape, kind = f"st_transform(st_setsrid({_geom(col)}, 4326), {srid})", "geometry"
    else:
        shape, kind = _geom(col), "geometry"
    limit = _limit(value, "value")
    comparison, failed = _COMPARE[op]
    condition = f"coalesce({shape} IS NOT NULL AND {function}({shape}) {comparison} {limit}, false)"
    message = (
        f"CASE WHEN {shape} IS NULL THEN {_said(col, f'is not a valid {kind}')} "
        f"ELSE {_concat(f'{col.display} = ', _text(col.sql), f' has {label} {failed} ', _show(value))} END"
    )
    return CheckSql(_null_passes(col, condition), message)


_AREA = ("try_to_geometry", "st_area", "st_transform", "st_setsrid")


@_builtin(nulls="passes", requires=_AREA)
def is_area_equal_to(column: str, value: Any, srid: int | None = 3857, geodesic: bool = False) -> CheckSql:
    """Passes when the area of ``column`` (in ``srid``'s units, or geodesic) equals ``value``."""
    return _measured(column, value, "st_area", "area", "equal_to", srid, geodesic)


@_builtin(nulls="passes", requires=_AREA)
def is_area_not_equal_to(column: str, value: Any, srid: int | None = 3857, geodesic: bool = False) -> CheckSql:
    """Passes when the area of ``column`` differs from ``value``."""
    return _measured(column, value, "st_area", "area", "not_equal_to", srid, geodesic)


@_builtin(nulls="passes", requires=_AREA)
def is_area_not_greater_than(column: str, value: Any, srid: int | None = 3857, geodesic: bool = False) -> CheckSql:
    """Passes when the area of ``column`` is at most ``value``."""
    return _measured(column, value, "st_area", "area", "not_greater_than", srid, geodesic)


@_builtin(nulls="passes", requires=_AREA)
def is_area_not_less_than(column: str, value: Any, srid: int | None = 3857, geodesic: bool = False) -> CheckSql:
    """Passes when the area of ``column`` is at least ``value``."""
    return _measured(column, value, "st_area", "area", "not_less_than", srid, geodesic)


_POINTS = ("try_to_geometry", "st_npoints")


@_builtin(nulls="passes", requires=_POINTS)
def is_num_points_equal_to(column: str, value: Any) -> CheckSql:
    """Passes when the geometry in ``column`` has exactly ``value`` coordinate pairs: ``st_npoints``."""
    return _measured(column, value, "st_npoints", "number of coordinates", "equal_to")


@_builtin(nulls="passes", requires=_POINTS)
def is_num_points_not_equal_to(column: str, value: Any) -> CheckSql:
    """Passes when the geometry in ``column`` has other than ``value`` coordinate pairs."""
    return _measured(column, value, "st_npoints", "number of coordinates", "not_equal_to")


@_builtin(nulls="passes", requires=_POINTS)
def is_num_points_not_greater_than(column: str, value: Any) -> CheckSql:
    """Passes when the geometry in ``column`` has at most ``value`` coordinate pairs."""
    return _measured(column, value, "st_npoints", "number of coordinates", "not_greater_than")


@_builtin(nulls="passes", requires=_POINTS)
def is_num_points_not_less_than(column: str, value: Any) -> CheckSql:
    """Passes when the geometry in ``column`` has at least ``value`` coordinate pairs."""
    return _measured(column, value, "st_npoints", "number of coordinates", "not_less_than")


_RELATIONS = {
    "contains": "is not in the reference geometry",
    "covers": "is not covered by the reference geometry",
    "intersects": "does not intersect the reference geometry",
    "touches": "does not touch the reference geometry",
    "within": "does not contain the reference geometry",
}


def _reference(value: Any) -> str:
    expression = sql_argument(value, "reference_geometry")
    if expression is not None:
        return f"({expression})"
    if not isinstance(value, str) or not value.strip():
        raise _ArgumentError("a WKT/EWKT text or {sql: <expression>}", value, "reference_geometry")
    return sql_literal(value)


def _flag(value: Any, argument: str) -> bool:
    if not isinstance(value, bool):
        raise _ArgumentError("true or false", value, argument)
    return value


def _related(
    column: str,
    reference_geometry: Any,
    relation: str,
    convert_column: Any = False,
    convert_reference_geometry: Any = False,
) -> CheckSql:
    """DQX's precise relationship: ``st_<relation>(reference, value)`` must be TRUE."""
    col = _column(column)
    reference = _reference(reference_geometry)
    value = _geom(col) if _flag(convert_column, "convert_column") else col.sql
    ref = (
        f"try_to_geometry({reference})"
        if _flag(convert_reference_geometry, "convert_reference_geometry")
        else reference
    )
    condition = f"coalesce(st_{relation}({ref}, {value}), false)"
    return CheckSql(_null_passes(col, condition), _said(col, _RELATIONS[relation]))


def _approximate(column: str, reference_geometry: Any, resolution: Any, relation: str) -> CheckSql:
    """DQX's approximate relationship: the H3 cells at ``resolution`` of the value against the reference's."""
    if isinstance(resolution, bool) or not isinstance(resolution, int) or not 0 <= resolution <= 15:
        raise _ArgumentError("an H3 resolution from 0 to 15 (required unless precise: true)", resolution, "resolution")
    col = _column(column)
    reference = _reference(reference_geometry)

    def cells(shape: str) -> str:
        point = f"st_geometrytype(try_to_geometry({shape})) = 'ST_Point'"
        return (
            f"array_distinct(coalesce(h3_try_coverash3({shape}, {resolution}), "
            f"CASE WHEN {point} THEN array(h3_pointash3({shape}, {resolution})) END))"
        )

    mine, theirs = cells(col.sql), cells(reference)
    shared = f"size(array_intersect({mine}, {theirs}))"
    inside = f"{shared} > 0" if relation == "intersects" else f"{shared} = size({mine})"
    condition = f"({mine} IS NULL OR coalesce({inside}, false))"
    return CheckSql(_null_passes(col, condition), _said(col, _RELATIONS[relation] + " (approximately, by H3 cells)"))


_PRECISE = ("try_to_geometry",)


@_builtin(nulls="passes", requires=(*_PRECISE, "st_contains"))
def is_geo_contains(
    column: str, reference_geometry: Any, convert_column: bool = False, convert_reference_geometry: bool = False
) -> CheckSql:
    """Passes when the reference geometry contains the value (``st_contains``; a boundary point is not contained)."""
    return _related(column, reference_geometry, "contains", convert_column, convert_reference_geometry)


@_builtin(nulls="passes", requires=(*_PRECISE, "st_covers", "h3_try_coverash3", "h3_pointash3"))
def is_geo_covers(
    column: str,
    reference_geometry: Any,
    precise: bool = False,
    resolution: int | None = None,
    convert_column: bool = False,
    convert_reference_geometry: bool = False,
) -> CheckSql:
    """Passes when the reference covers the value: ``st_covers`` when precise, else by H3 cells at ``resolution``."""
    if _flag(precise, "precise"):
        return _related(column, reference_geometry, "covers", convert_column, convert_reference_geometry)
    return _approximate(column, reference_geometry, resolution, "covers")


@_builtin(nulls="passes", requires=(*_PRECISE, "st_intersects", "h3_try_coverash3", "h3_pointash3"))
def is_geo_intersects(
    column: str,
    reference_geometry: Any,
    precise: bool = False,
    resolution: int | None = None,
    convert_column: bool = False,
    convert_reference_geometry: bool = False,
) -> CheckSql:
    """Passes when the value intersects the reference: ``st_intersects`` when precise, else by H3 cells."""
    if _flag(precise, "precise"):
        return _related(column, reference_geometry, "intersects", convert_column, convert_reference_geometry)
    return _approximate(column, reference_geometry, resolution, "intersects")


@_builtin(nulls="passes", requires=(*_PRECISE, "st_touches"))
def is_geo_touches(
    column: str, reference_geometry: Any, convert_column: bool = False, convert_reference_geometry: bool = False
) -> CheckSql:
    """Passes when the value touches the reference geometry: ``st_touches``."""
    return _related(column, reference_geometry, "touches", convert_column, convert_reference_geometry)


@_builtin(nulls="passes", requires=(*_PRECISE, "st_within"))
def is_geo_within(
    column: str, reference_geometry: Any, convert_column: bool = False, convert_reference_geometry: bool = False
) -> CheckSql:
    """Passes when the reference geometry lies within the value: ``st_within(reference, value)``, as DQX calls it."""
    return _related(column, reference_geometry, "within", convert_column, convert_reference_geometry)
