"""DQX's geometry checks: the coordinate checks run anywhere; the others need the session's
spatial SQL functions and are refused, with SQ-R031, where it has none."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_quarantine import RuleValidationError, apply_checks_and_split, load_rules, with_quarantine
from spark_quarantine.checks import ROW_CHECKS, compile_check, get_check
from spark_quarantine.formats import convert
from tests.test_checks import GEO_MINIMAL

SPATIAL = [name for name in ROW_CHECKS if get_check(name).requires]


def rule(function: str, **arguments: Any) -> dict[str, Any]:
    return {"check": {"function": function, "arguments": {"column": "geom", **arguments}}, "action_if_failed": "drop"}


@pytest.fixture(scope="module")
def shapes(spark: SparkSession) -> DataFrame:
    # DQX's own test input for the coordinate checks, and a few more shapes.
    return spark.createDataFrame(
        [
            (1, "POINT(1 1)"),
            (2, "nonsense"),
            (3, "POLYGON((0 0, 2 0, 0 2, 0 0))"),
            (4, None),
            (5, "POINT EMPTY"),
            (6, "LINESTRING Z (0.5 0.5 9, 1 0 9)"),
            (7, "MULTIPOINT ((0 0), (1 3))"),
        ],
        "id long, geom string",
    )


def passing(df: DataFrame, rules: list[dict[str, Any]]) -> list[int]:
    valid, _ = apply_checks_and_split(df, rules)
    return sorted(r["id"] for r in valid.collect())


class TestCoordinateChecksNeedNothingExtra:
    def test_x_coordinates_as_dqx_asserts(self, shapes: DataFrame) -> None:
        """DQX: POINT(1 1) passes [0, 1], 'nonsense' and the polygon reaching x=2 fail, NULL passes."""
        assert passing(shapes, [rule("has_x_coordinate_between", min_value=0, max_value=1)]) == [1, 4, 5, 6, 7]

    def test_y_coordinates_as_dqx_asserts(self, shapes: DataFrame) -> None:
        """The same for y; a Z value is not read as y, and a point at y=3 fails."""
        assert passing(shapes, [rule("has_y_coordinate_between", min_value=0, max_value=1)]) == [1, 4, 5, 6]

    def test_the_failure_says_which_range(self, shapes: DataFrame) -> None:
        _, invalid = apply_checks_and_split(shapes, [rule("has_x_coordinate_between", min_value=0, max_value=1)])
        (message,) = invalid.filter("id = 3").collect()[0]["meta_row_dq_results"]
        assert "has x coordinates outside the range [0, 1]" in message["message"]

    def test_bad_ranges_are_coded(self) -> None:
        with pytest.raises(RuleValidationError, match=r"SQ-R017.*min_value.*expected a number"):
            load_rules([rule("has_x_coordinate_between", min_value="low", max_value=1)])


class TestSpatialChecksWithoutSpatialFunctions:
    @pytest.mark.parametrize("function", SPATIAL)
    def test_refused_before_any_write(self, spark: SparkSession, shapes: DataFrame, table: str, function: str) -> None:
        """A session without try_to_geometry and st_* refuses the rule with SQ-R031, naming what is missing."""
        rules = [rule(function, **GEO_MINIMAL.get(function, {}))]

        @with_quarantine(rules=rules, target_table=table)
        def pipeline() -> DataFrame:
            return shapes

        with pytest.raises(RuleValidationError) as info:
            pipeline()
        (problem,) = info.value.problems
        assert problem.code == "SQ-R031"
        assert re.search(r"this session lacks (try_to_geo|st_|h3_)", problem.message)
        assert not spark.catalog.tableExists(table) and not spark.catalog.tableExists(f"{table}_error")

    def test_polygons_mutually_disjoint_is_refused_too(self, shapes: DataFrame) -> None:
        """The dataset-level geometry check needs st_intersects as well."""
        rules = [{"check": {"function": "are_polygons_mutually_disjoint", "arguments": {"column": "geom"}},
                  "action_if_failed": "drop"}]  # fmt: skip
        with pytest.raises(RuleValidationError, match=r"SQ-R031.*st_intersects"):
            apply_checks_and_split(shapes, rules)
        conversion = convert([{"criticality": "error", "check": rules[0]["check"]}], "dqx")
        assert conversion.notes == () and conversion.rules[0]["check"]["function"] == "are_polygons_mutually_disjoint"

    def test_every_geometry_check_of_dqx_is_registered(self) -> None:
        """28 row checks of DQX's geo module (is_latitude and is_longitude beside them)."""
        geo = {n for n in ROW_CHECKS if n in SPATIAL or (n.startswith("has_") and "coordinate" in n)}
        assert len(geo) == 28


