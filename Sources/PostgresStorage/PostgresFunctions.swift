import ModelStorage

/// The functions a store's namespace holds for compiled queries (``PostgresDialect``), made
/// (or replaced) whenever a daemon prepares the store. Each does in PostgreSQL what the SQLite
/// backend's functions do (``TextComparison``, ``NumericAccumulator``), so that every backend
/// gives the same answers:
/// - `modeld_like_pattern(p)`: a modeld `LIKE` pattern as PostgreSQL's;
/// - `modeld_fsum(x)`: the exact sum of doubles, rounded once (Shewchuk's algorithm, as
///   `NumericAccumulator`, values of 2^960 or more added scaled down apart from the others so
///   that no partial sum overflows unless the sum does), NULL for none; with an infinity among them,
///   that infinity (NaN for both signs);
/// - `modeld_arith(op, a, b)`: double `+ - * /` where overflow gives an infinity, underflow
///   zero, division by zero and NaN NULL (as SQLite);
/// - `modeld_decimal_quotient(sum, count)`: a decimal average as Foundation's `Decimal` divides,
///   to as many significant digits as its 128-bit mantissa holds, the rest cut off; NULL for none;
/// - `modeld_compare_number(n, d)`: an int (or a sum of ints) against a double exactly, -1, 0 or
///   1, as ``Value/compare(_:_:)`` and SQLite compare them (PostgreSQL's own `bigint = float8`
///   compares through a double: 2^53 + 1 equals 2^53);
/// - `modeld_date_add(micros, seconds, sign)`: a date plus seconds, rounded half away from zero,
///   NULL beyond Int64.
enum PostgresFunctions {
    static func statements(namespace: String) -> [String] {
        let ns = SQL.quote(namespace)
        return [
            """
            CREATE OR REPLACE FUNCTION \(ns).modeld_like_pattern(p text) RETURNS text
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            DECLARE result text := ''; i int := 1; n int := char_length(p); c text;
            BEGIN
              WHILE i <= n LOOP
                c := substr(p, i, 1);
                IF c = '\\' AND i < n THEN
                  i := i + 1; c := substr(p, i, 1);
                  IF c IN ('%', '_', '\\') THEN result := result || '\\'; END IF;
                  result := result || c;
                ELSIF c = '*' THEN result := result || '%';
                ELSIF c = '?' THEN result := result || '_';
                ELSIF c IN ('%', '_', '\\') THEN result := result || '\\' || c;
                ELSE result := result || c;
                END IF;
                i := i + 1;
              END LOOP;
              RETURN result;
            END $f$
            """,
            """
            CREATE OR REPLACE FUNCTION \(ns).modeld_fsum_add(partials float8[], value float8) RETURNS float8[]
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            DECLARE x float8 := value; y float8; t float8; high float8; low float8; kept float8[] := '{}';
            BEGIN
              FOREACH y IN ARRAY partials LOOP
                IF abs(x) < abs(y) THEN t := x; x := y; y := t; END IF;
                BEGIN
                  high := x + y;
                EXCEPTION WHEN numeric_value_out_of_range THEN
                  RETURN NULL;
                END;
                low := y - (high - x);
                IF low <> 0 THEN kept := kept || low; END IF;
                x := high;
              END LOOP;
              RETURN kept || x;
            END $f$
            """,
            """
            CREATE OR REPLACE FUNCTION \(ns).modeld_fsum_total(partials float8[]) RETURNS float8
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            DECLARE n int := coalesce(array_length(partials, 1), 0); high float8; low float8 := 0; x float8; y float8;
            BEGIN
              IF n = 0 THEN RETURN 0; END IF;
              high := partials[n];
              WHILE n > 1 LOOP
                x := high; n := n - 1; y := partials[n];
                high := x + y;
                low := y - (high - x);
                IF low <> 0 THEN EXIT; END IF;
              END LOOP;
              IF n > 1 AND ((low < 0 AND partials[n - 1] < 0) OR (low > 0 AND partials[n - 1] > 0)) THEN
                y := low * 2; x := high + y;
                IF y = x - high THEN high := x; END IF;
              END IF;
              RETURN high;
            END $f$
            """,
            """
            CREATE OR REPLACE FUNCTION \(ns).modeld_fsum_step(state float8[], value float8) RETURNS float8[]
            LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
            DECLARE k int; scaled float8[]; plain float8[];
            BEGIN
              IF value IS NULL THEN RETURN state; END IF;
              -- The sum when the values held an infinity (NaN for both signs), whether they did, how
              -- many partials of values of 2^960 or more (scaled by 2^-600) come next, then the others'.
              IF state IS NULL THEN state := '{0,0,0}'; END IF;
              IF value IN ('Infinity', '-Infinity', 'NaN') THEN
                RETURN ARRAY[CASE WHEN state[2] = 0 OR state[1] = value THEN value ELSE 'NaN'::float8 END, 1, 0];
              END IF;
              IF state[2] <> 0 THEN RETURN state; END IF;
              k := state[3]::int;
              scaled := coalesce(state[4:3 + k], '{}');
              plain := coalesce(state[4 + k:], '{}');
              IF abs(value) >= 2::float8 ^ 960 THEN
                scaled := \(ns).modeld_fsum_add(scaled, value * 2::float8 ^ -600);
              ELSE
                plain := \(ns).modeld_fsum_add(plain, value);
              END IF;
              IF scaled IS NULL OR plain IS NULL THEN RETURN ARRAY[sign(value) * 'Infinity'::float8, 1, 0]; END IF;
              RETURN ARRAY[0, 0, coalesce(array_length(scaled, 1), 0)] || scaled || plain;
            END $f$
            """,
            """
            CREATE OR REPLACE FUNCTION \(ns).modeld_fsum_final(state float8[]) RETURNS float8
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            DECLARE k int := state[3]::int; merged float8[] := '{}'; x float8; overflow float8;
            BEGIN
              IF state[2] <> 0 THEN RETURN state[1]; END IF;
              IF k = 0 THEN RETURN \(ns).modeld_fsum_total(coalesce(state[4:], '{}')); END IF;
              -- The largest partial of the large values is the last; past the largest double, the
              -- sum is the infinity of its sign.
              overflow := sign(state[3 + k]) * 'Infinity'::float8;
              FOR i IN 4..3 + k LOOP
                BEGIN
                  x := state[i] * 2::float8 ^ 600;
                EXCEPTION WHEN numeric_value_out_of_range THEN
                  RETURN overflow;
                END;
                merged := \(ns).modeld_fsum_add(merged, x);
                IF merged IS NULL THEN RETURN overflow; END IF;
              END LOOP;
              FOREACH x IN ARRAY coalesce(state[4 + k:], '{}') LOOP
                merged := \(ns).modeld_fsum_add(merged, x);
                IF merged IS NULL THEN RETURN overflow; END IF;
              END LOOP;
              RETURN \(ns).modeld_fsum_total(merged);
            END $f$
            """,
            """
            CREATE OR REPLACE AGGREGATE \(ns).modeld_fsum(float8) (
              SFUNC = \(ns).modeld_fsum_step, STYPE = float8[], FINALFUNC = \(ns).modeld_fsum_final
            )
            """,
            """
            CREATE OR REPLACE FUNCTION \(ns).modeld_arith(op text, a float8, b float8) RETURNS float8
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            DECLARE r float8;
            BEGIN
              BEGIN
                r := CASE op WHEN '+' THEN a + b WHEN '-' THEN a - b WHEN '*' THEN a * b
                  ELSE CASE WHEN b = 0 THEN NULL ELSE a / b END END;
              EXCEPTION WHEN numeric_value_out_of_range THEN
                -- Too large or too small for a double: an infinity of the exact result's sign, or zero.
                IF op IN ('*', '/') AND (CASE op WHEN '*' THEN log(abs(a)) + log(abs(b)) ELSE log(abs(a)) - log(abs(b)) END) < 0 THEN
                  r := 0;
                ELSE
                  r := (CASE op WHEN '*' THEN sign(a) * sign(b) WHEN '/' THEN sign(a) * sign(b) ELSE sign(a) END) * 'Infinity'::float8;
                END IF;
              END;
              IF r = 'NaN' THEN RETURN NULL; END IF;
              RETURN r;
            END $f$
            """,
            """
            CREATE OR REPLACE FUNCTION \(ns).modeld_date_add(d bigint, s float8, sg int) RETURNS bigint
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            DECLARE v float8; r float8;
            BEGIN
              BEGIN
                v := d::float8 + (s * sg) * 1000000;
              EXCEPTION WHEN numeric_value_out_of_range THEN
                RETURN NULL;
              END;
              IF v IN ('Infinity', '-Infinity', 'NaN') THEN RETURN NULL; END IF;
              r := trunc(v) + CASE WHEN abs(v - trunc(v)) >= 0.5 THEN sign(v) ELSE 0 END;
              IF r >= -9223372036854775808::float8 AND r < 9223372036854775808::float8 THEN RETURN r::bigint; END IF;
              RETURN NULL;
            END $f$
            """,
            """
            CREATE OR REPLACE FUNCTION \(ns).modeld_compare_number(n numeric, d float8) RETURNS int
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $f$
              SELECT CASE
                WHEN n::float8 < d THEN -1
                WHEN n::float8 > d THEN 1
                -- n rounds to d: d is a whole number, compared with n exactly.
                WHEN d >= 9223372036854775808::float8 THEN CASE WHEN n < 9223372036854775808 THEN -1 ELSE 0 END
                WHEN d < -9223372036854775808::float8 THEN 0
                ELSE sign(n - d::bigint)::int
              END
            $f$
            """,
            """
            CREATE OR REPLACE FUNCTION \(ns).modeld_decimal_quotient(s numeric, c bigint) RETURNS numeric
            LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
            DECLARE q numeric; d int; r numeric;
            BEGIN
              IF c = 0 THEN RETURN NULL; END IF;
              q := round(s, 120) / c;
              IF q = 0 THEN RETURN 0; END IF;
              d := floor(log(abs(q)))::int;
              -- As many digits as a 128-bit mantissa holds (39, or 38 when 39 would not fit).
              r := trunc(q, 38 - d);
              IF abs(r) * 10::numeric ^ (38 - d) > 340282366920938463463374607431768211455 THEN
                r := trunc(q, 37 - d);
              END IF;
              RETURN trim_scale(r);
            END $f$
            """,
        ]
    }
}
