"""A rule's SQL made safe for the rows that make Spark raise.

Under ANSI mode (Spark 4's default) ``100 / qty > 1`` raises ``DIVIDE_BY_ZERO`` for a row with
``qty = 0`` and so fails the whole job. :func:`guard` turns an expression's text into two:

- ``value``: the same expression with each operation that can raise replaced by a form that
  gives NULL instead (``try_divide``, ``try_cast``, a ``CASE`` around ``element_at``, ...);
- ``error``: an expression giving the error class the ORIGINAL expression would have raised
  for the row, or NULL when it would not have raised.

A row whose ``error`` is not NULL fails the rule, and the class goes into its metadata.

Two choices keep the rewrite honest:

- Only the operations that can raise are rewritten; every other part keeps its text byte for
  byte, because the new text is spliced into the original rather than printed from a tree.
  Text this parser does not understand (a lambda, a subquery, a window) is kept whole.
- Errors are traced in Spark's evaluation order: ``AND``/``OR`` stop at their first operand
  when it decides, ``CASE``/``IF``/``COALESCE`` evaluate only the branch they take. So
  ``qty = 0 OR 100 / qty > 1`` reports nothing for ``qty = 0``, as Spark raises nothing.

Text only, no Spark: :func:`operands` names the sub-expressions whose types decide the
rewrite (a ``+`` of two doubles cannot overflow; a string compared with a number is cast, and
that cast can fail); the caller analyses them once and passes their types to :func:`guard`.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Guarded", "guard", "has_subquery", "operands"]


@dataclass(frozen=True)
class Guarded:
    """``value``: the expression, NULL where it would raise; ``error``: the class raised, NULL, or None if it cannot."""

    value: str
    error: str | None


class _Unsupported(Exception):
    """Text this parser does not follow: the expression is used as written."""


# ---------------------------------------------------------------------------- tokens

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|--[^\n]*|/\*.*?\*/)
  | (?P<str>[rR]?'(?:\\.|[^'\\])*'|[rR]?"(?:\\.|[^"\\])*")
  | (?P<qident>`(?:[^`]|``)*`)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:BD|bd|[LSYDFlsydf])?(?![\w]))
  | (?P<ident>[^\W\d]\w*)
  | (?P<op><=>|>>>|<<|>>|<=|>=|<>|!=|==|\|\||->|::|=>|[-+*/%=<>!~&|^()\[\],.:?{}])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    start: int
    end: int

    @property
    def word(self) -> str:
        """The keyword this token may be (upper case), or ``""``."""
        return self.text.upper() if self.kind == "ident" else ""


def _tokens(sql: str) -> list[_Tok]:
    found: list[_Tok] = []
    pos = 0
    while pos < len(sql):
        match = _TOKEN.match(sql, pos)
        if match is None:
            raise _Unsupported(f"character {sql[pos]!r}")
        kind = match.lastgroup or ""
        if kind != "ws":
            found.append(_Tok(kind, match.group(), match.start(), match.end()))
        pos = match.end()
    found.append(_Tok("end", "", len(sql), len(sql)))
    return found


# ---------------------------------------------------------------------------- tree


@dataclass(eq=False)
class _Node:
    kind: str  # atom, paren, unary, not, binary, and, or, is, between, in, like, call, case, cast, subscript, field
    start: int
    end: int
    children: list[_Node] = field(default_factory=list)
    op: str = ""  # operator or function name, upper case
    type_text: str = ""  # the target type of a cast
    simple_case: bool = False  # CASE x WHEN ...: children are x, w1, v1, ..., [else]
    has_else: bool = False


_COMPARISONS = {"=", "==", "<=>", "<>", "!=", "<", "<=", ">", ">="}
# Binding powers, after Spark's grammar: OR < AND < NOT < predicates < comparisons < | < ^ < & < shifts
# < + - || < * / % DIV < unary < . [] ::
_INFIX = {
    **dict.fromkeys(_COMPARISONS, 5),
    "|": 6,
    "^": 7,
    "&": 8,
    **dict.fromkeys(["<<", ">>", ">>>"], 9),
    **dict.fromkeys(["+", "-", "||"], 10),
    **dict.fromkeys(["*", "/", "%", "DIV"], 11),
}
_PREDICATES = {"IS", "BETWEEN", "IN", "LIKE", "ILIKE", "RLIKE", "REGEXP"}
_QUERY_WORDS = {"SELECT", "WITH", "VALUES", "FROM", "TABLE"}
# Calls whose arguments are not a plain comma list, or that aggregate or take lambdas: kept whole.
_OPAQUE_CALLS = {"EXTRACT", "TRIM", "SUBSTRING", "SUBSTR", "POSITION", "OVERLAY", "EXISTS", "STRUCT", "NAMED_STRUCT"}
_TYPED_LITERALS = {"DATE", "TIMESTAMP", "TIMESTAMP_NTZ", "TIMESTAMP_LTZ", "X", "TIME", "BINARY"}
_INTERVAL_UNITS = {
    *(
        u + s
        for u in ("YEAR", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND")
        for s in ("", "S")
    ),
    "TO",
}


class _Parser:
    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.toks = _tokens(sql)
        self.i = 0

    # -- cursor
    def peek(self, ahead: int = 0) -> _Tok:
        return self.toks[min(self.i + ahead, len(self.toks) - 1)]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expect(self, text: str) -> _Tok:
        tok = self.take()
        if tok.text.upper() != text:
            raise _Unsupported(f"expected {text!r} at {tok.start}, found {tok.text!r}")
        return tok

    def skip_group(self) -> int:
        """Skip from an opening ``(`` to its ``)``; return the end offset."""
        depth = 0
        while True:
            tok = self.take()
            if tok.kind == "end":
                raise _Unsupported("unbalanced parentheses")
            if tok.text == "(":
                depth += 1
            elif tok.text == ")":
                depth -= 1
                if depth == 0:
                    return tok.end

    def group_has(self, words: set[str], texts: set[str]) -> bool:
        """Whether the group starting at the current ``(`` holds one of ``words``/``texts`` at its own level."""
        depth, j = 0, self.i
        while j < len(self.toks):
            tok = self.toks[j]
            if tok.text in {"(", "["}:
                depth += 1
            elif tok.text in {")", "]"}:
                depth -= 1
                if depth == 0:
                    return False
            elif depth == 1 and (tok.word in words or (tok.kind == "op" and tok.text in texts)):
                return True
            j += 1
        return False

    # -- expressions
    def parse(self) -> _Node:
        node = self.expr(0)
        if self.peek().kind != "end":
            raise _Unsupported(f"unexpected {self.peek().text!r}")
        return node

    def expr_list(self) -> list[_Node]:
        """``e, e, ...`` up to (not including) the closing bracket."""
        items = [self.expr(0)]
        while self.peek().text == ",":
            self.take()
            items.append(self.expr(0))
        return items

    def expr(self, rbp: int) -> _Node:
        left = self.prefix()
        while True:
            tok = self.peek()
            word, text = tok.word, tok.text
            if word == "OR" and rbp < 1:
                self.take()
                right = self.expr(1)
                left = _Node("or", left.start, right.end, [left, right], op="OR")
            elif word == "AND" and rbp < 2:
                self.take()
                right = self.expr(2)
                left = _Node("and", left.start, right.end, [left, right], op="AND")
            elif rbp < 4 and (word in _PREDICATES or (word == "NOT" and self.peek(1).word in _PREDICATES - {"IS"})):
                left = self.predicate(left)
            elif (op := "DIV" if word == "DIV" else text) in _INFIX and tok.kind != "str" and rbp < _INFIX[op]:
                self.take()
                right = self.expr(_INFIX[op])
                left = _Node("binary", left.start, right.end, [left, right], op=op)
            elif text in {"[", ".", "::"} and rbp < 13:
                left = self.postfix(left)
            else:
                return left

    def prefix(self) -> _Node:
        tok = self.take()
        word = tok.word
        if tok.kind in {"num", "qident"} or (tok.kind == "op" and tok.text in {"*", "?"}):
            return _Node("atom", tok.start, tok.end)
        if tok.kind == "str":
            end = tok.end
            while self.peek().kind == "str":  # adjacent literals are one string
                end = self.take().end
            return _Node("atom", tok.start, end)
        if tok.text == ":" and self.peek().kind == "ident":
            return _Node("atom", tok.start, self.take().end)
        if tok.text in {"-", "+", "~"}:
            operand = self.expr(12)
            return _Node("unary", tok.start, operand.end, [operand], op=tok.text)
        if word == "NOT" or tok.text == "!":
            operand = self.expr(3)
            return _Node("not", tok.start, operand.end, [operand], op="NOT")
        if tok.text == "(":
            return self.parenthesised(tok)
        if tok.kind != "ident":
            raise _Unsupported(f"unexpected {tok.text!r}")
        if word == "CASE":
            return self.case(tok)
        if word == "INTERVAL":
            return self.interval(tok)
        nxt = self.peek()
        if nxt.kind == "str":
            if word not in _TYPED_LITERALS:
                raise _Unsupported(f"{tok.text} followed by a string")
            return _Node("atom", tok.start, self.take().end)  # DATE '…', TIMESTAMP '…', X'…'
        if nxt.text == "(":
            if word in {"CAST", "TRY_CAST"}:
                return self.cast(tok)
            return self.call(tok)
        if nxt.text == "->":
            raise _Unsupported("lambda")
        return _Node("atom", tok.start, tok.end)

    def parenthesised(self, open_tok: _Tok) -> _Node:
        if self.peek().word in _QUERY_WORDS:
            self.i -= 1
            return _Node("atom", open_tok.start, self.skip_group())  # a scalar subquery
        items = self.expr_list()
        close = self.expect(")")
        if self.peek().text == "->":
            raise _Unsupported("lambda")
        return _Node("paren", open_tok.start, close.end, items)

    def case(self, tok: _Tok) -> _Node:
        children: list[_Node] = []
        simple = self.peek().word != "WHEN"
        if simple:
            children.append(self.expr(0))
        while self.peek().word == "WHEN":
            self.take()
            children.append(self.expr(0))
            self.expect("THEN")
            children.append(self.expr(0))
        has_else = self.peek().word == "ELSE"
        if has_else:
            self.take()
            children.append(self.expr(0))
        end = self.expect("END")
        return _Node("case", tok.start, end.end, children, simple_case=simple, has_else=has_else)

    def interval(self, tok: _Tok) -> _Node:
        end = tok.end
        while True:
            nxt = self.peek()
            if nxt.kind in {"num", "str"} or nxt.word in _INTERVAL_UNITS:
                end = self.take().end
            elif nxt.text in {"-", "+"} and self.peek(1).kind in {"num", "str"}:
                self.take()
                end = self.take().end
            else:
                return _Node("atom", tok.start, end)

    def type_name(self) -> tuple[int, int]:
        first = self.take()
        if first.kind != "ident":
            raise _Unsupported("type")
        end = first.end
        if first.word == "INTERVAL":
            while self.peek().word in _INTERVAL_UNITS:
                end = self.take().end
            return first.start, end
        if self.peek().text == "(":
            end = self.skip_group()
        elif self.peek().text == "<":
            depth = 0
            while True:
                tok = self.take()
                if tok.kind == "end":
                    raise _Unsupported("type")
                depth += tok.text.count("<") - tok.text.count(">") if set(tok.text) <= {"<", ">"} else 0
                if depth <= 0:
                    end = tok.end
                    break
        return first.start, end

    def cast(self, tok: _Tok) -> _Node:
        self.expect("(")
        inner = self.expr(0)
        self.expect("AS")
        start, end = self.type_name()
        close = self.expect(")")
        return _Node("cast", tok.start, close.end, [inner], op=tok.word, type_text=self.sql[start:end])

    def call(self, name: _Tok) -> _Node:
        word = name.word
        if word in _OPAQUE_CALLS or self.group_has({"DISTINCT", "AS", "FROM"}, {"->", "=>"}):
            return self.after_call(_Node("atom", name.start, self.skip_group()))
        self.expect("(")
        args = self.expr_list() if self.peek().text != ")" else []
        close = self.expect(")")
        return self.after_call(_Node("call", name.start, close.end, args, op=word))

    def after_call(self, node: _Node) -> _Node:
        nxt = self.peek()
        if nxt.word in {"OVER", "FILTER", "WITHIN", "IGNORE", "RESPECT"}:
            raise _Unsupported("window or aggregate")
        return node

    def postfix(self, base: _Node) -> _Node:
        tok = self.take()
        if tok.text == "[":
            index = self.expr(0)
            close = self.expect("]")
            return _Node("subscript", base.start, close.end, [base, index])
        if tok.text == "::":
            start, end = self.type_name()
            return _Node("cast", base.start, end, [base], op="::", type_text=self.sql[start:end])
        name = self.take()  # field access: a.b, a.`b c`, a.*
        if name.kind not in {"ident", "qident"} and name.text != "*":
            raise _Unsupported("field")
        if base.kind == "atom":
            return _Node("atom", base.start, name.end)  # a qualified column name
        return _Node("field", base.start, name.end, [base])

    def predicate(self, left: _Node) -> _Node:
        negated = self.peek().word == "NOT"
        if negated:
            self.take()
        word = self.take().word
        if word == "IS":
            if self.peek().word == "NOT":
                self.take()
            what = self.take()
            if what.word == "DISTINCT":
                self.expect("FROM")
                right = self.expr(4)
                return _Node("is", left.start, right.end, [left, right], op="DISTINCT")
            if what.word not in {"NULL", "TRUE", "FALSE", "UNKNOWN"}:
                raise _Unsupported("IS")
            return _Node("is", left.start, what.end, [left], op=what.word)
        if word == "BETWEEN":
            low = self.expr(4)
            self.expect("AND")
            high = self.expr(4)
            return _Node("between", left.start, high.end, [left, low, high], op="BETWEEN")
        if word == "IN":
            if self.peek().text != "(":
                raise _Unsupported("IN")
            if self.peek(1).word in _QUERY_WORDS:
                end = self.skip_group()
                return _Node("in", left.start, end, [left], op="IN SUBQUERY")
            self.take()
            items = self.expr_list()
            close = self.expect(")")
            return _Node("in", left.start, close.end, [left, *items], op="IN")
        # LIKE / ILIKE / RLIKE / REGEXP
        if self.peek().word in {"ANY", "SOME", "ALL"}:
            self.take()
            if self.peek().text != "(":
                raise _Unsupported("LIKE ANY")
            self.take()
            items = self.expr_list()
            close = self.expect(")")
            return _Node("like", left.start, close.end, [left, *items], op=word)
        pattern = self.expr(4)
        children = [left, pattern]
        end = pattern.end
        if self.peek().word == "ESCAPE":
            self.take()
            escape = self.take()
            if escape.kind != "str":
                raise _Unsupported("ESCAPE")
            end = escape.end
        return _Node("like", left.start, end, children, op=word)


@functools.lru_cache(maxsize=512)
def _parse(sql: str) -> _Node | None:
    try:
        return _Parser(sql).parse()
    except (_Unsupported, IndexError):
        return None


# ---------------------------------------------------------------------------- types

_INTEGRAL = {"tinyint", "smallint", "int", "bigint"}
_FRACTIONAL = {"float", "double"}


def _family(spark_type: str | None) -> str:
    """``integral``, ``fractional``, ``decimal``, ``string``, ``array``, ``other`` or ``unknown``."""
    if spark_type is None:
        return "unknown"
    if spark_type in _INTEGRAL:
        return "integral"
    if spark_type in _FRACTIONAL:
        return "fractional"
    if spark_type.startswith("decimal"):
        return "decimal"
    if spark_type == "string" or spark_type.startswith(("varchar", "char")):
        return "string"
    if spark_type.startswith("array<"):
        return "array"
    return "other"


def _string_cast_target(others: list[str | None]) -> str | None:
    """The type Spark's ANSI coercion casts a string to when it meets ``others`` (None: no cast)."""
    families = {_family(t) for t in others}
    if "unknown" in families or not others:
        return None
    if families & {"fractional", "decimal"} and families <= {"fractional", "decimal", "integral"}:
        return "DOUBLE"
    if families == {"integral"}:
        return "BIGINT"
    kinds = {t for t in others if t is not None}
    if len(kinds) == 1:
        (only,) = kinds
        if only in {"date", "timestamp", "timestamp_ntz", "boolean", "binary"}:
            return only.upper()
    return None


# ---------------------------------------------------------------------------- rewrite


def _nodes_needing_types(node: _Node, found: list[_Node]) -> None:
    kinds = {"binary", "between", "in", "cast", "subscript"}
    if node.kind in kinds or (node.kind == "call" and node.op in _GUARDED_CALLS):
        found.extend(node.children)
    for child in node.children:
        _nodes_needing_types(child, found)


def has_subquery(sql: str) -> bool:
    """Whether ``sql`` holds a subquery (``(SELECT ...)``, ``IN (SELECT ...)``, ``EXISTS (...)``), from its tokens.

    Told from the text, so no plan is made for it: planning a subquery can start Spark jobs.
    """
    try:
        toks = _tokens(sql)
    except _Unsupported:
        return False
    # EXISTS (SELECT ...) opens a query too; exists(arr, x -> ...) is a function, so only the query counts.
    return any(tok.text == "(" and nxt.word in _QUERY_WORDS - {"FROM"} for tok, nxt in itertools.pairwise(toks))


def operands(sql: str) -> list[str]:
    """The sub-expressions of ``sql`` whose types :func:`guard` wants, as text."""
    root = _parse(sql)
    if root is None:
        return []
    found: list[_Node] = []
    _nodes_needing_types(root, found)
    return list(dict.fromkeys(sql[n.start : n.end] for n in found))


def _lit(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _first(errors: list[str | None]) -> str | None:
    present = [e for e in errors if e is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else f"coalesce({', '.join(present)})"


def _when(condition: str, error_class: str) -> str:
    return f"(CASE WHEN {condition} THEN {error_class} END)"


def _not_null(*values: str) -> str:
    return " AND ".join(f"({v}) IS NOT NULL" for v in values)


# Calls that raise for some rows, each with (probe, class): the probe is an expression over the
# arguments' values that is NULL exactly when the call would raise for non-NULL arguments.
def _date_probe(args: list[str], target: str) -> tuple[str, str]:
    if len(args) == 1:
        return f"try_cast({args[0]} AS {target})", "'CAST_INVALID_INPUT'"
    return f"try_to_timestamp({args[0]}, {args[1]})", "'CANNOT_PARSE_TIMESTAMP'"


_GUARDED_CALLS = {
    "TO_DATE",
    "TO_TIMESTAMP",
    "UNIX_TIMESTAMP",
    "TO_UNIX_TIMESTAMP",
    "TO_NUMBER",
    "MAKE_DATE",
    "MAKE_TIMESTAMP",
    "ELEMENT_AT",
    "MOD",
    "PMOD",
}


class _Rewriter:
    def __init__(self, sql: str, types: Mapping[str, str]) -> None:
        self.sql = sql
        self.types = types

    def type_of(self, node: _Node) -> str | None:
        return self.types.get(self.sql[node.start : node.end])

    def splice(self, node: _Node, values: list[str]) -> str:
        out, pos = [], node.start
        for child, value in zip(node.children, values, strict=True):
            out += [self.sql[pos : child.start], value]
            pos = child.end
        out.append(self.sql[pos : node.end])
        return "".join(out)

    def run(self, node: _Node) -> tuple[str, str | None]:
        parts = [self.run(child) for child in node.children]
        values = [v for v, _ in parts]
        errors = [e for _, e in parts]
        method = getattr(self, f"_{node.kind}", None)
        if method is not None:
            rewritten: tuple[str, str | None] | None = method(node, values, errors)
            if rewritten is not None:
                return rewritten
        return self.splice(node, values), _first(errors)

    # Short-circuiting forms: an operand Spark does not evaluate raises nothing.
    def _and(self, node: _Node, values: list[str], errors: list[str | None]) -> tuple[str, str | None] | None:
        return self._short_circuit(node, values, errors, "FALSE")

    def _or(self, node: _Node, values: list[str], errors: list[str | None]) -> tuple[str, str | None] | None:
        return self._short_circuit(node, values, errors, "TRUE")

    def _short_circuit(
        self, node: _Node, values: list[str], errors: list[str | None], decides: str
    ) -> tuple[str, str | None]:
        left_error, right_error = errors
        right = (
            None if right_error is None else f"(CASE WHEN ({values[0]}) <=> {decides} THEN NULL ELSE {right_error} END)"
        )
        return self.splice(node, values), _first([left_error, right])

    def _case(self, node: _Node, values: list[str], errors: list[str | None]) -> tuple[str, str | None] | None:
        if all(e is None for e in errors):
            return None
        arms: list[str] = []
        pos = 0
        operand = None
        if node.simple_case:
            operand = values[0]
            if errors[0] is not None:
                arms.append(f"WHEN {errors[0]} IS NOT NULL THEN {errors[0]}")
            pos = 1
        stop = len(values) - (1 if node.has_else else 0)
        while pos < stop:
            cond, cond_error, branch_error = values[pos], errors[pos], errors[pos + 1]
            if cond_error is not None:
                arms.append(f"WHEN {cond_error} IS NOT NULL THEN {cond_error}")
            test = f"({operand}) = ({cond})" if operand is not None else f"({cond})"
            arms.append(f"WHEN {test} THEN {branch_error or 'NULL'}")
            pos += 2
        otherwise = errors[-1] if node.has_else else None
        return self.splice(node, values), f"(CASE {' '.join(arms)} ELSE {otherwise or 'NULL'} END)"

    def _call(self, node: _Node, values: list[str], errors: list[str | None]) -> tuple[str, str | None] | None:
        name = node.op
        if name in {"IF", "IFF"} and len(values) == 3 and any(errors):
            c = values[0]
            ce, ae, be = errors
            arms = ([f"WHEN {ce} IS NOT NULL THEN {ce}"] if ce else []) + [f"WHEN ({c}) THEN {ae or 'NULL'}"]
            return self.splice(node, values), f"(CASE {' '.join(arms)} ELSE {be or 'NULL'} END)"
        if name in {"COALESCE", "NVL", "IFNULL"} and any(errors):
            arms = []
            for value, error in zip(values, errors, strict=True):
                if error is not None:
                    arms.append(f"WHEN {error} IS NOT NULL THEN {error}")
                arms.append(f"WHEN ({value}) IS NOT NULL THEN NULL")
            return self.splice(node, values), f"(CASE {' '.join(arms)} END)"
        if name == "NVL2" and len(values) == 3 and any(errors):
            a, _, _ = values
            ae, be, ce = errors
            arms = ([f"WHEN {ae} IS NOT NULL THEN {ae}"] if ae else []) + [
                f"WHEN ({a}) IS NOT NULL THEN {be or 'NULL'}"
            ]
            return self.splice(node, values), f"(CASE {' '.join(arms)} ELSE {ce or 'NULL'} END)"
        probe = self._call_probe(node, values)
        if probe is None:
            return None
        check, error_class = probe
        failing = f"{_not_null(*values)} AND {check} IS NULL"
        value = f"(CASE WHEN {failing} THEN NULL ELSE {self.splice(node, values)} END)"
        return value, _first([*errors, _when(failing, error_class)])

    def _call_probe(self, node: _Node, values: list[str]) -> tuple[str, str] | None:
        name, n = node.op, len(values)
        first = self.type_of(node.children[0]) if node.children else None
        if name in {"TO_DATE", "TO_TIMESTAMP"} and n in {1, 2} and _family(first) in {"string", "unknown"}:
            return _date_probe(values, "DATE" if name == "TO_DATE" else "TIMESTAMP")
        if name in {"UNIX_TIMESTAMP", "TO_UNIX_TIMESTAMP"} and n == 2 and _family(first) in {"string", "unknown"}:
            return _date_probe(values, "TIMESTAMP")
        if name == "TO_NUMBER" and n == 2:
            return f"try_to_number({values[0]}, {values[1]})", "'INVALID_FORMAT.MISMATCH_INPUT'"
        if name == "MAKE_DATE" and n == 3:
            return f"try_make_timestamp({', '.join(values)}, 0, 0, 0)", "'DATETIME_FIELD_OUT_OF_BOUNDS'"
        if name == "MAKE_TIMESTAMP" and n in {6, 7}:
            return f"try_make_timestamp({', '.join(values)})", "'DATETIME_FIELD_OUT_OF_BOUNDS'"
        if name in {"MOD", "PMOD"} and n == 2:
            return f"try_mod({values[0]}, {values[1]})", self._division_class(node, values)
        if name == "ELEMENT_AT" and n == 2 and _family(first) == "array":
            array, index = values
            ok = f"(CASE WHEN ({index}) = 0 OR abs({index}) > size({array}) THEN NULL ELSE TRUE END)"
            error_class = (
                f"(CASE WHEN ({index}) = 0 THEN 'INVALID_INDEX_OF_ZERO' ELSE 'INVALID_ARRAY_INDEX_IN_ELEMENT_AT' END)"
            )
            return ok, error_class
        return None

    def _subscript(self, node: _Node, values: list[str], errors: list[str | None]) -> tuple[str, str | None] | None:
        if _family(self.type_of(node.children[0])) != "array":
            return None
        array, index = values
        failing = f"{_not_null(array, index)} AND (({index}) < 0 OR ({index}) >= size({array}))"
        value = f"(CASE WHEN {failing} THEN NULL ELSE {self.splice(node, values)} END)"
        return value, _first([*errors, _when(failing, "'INVALID_ARRAY_INDEX'")])

    def _cast(self, node: _Node, values: list[str], errors: list[str | None]) -> tuple[str, str | None] | None:
        target = node.type_text
        if node.op == "TRY_CAST" or _family(target.lower()) == "string":
            return None
        source = self.type_of(node.children[0])
        if source is not None and source == target.lower().replace(" ", ""):
            return None
        (value,) = values
        tried = f"try_cast({value} AS {target})"
        family = _family(source)
        if family == "string":
            error_class = "'CAST_INVALID_INPUT'"
        elif target.lower().startswith("decimal"):
            error_class = "'NUMERIC_VALUE_OUT_OF_RANGE'"
        elif family == "unknown":
            error_class = f"(CASE WHEN typeof({value}) = 'string' THEN 'CAST_INVALID_INPUT' ELSE 'CAST_OVERFLOW' END)"
        else:
            error_class = "'CAST_OVERFLOW'"
        return tried, _first([*errors, _when(f"{_not_null(value)} AND {tried} IS NULL", error_class)])

    def _binary(self, node: _Node, values: list[str], errors: list[str | None]) -> tuple[str, str | None] | None:
        op = node.op
        if op in _COMPARISONS:
            return self._coerced(node, values, errors, [0, 1])
        if op not in {"+", "-", "*", "/", "%", "DIV"}:
            return None
        left, right = values
        families = {_family(self.type_of(c)) for c in node.children}
        if op in {"+", "-", "*"}:
            if not families & {"integral", "decimal", "string", "unknown"} or families & {"other", "array"}:
                return None  # doubles cannot overflow; dates, timestamps and intervals are left as written
            function = {"+": "try_add", "-": "try_subtract", "*": "try_multiply"}[op]
            tried = f"{function}({left}, {right})"
            if "string" in families:
                error_class = (
                    f"(CASE WHEN try_cast({left} AS DOUBLE) IS NULL OR try_cast({right} AS DOUBLE) IS NULL "
                    "THEN 'CAST_INVALID_INPUT' ELSE 'ARITHMETIC_OVERFLOW' END)"
                )
            elif "decimal" in families:
                error_class = "'NUMERIC_VALUE_OUT_OF_RANGE'"
            else:
                error_class = "'ARITHMETIC_OVERFLOW'"
            return tried, _first([*errors, _when(f"{_not_null(left, right)} AND {tried} IS NULL", error_class)])
        probe = f"try_mod({left}, {right})" if op in {"%", "DIV"} else f"try_divide({left}, {right})"
        # DIV has no TRY form: its divisor is checked by the remainder's.
        value = probe if op != "DIV" else f"(CASE WHEN {probe} IS NULL THEN NULL ELSE {self.splice(node, values)} END)"
        failing = f"{_not_null(left, right)} AND {probe} IS NULL"
        return value, _first([*errors, _when(failing, self._division_class(node, values))])

    def _division_class(self, node: _Node, values: list[str]) -> str:
        families = {_family(self.type_of(c)) for c in node.children}
        left, right = values
        if "string" in families:
            return (
                f"(CASE WHEN try_cast({left} AS DOUBLE) IS NULL OR try_cast({right} AS DOUBLE) IS NULL "
                "THEN 'CAST_INVALID_INPUT' ELSE 'DIVIDE_BY_ZERO' END)"
            )
        if "decimal" in families:
            return f"(CASE WHEN ({right}) = 0 THEN 'DIVIDE_BY_ZERO' ELSE 'NUMERIC_VALUE_OUT_OF_RANGE' END)"
        return "'DIVIDE_BY_ZERO'"

    def _between(self, node: _Node, values: list[str], errors: list[str | None]) -> tuple[str, str | None] | None:
        return self._coerced(node, values, errors, [0, 1, 2])

    def _in(self, node: _Node, values: list[str], errors: list[str | None]) -> tuple[str, str | None] | None:
        if node.op != "IN":
            return None
        return self._coerced(node, values, errors, list(range(len(values))))

    def _coerced(
        self, node: _Node, values: list[str], errors: list[str | None], positions: list[int]
    ) -> tuple[str, str | None] | None:
        """A string meeting a number, date or boolean is cast by Spark, and that cast raises for bad text."""
        types = [self.type_of(node.children[p]) for p in positions]
        strings = [p for p, t in zip(positions, types, strict=True) if _family(t) == "string"]
        others = [t for t in types if _family(t) != "string"]
        target = _string_cast_target(others) if strings and others else None
        if target is None:
            return None
        replaced = list(values)
        casts: list[str | None] = []
        for p in strings:
            tried = f"try_cast({values[p]} AS {target})"
            replaced[p] = tried
            casts.append(_when(f"{_not_null(values[p])} AND {tried} IS NULL", "'CAST_INVALID_INPUT'"))
        return self.splice(node, replaced), _first([*errors, *casts])


def guard(sql: str, types: Mapping[str, str] | None = None) -> Guarded:
    """``sql`` in its NULL-instead-of-raising form plus its error-class expression.

    ``types`` maps the texts :func:`operands` named to their Spark type (``simpleString``);
    a missing type is taken as unknown, which rewrites more, never less, except for the
    string casts of comparisons, which need both types. Text the parser does not follow is
    returned as written, with no error expression.
    """
    root = _parse(sql)
    if root is None:
        return Guarded(sql, None)
    value, error = _Rewriter(sql, types or {}).run(root)
    return Guarded(value, error)