class TestCompiledToDatabricksFunctions:
    """The SQL is DQX's: the same Databricks functions, so the same rows fail there."""

    @pytest.mark.parametrize(
        ("function", "arguments", "fragment"),
        [
            ("is_point", {}, "st_geometrytype(try_to_geometry(`geom`)) = 'ST_Point'"),
            ("is_geography", {}, "try_to_geography(`geom`) IS NOT NULL"),
            ("is_ogc_valid", {}, "st_isvalid(try_to_geometry(`geom`))"),
            ("has_dimension", {"dimension": 2}, "st_dimension(try_to_geometry(`geom`)) = 2"),
            (
                "is_area_equal_to",
                {"value": 1},
                "st_area(st_transform(st_setsrid(try_to_geometry(`geom`), 4326), 3857)) = 1",
            ),
            ("is_area_not_less_than", {"value": 1, "geodesic": True}, "st_area(try_to_geography(`geom`)) >= 1"),
            ("is_num_points_not_greater_than", {"value": 4}, "st_npoints(try_to_geometry(`geom`)) <= 4"),
            ("is_geo_within", {"reference_geometry": "POINT (0 0)"}, "st_within('POINT (0 0)', `geom`)"),
            (
                "is_geo_contains",
                {"reference_geometry": "POINT (0 0)", "convert_column": True, "convert_reference_geometry": True},
                "st_contains(try_to_geometry('POINT (0 0)'), try_to_geometry(`geom`))",
            ),
            ("is_geo_covers", {"reference_geometry": "POINT (0 0)", "resolution": 7}, "h3_try_coverash3(`geom`, 7)"),
        ],
    )
    def test_the_sql(self, function: str, arguments: dict[str, Any], fragment: str) -> None:
        assert fragment in compile_check(function, {"column": "geom", **arguments}).condition

    @pytest.mark.parametrize(
        ("function", "arguments", "says"),
        [
            ("has_dimension", {"dimension": 3}, "0, 1 or 2"),
            ("is_geo_covers", {"reference_geometry": "POINT (0 0)"}, "H3 resolution"),
            ("is_geo_touches", {"reference_geometry": 5}, "WKT"),
            ("is_area_equal_to", {"value": 1, "srid": -1}, "positive SRID"),
        ],
    )
    def test_bad_arguments_are_coded(self, function: str, arguments: dict[str, Any], says: str) -> None:
        with pytest.raises(RuleValidationError, match="SQ-R017") as info:
            load_rules([rule(function, **arguments)])
        assert says in str(info.value)

    def test_dqx_geometry_checks_convert_as_they_are(self) -> None:
        """Each of DQX's geometry checks in DQX's format converts, with no note, and loads."""
        checks = [
            {
                "criticality": "error",
                "check": {"function": n, "arguments": {"column": "geom", **GEO_MINIMAL.get(n, {})}},
            }
            for n in [*SPATIAL, "has_x_coordinate_between", "has_y_coordinate_between"]
        ]
        conversion = convert(checks, "dqx")
        assert conversion.notes == ()
        assert (conversion.read, conversion.converted) == (28, 28)
        assert len(load_rules(list(conversion.rules))) == 28


SEDONA = "org.apache.sedona:sedona-spark-shaded-4.0_2.13:1.8.0,org.datasyslab:geotools-wrapper:1.8.0-33.1"


