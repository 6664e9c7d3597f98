import ModelCore

/// What differs between the SQL that ``SQLCompiler`` writes for SQLite and for PostgreSQL: how
/// values are bound, how modeld's semantics of strings, decimals, sums and arithmetic are
/// spelt. Everything else about a statement — joins, subqueries, quantifiers, paging — is the
/// compiler's and the same for both.
///
/// Every method returns SQL text whose values are bound through `bind` (never spliced).
package protocol SQLDialect: Sendable {
    /// The text of the `index`th parameter (1-based), bound to `value`: `?1`, or `$1::bigint`
    /// (PostgreSQL's spells the type bound, so that a statement prepared once runs with it).
    func placeholder(_ index: Int, for value: Value) -> String

    /// A boolean constant.
    func constant(_ value: Bool) -> String

    /// ` ASC` or ` DESC`, with nil before every value ascending (SQLite's order, and modeld's).
    func order(ascending: Bool) -> String

    /// `LIMIT` without a limit, for an offset alone.
    var unlimited: String { get }

    /// Whether an objects statement over a table that holds one entity reads its `_entity`
    /// column. SQLite's reader takes such a row's entity from the table, so its statements
    /// select NULL there, sparing SQLite the column at every row (``SQLCompiler/entityColumn``);
    /// PostgreSQL's reader reads the column.
    var readsEntityOfOneEntityTable: Bool { get }

    /// `(a IS b)`: equal, NULL equal to NULL. `negated`: `(a IS NOT b)`.
    func same(_ a: String, _ b: String, negated: Bool) -> String

    /// The suffix that makes decimal text compare by value (SQLite's collation), or "".
    var decimalOrder: String { get }

    /// `side` folded with `options` (case, diacritics), for comparing as bytes afterwards.
    func fold(_ side: SQLExpression, _ options: StringOptions, bind: (Value) -> String) throws(ModelError) -> String

    /// `CONTAINS`, `BEGINSWITH`, `ENDSWITH` or `LIKE` (`op`) of two string sides.
    func match(
        _ op: ComparisonOperator, _ lhs: SQLExpression, _ rhs: SQLExpression, options: StringOptions,
        bind: (Value) -> String
    ) throws(ModelError) -> String

    /// A comparison of a decimal with an int or a double, by ``Value/compare(_:_:)``.
    func compareMixedDecimal(_ lhs: SQLExpression, _ op: ComparisonOperator, _ rhs: SQLExpression) -> String

    /// Whether the SQL's own comparison of an int with a double is exact (SQLite's is;
    /// PostgreSQL's goes through a double). When not, such pairs are compared with
    /// ``compareIntWithDouble(_:_:_:)``.
    var comparesIntsWithDoublesExactly: Bool { get }

    /// A comparison of an int with a double (either side), by ``Value/compare(_:_:)``, with
    /// modeld's nil rules; used when ``comparesIntsWithDoublesExactly`` is false.
    func compareIntWithDouble(_ lhs: SQLExpression, _ op: ComparisonOperator, _ rhs: SQLExpression) -> String

    /// The most elements of an `IN` list bound one parameter each.
    var inlineListLimit: Int { get }

    /// The most values a query's condition may bind (nil: no limit), refused beyond with
    /// `resourceExhausted` before the statement is prepared.
    var maximumConditionValues: Int? { get }

    /// A longer `IN` list: `(SELECT …)` yielding each of `values` (all of one list).
    func longList(_ values: [Value], bind: (Value) -> String) -> String

    /// `@sum` of `column` of `type` (an aggregate call), nil when nothing was added.
    func sum(_ column: String, _ type: AttributeType) -> String

    /// `@avg` of `column` of `type`.
    func average(_ column: String, _ type: AttributeType) -> String

    /// `@min`/`@max` (`function` "min" or "max") of `column` of `type`.
    func extreme(_ function: String, _ column: String, _ type: AttributeType) -> String

    /// A date (microseconds) plus `sign` × seconds, rounded half away from zero; NULL beyond Int64.
    func dateAdd(_ date: String, _ seconds: String, sign: Int) -> String

    /// The seconds from date `b` to date `a`, as a double.
    func dateDifference(_ a: String, _ b: String) -> String

    /// `a / b` in doubles; NULL when `b` is zero.
    func divide(_ a: String, _ b: String) -> String

    /// `a op b` (`+`, `-`, `*`) of ints (`integers`) or of numbers one of which is a double; an
    /// int result beyond Int64 becomes a double, as in SQLite.
    func arithmetic(_ op: ArithmeticOperator, _ a: String, _ b: String, integers: Bool) -> String
}
