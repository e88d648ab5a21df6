"""Would a statement route to one shard if fgcpay's tables were distributed by merchant
(docs/scaling.md)? `unrouted(sql, columns)` names each distributed table a statement
reads or writes without naming its distribution column's value: an equality with a
parameter or a constant (`merchant_id = $1`), a join on that column with a table that is
so named (`r.merchant_id = p.merchant_id`), or, for an INSERT, the column among those
written. For tests/test_citus_statements.py.

Statements are parsed with pglast (PostgreSQL's own parser, libpg_query), so subqueries,
CTEs, joins and aliases are seen as PostgreSQL sees them. The check is conservative: only
an equality that must hold for every row (a conjunct of WHERE or of a join's ON, never
under OR or NOT) names a value; `= ANY(array)` names many merchants, so none.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

import attrs
from pglast import ast, parse_sql
from pglast.enums import A_Expr_Kind, BoolExprType

DISTRIBUTED: dict[str, str] = {
    # The tenant table itself, distributed by its id: co-located with every table below.
    "merchants": "id",
    # A merchant's rows: distributed by merchant_id, all co-located with `merchants`.
    "api_keys": "merchant_id",
    "balance_shards": "merchant_id",
    "checkout_sessions": "merchant_id",
    "dashboard_sessions": "merchant_id",
    "deliveries": "merchant_id",
    # It has no merchant_id yet: the column is the first migration docs/scaling.md lists.
    "delivery_attempts": "merchant_id",
    "event_streams": "merchant_id",
    "events": "merchant_id",
    "idempotency_keys": "merchant_id",
    "refunds": "merchant_id",
    "subscriptions": "merchant_id",
    "test_clocks": "merchant_id",
    "transactions": "merchant_id",
    "webhook_endpoints": "merchant_id",
    # A sandbox belongs to its parent: its row lives with the parent's (the list, the count).
    "sandboxes": "parent_id",
    # A merchant's wrong-PIN counters: `scope` is the merchant's id ('' for codes counted
    # across merchants), so a payment's PIN check and its payment share a shard.
    "pin_failures": "scope",
    # Keyed by what they count, never by a merchant: each a distributed table of its own
    # (not co-located), every statement naming its key.
    "rate_limit_buckets": "bucket_key",
    "sign_in_failures": "subject",
}

REFERENCE: frozenset[str] = frozenset(
    {
        # Four rows every merchant reads, written at start: replicated to every node.
        "test_customers",
        # The migrations' own bookkeeping, on the coordinator.
        "schema_migrations",
    }
)

_PIN = "="  # the union-find's node for "named by a value"


@attrs.frozen
class _Source:
    """One item of a FROM list: a table (`table` set) or anything else (a function, a
    subquery, a CTE: its columns are values to the scope)."""

    table: str | None
    columns: frozenset[str] | None  # a non-table's column names, where the alias gives them


@attrs.define
class _Scope:
    sources: dict[str, _Source]
    parent: _Scope | None
    ctes: frozenset[str]
    pinned: set[str] = attrs.field(factory=set)


class Unrouted(Exception):
    """A statement the check cannot read (never swallowed: the test fails on it)."""


def to_numbered(sql: str) -> str:
    """psycopg's placeholders (`%s`, `%b`) as PostgreSQL's `$1, $2, ...`, `%%` as `%`."""
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(0) == "%%":
            return "%"
        count += 1
        return f"${count}"

    return re.sub(r"%%|%[sb]", number, sql)


def normalized(sql: str) -> str:
    """One line, single spaces: how statements are shown and allowlisted."""
    return " ".join(sql.split())


def unrouted(sql: str, columns: Mapping[str, frozenset[str]]) -> list[str]:
    """The distributed tables `sql` touches without naming their distribution value, as
    `table` (or `table alias`); tables neither distributed nor reference, as `table?`.
    `columns`: each table's columns (to tell a bare column's table)."""
    problems: list[str] = []
    for raw in parse_sql(to_numbered(sql)):
        _visit(_present(raw.stmt), None, columns, problems)
    return problems


def _present(node: ast.Node | None) -> ast.Node:
    if node is None:
        raise Unrouted("a statement without the part it must have")
    return node


def _name(name: str | None) -> str:
    if name is None:
        raise Unrouted("a table or alias without a name")
    return name


def _children(node: ast.Node) -> Iterator[ast.Node]:
    for name in node:
        value = getattr(node, name)
        if isinstance(value, ast.Node):
            yield value
        elif isinstance(value, tuple | list):
            for item in value:
                if isinstance(item, ast.Node):
                    yield item
                elif isinstance(item, tuple | list):
                    yield from (inner for inner in item if isinstance(inner, ast.Node))


_STATEMENTS = (ast.SelectStmt, ast.UpdateStmt, ast.DeleteStmt, ast.InsertStmt)


def _visit(
    node: ast.Node,
    scope: _Scope | None,
    columns: Mapping[str, frozenset[str]],
    problems: list[str],
) -> None:
    if isinstance(node, _STATEMENTS):
        _statement(node, scope, columns, problems)
        return
    for child in _children(node):
        _visit(child, scope, columns, problems)


def _statement(
    stmt: ast.SelectStmt | ast.UpdateStmt | ast.DeleteStmt | ast.InsertStmt,
    parent: _Scope | None,
    columns: Mapping[str, frozenset[str]],
    problems: list[str],
) -> None:
    ctes: set[str] = set(parent.ctes) if parent is not None else set()
    with_clause = stmt.withClause
    if with_clause is not None:
        for cte in with_clause.ctes or ():
            if isinstance(cte, ast.CommonTableExpr) and cte.ctename:
                ctes.add(cte.ctename)
    scope = _Scope({}, parent, frozenset(ctes))
    quals: list[ast.Node] = []
    later: list[ast.Node] = []  # what runs in scopes of its own (subqueries, CTEs)
    items: list[ast.Node] = []
    if isinstance(stmt, ast.SelectStmt):
        items += list(stmt.fromClause or ())
    elif isinstance(stmt, ast.UpdateStmt):
        items += [_present(stmt.relation), *(stmt.fromClause or ())]
    elif isinstance(stmt, ast.DeleteStmt):
        items += [_present(stmt.relation), *(stmt.usingClause or ())]
    for item in items:
        _add_source(item, scope, quals, later)
    if not isinstance(stmt, ast.InsertStmt) and stmt.whereClause is not None:
        quals.append(stmt.whereClause)

    parent_of = {}
    for name, source in scope.sources.items():
        if source.table is not None and source.table in DISTRIBUTED:
            parent_of[name] = name
    parent_of[_PIN] = _PIN

    def find(name: str) -> str:
        while parent_of[name] != name:
            name = parent_of[name]
        return name

    def union(a: str, b: str) -> None:
        parent_of[find(a)] = find(b)

    for qual in quals:
        for conjunct in _conjuncts(qual):
            sides = _equality(conjunct)
            if sides is None:
                continue
            left, right = (_term(side, scope, columns) for side in sides)
            for one, other in ((left, right), (right, left)):
                if one[0] == "here":
                    if other[0] == "value":
                        union(one[1], _PIN)
                    elif other[0] == "here":
                        union(one[1], other[1])
                    elif other[0] == "outer-pinned":
                        union(one[1], _PIN)

    if isinstance(stmt, ast.InsertStmt):
        relation = _present(stmt.relation)
        assert isinstance(relation, ast.RangeVar)
        table = _name(relation.relname)
        key = DISTRIBUTED.get(table)
        written = {target.name for target in stmt.cols or () if isinstance(target, ast.ResTarget)}
        if key is not None and key not in written:
            problems.append(table)
        elif key is None and table not in REFERENCE:
            problems.append(f"{table}?")
    for name, source in scope.sources.items():
        read = source.table
        if read is None:
            continue
        if read in DISTRIBUTED:
            if find(name) == find(_PIN):
                scope.pinned.add(name)
            else:
                problems.append(read if name == read else f"{read} {name}")
        elif read not in REFERENCE:
            problems.append(f"{read}?")

    # Everything else the statement holds, each subquery in a scope of its own.
    skip = {"fromClause", "relation", "usingClause"}
    for name in stmt:
        if name in skip:
            continue
        value = getattr(stmt, name)
        for child in value if isinstance(value, tuple | list) else [value]:
            if isinstance(child, ast.Node):
                _visit(child, scope, columns, problems)
    for child in later:
        _visit(child, scope, columns, problems)


def _add_source(
    item: ast.Node, scope: _Scope, quals: list[ast.Node], later: list[ast.Node]
) -> None:
    if isinstance(item, ast.RangeVar):
        table = _name(item.relname)
        name = _name(item.alias.aliasname) if item.alias is not None else table
        scope.sources[name] = _Source(None if table in scope.ctes else table, None)
    elif isinstance(item, ast.JoinExpr):
        _add_source(_present(item.larg), scope, quals, later)
        _add_source(_present(item.rarg), scope, quals, later)
        if item.quals is not None:
            quals.append(item.quals)
    elif isinstance(item, ast.RangeSubselect | ast.RangeFunction):
        alias = item.alias
        if alias is not None:
            names = frozenset(
                _name(column.sval)
                for column in alias.colnames or ()
                if isinstance(column, ast.String)
            )
            scope.sources[_name(alias.aliasname)] = _Source(None, names or None)
        later.append(item)
    else:
        later.append(item)


def _conjuncts(node: ast.Node) -> Iterator[ast.Node]:
    if isinstance(node, ast.BoolExpr) and node.boolop == BoolExprType.AND_EXPR:
        for arg in node.args or ():
            yield from _conjuncts(arg)
    else:
        yield node


def _equality(node: ast.Node) -> tuple[ast.Node, ast.Node] | None:
    """The two sides of `a = b` (or `a IN (b)`, one value), else None."""
    if not isinstance(node, ast.A_Expr):
        return None
    names = [name.sval for name in node.name or () if isinstance(name, ast.String)]
    if names != ["="]:
        return None
    left, right = node.lexpr, node.rexpr
    if left is None:
        return None
    if node.kind == A_Expr_Kind.AEXPR_OP and isinstance(right, ast.Node):
        return left, right
    if node.kind == A_Expr_Kind.AEXPR_IN and isinstance(right, tuple | list) and len(right) == 1:
        (only,) = right
        if isinstance(only, ast.Node):
            return left, only
    return None


Term = tuple[str, str]
"""("here", alias): this scope's distributed table's key; ("outer-pinned", alias): an
enclosing scope's, named there; ("value", ""): a parameter, constant or a non-table's
column; ("other", ""): anything else."""


def _term(node: ast.Node, scope: _Scope, columns: Mapping[str, frozenset[str]]) -> Term:
    if isinstance(node, ast.TypeCast) and node.arg is not None:
        return _term(node.arg, scope, columns)
    if isinstance(node, ast.ParamRef | ast.A_Const):
        return ("value", "")
    if isinstance(node, ast.ColumnRef):
        return _column(node, scope, columns)
    return ("other", "")


def _column(node: ast.ColumnRef, scope: _Scope, columns: Mapping[str, frozenset[str]]) -> Term:
    fields = [field.sval for field in node.fields or () if isinstance(field, ast.String)]
    if not fields:
        return ("other", "")
    name = fields[-1]
    level: _Scope | None = scope
    while level is not None:
        for alias, source in level.sources.items():
            if len(fields) > 1 and alias != fields[-2]:
                continue
            if source.table is None:
                if len(fields) > 1 or (source.columns is not None and name in source.columns):
                    return ("value", "")
                continue
            if name not in columns.get(source.table, frozenset()):
                continue
            if DISTRIBUTED.get(source.table) != name:
                return ("other", "")
            if level is scope:
                return ("here", alias)
            return ("outer-pinned", alias) if alias in level.pinned else ("other", "")
        level = level.parent
    # No table in reach has it: a function's column, `excluded.x`, ...: a value.
    return ("value", "")