def test_on_apache_sedona_the_checks_run_with_dqx_verdicts() -> None:
    """With Apache Sedona (a real Sedona session, in its own process) the checks run on its functions.

    A value that is no geometry fails the check instead of the job; what Sedona has no
    equivalent of (geographies, SRID transforms, H3) is refused with SQ-R031 naming it.
    """
    script = textwrap.dedent(
        f"""
        import json
        from pyspark.sql import SparkSession
        from spark_quarantine import RuleValidationError, apply_checks_and_split
        spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
                 .config("spark.jars.packages", "{SEDONA}")
                 .config("spark.sql.extensions", "org.apache.sedona.sql.SedonaSqlExtensions").getOrCreate())
        df = spark.createDataFrame(
            [(1, "POINT(1 1)"), (2, "nonsense"), (3, "POLYGON((0 0, 2 0, 0 2, 0 0))"), (4, None),
             (5, "POINT(0 0)"), (6, "LINESTRING(0 0, 1 1)")],
            "id long, geom string",
        )
        big = "POLYGON((-1 -1, 3 -1, 3 3, -1 3, -1 -1))"
        cases = {{
            "is_point": {{}},
            "is_polygon": {{}},
            "is_ogc_valid": {{}},
            "is_not_null_island": {{}},
            "has_dimension": {{"dimension": 2}},
            "is_num_points_not_greater_than": {{"value": 3}},
            "is_area_not_greater_than": {{"value": 1, "srid": None}},
            "is_geo_contains": {{"reference_geometry": big, "convert_column": True,
                                 "convert_reference_geometry": True}},
            "is_geography": {{}},
            "is_area_equal_to": {{"value": 1}},
        }}
        out = {{}}
        for name, arguments in cases.items():
            rule = {{"check": {{"function": name, "arguments": {{"column": "geom", **arguments}}}},
                     "action_if_failed": "drop"}}
            try:
                valid, _ = apply_checks_and_split(df, [rule])
                out[name] = sorted(r["id"] for r in valid.collect())
            except RuleValidationError as exc:
                out[name] = exc.problems[0].code + " " + exc.problems[0].message
        polygons = spark.createDataFrame(
            [(1, "POLYGON((0 0, 1 0, 1 1, 0 1, 0 0))"), (2, "POLYGON((0.5 0.5, 2 0.5, 2 2, 0.5 2, 0.5 0.5))"),
             (3, "POLYGON((5 5, 6 5, 6 6, 5 6, 5 5))"), (4, "nonsense"), (5, None), (6, "POINT(0.5 0.5)")],
            "id long, geom string",
        )
        disjoint = {{"check": {{"function": "are_polygons_mutually_disjoint", "arguments": {{"column": "geom"}}}},
                     "action_if_failed": "drop"}}
        valid, _ = apply_checks_and_split(polygons, [disjoint])
        out["are_polygons_mutually_disjoint"] = sorted(r["id"] for r in valid.collect())
        valid, _ = apply_checks_and_split(polygons, [{{**disjoint, "filter": "id <> 2"}}])
        out["disjoint_filtered"] = sorted(r["id"] for r in valid.collect())
        kinds = spark.createDataFrame(
            [(1, "POINT(1 1)"), (2, "LINESTRING(0 0, 1 1)"), (3, "POLYGON((0 0, 2 0, 0 2, 0 0))"),
             (4, "MULTIPOINT((0 0), (1 1))"), (5, "MULTILINESTRING((0 0, 1 1), (2 2, 3 3))"),
             (6, "MULTIPOLYGON(((0 0, 1 0, 0 1, 0 0)))"), (7, "GEOMETRYCOLLECTION(POINT(1 1))"),
             (8, "nonsense"), (9, None), (10, "POINT EMPTY")],
            "id long, geom string",
        )
        more = {{
            "is_geometry": {{}},
            "is_linestring": {{}},
            "is_multipoint": {{}},
            "is_multilinestring": {{}},
            "is_multipolygon": {{}},
            "is_geometrycollection": {{}},
            "is_non_empty_geometry": {{}},
            "is_area_equal_to": {{"value": 2, "srid": None}},
            "is_num_points_equal_to": {{"value": 2}},
            "is_geo_within": {{"reference_geometry": "POINT(0.5 0.5)", "convert_column": True,
                               "convert_reference_geometry": True}},
            "is_geo_touches": {{"reference_geometry": "POINT(0 0)", "convert_column": True,
                                "convert_reference_geometry": True}},
            "is_geo_intersects": {{"reference_geometry": "POINT(1 1)", "precise": True, "convert_column": True,
                                   "convert_reference_geometry": True}},
            "is_geo_covers": {{"reference_geometry": "POLYGON((-1 -1, 4 -1, 4 4, -1 4, -1 -1))", "precise": True,
                               "convert_column": True, "convert_reference_geometry": True}},
        }}
        for name, arguments in more.items():
            rule = {{"check": {{"function": name, "arguments": {{"column": "geom", **arguments}}}},
                     "action_if_failed": "drop"}}
            valid, _ = apply_checks_and_split(kinds, [rule])
            out["kinds " + name] = sorted(r["id"] for r in valid.collect())
        print("RESULT", json.dumps(out))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    out = json.loads(line[len("RESULT ") :])
    assert out["is_point"] == [1, 4, 5]
    assert out["is_polygon"] == [3, 4]
    assert out["is_ogc_valid"] == [1, 3, 4, 5, 6]
    assert out["is_not_null_island"] == [1, 2, 3, 4, 6]  # only the null island fails; 'nonsense' passes (DQX)
    assert out["has_dimension"] == [3, 4]
    assert out["is_num_points_not_greater_than"] == [1, 4, 5, 6]
    assert out["is_area_not_greater_than"] == [1, 4, 5, 6]
    assert out["is_geo_contains"] == [1, 2, 3, 4, 5, 6]  # 'nonsense' makes the relation NULL: it passes (DQX)
    assert out["are_polygons_mutually_disjoint"] == [3, 4, 5, 6]  # 1 and 2 overlap; a point is no polygon
    assert out["disjoint_filtered"] == [1, 2, 3, 4, 5, 6]
    kinds = {k[len("kinds ") :]: v for k, v in out.items() if k.startswith("kinds ")}
    assert kinds == {
        "is_geometry": [1, 2, 3, 4, 5, 6, 7, 9, 10],
        "is_linestring": [2, 9],
        "is_multipoint": [4, 9],
        "is_multilinestring": [5, 9],
        "is_multipolygon": [6, 9],
        "is_geometrycollection": [7, 9],
        "is_non_empty_geometry": [1, 2, 3, 4, 5, 6, 7, 9],
        "is_area_equal_to": [3, 9],
        "is_num_points_equal_to": [2, 4, 9],
        "is_geo_within": [2, 3, 5, 8, 9],
        "is_geo_touches": [2, 3, 5, 6, 8, 9],
        "is_geo_intersects": [1, 2, 3, 4, 5, 7, 8, 9],
        "is_geo_covers": [1, 2, 3, 4, 5, 6, 7, 8, 9],
    }
    for refused, missing in (("is_geography", "try_to_geography"), ("is_area_equal_to", "st_transform")):
        assert out[refused].startswith("SQ-R031") and "Apache Sedona" in out[refused] and missing in out[refused]
