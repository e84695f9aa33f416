package io.hyperstream.jni;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The query oracles of both engines' test tiers: seeded random tables with adversarial values (NaN,
 * ±0, ±infinity, NULL, empty and non-ASCII strings, integer extremes, decimals at their precision
 * limit, dates and timestamps around 1970 and at microsecond edges, booleans, lists and structs) and
 * random predicates over them, as SQL text in the engine's dialect. Each query runs through our scan
 * and through the engine's own reader of the same rows (Spark's Parquet reader, Trino's memory
 * connector), compared as multisets; SQLancer's TLP (count(p) + count(NOT p) + count(p IS NULL) =
 * count(*)) and NoREC (the pushed filter against the same predicate in a projection, which no scan
 * sees) run beside it, and random DELETEs are compared with a model: the reference's rows that no
 * deleted predicate held for. A mismatch names the seed and a shrunk predicate: the smallest part of
 * the failing one that still fails.
 */
public final class QueryFuzz {
    /** The SQL dialect predicates and literals are written in: the engine's own. */
    public enum Dialect {
        SPARK, TRINO
    }

    /** What the fuzzer needs of an engine: statements, and rows as comparable text. */
    public interface Engine {
        void execute(String sql);

        /** The rows of {@code sql}, each rendered as one string (values in column order). */
        List<String> rows(String sql);
    }

    /** A column of the fuzzed table: its name, its type in each dialect, and how its values are made. */
    private record Column(String name, String spark, String trino, Kind kind) {
        String type(Dialect dialect) {
            return dialect == Dialect.SPARK ? spark : trino;
        }
    }

    private enum Kind {
        ID, INT, BIGINT, DOUBLE, FLOAT, STRING, BOOLEAN, DATE, TIMESTAMP, DECIMAL, ARRAY, STRUCT
    }

    private static final List<Column> COLUMNS = List.of(
            new Column("id", "BIGINT", "bigint", Kind.ID),
            new Column("i", "INT", "integer", Kind.INT),
            new Column("l", "BIGINT", "bigint", Kind.BIGINT),
            new Column("d", "DOUBLE", "double", Kind.DOUBLE),
            new Column("f", "FLOAT", "real", Kind.FLOAT),
            new Column("s", "STRING", "varchar", Kind.STRING),
            new Column("b", "BOOLEAN", "boolean", Kind.BOOLEAN),
            new Column("dt", "DATE", "date", Kind.DATE),
            new Column("ts", "TIMESTAMP_NTZ", "timestamp(6)", Kind.TIMESTAMP),
            new Column("dec", "DECIMAL(38,6)", "decimal(38,6)", Kind.DECIMAL),
            new Column("arr", "ARRAY<INT>", "array(integer)", Kind.ARRAY),
            new Column("st", "STRUCT<a: INT, c: STRING>", "row(a integer, c varchar)", Kind.STRUCT));

    /** The scalar columns our scalar index covers in the fuzzed tables (the rest are scanned or pruned by statistics). */
    public static final List<String> INDEXED = List.of("i", "s", "d", "dt");

    private static final String[] INTS = {"0", "1", "-1", "2", "7", "-7", "2147483647", "-2147483648"};
    private static final String[] BIGINTS = {"0", "1", "-1", "42", "-42", "9223372036854775807", "-9223372036854775808"};
    private static final String[] DOUBLES = {"0.0", "-0.0", "NaN", "Infinity", "-Infinity", "1.5", "-2.25", "2.0",
        "1.7976931348623157E308", "-1.7976931348623157E308", "4.9E-324", "0.1"};
    private static final String[] FLOATS = {"0.0", "-0.0", "NaN", "Infinity", "-Infinity", "1.5", "-2.25", "2.0",
        "3.4028235E38", "1.4E-45", "0.1"};
    private static final String[] STRINGS = {"", "a", "A", "ab", "abc", "b", "é", "日本", "null", " a", "a%", "it's", "z"};
    private static final String[] DATES = {"1970-01-01", "1969-12-31", "1900-01-01", "2024-02-29", "9999-12-31", "0001-01-01",
        "2000-06-15"};
    private static final String[] TIMESTAMPS = {"1970-01-01 00:00:00", "1969-12-31 23:59:59.999999", "1970-01-01 00:00:00.000001",
        "2024-02-29 12:00:00.5", "1900-01-01 00:00:00", "2000-06-15 08:30:00"};
    private static final String[] DECIMALS = {"0", "0.000001", "-0.000001", "1.5", "-1.5", "99999999999999999999999999999999.999999",
        "-99999999999999999999999999999999.999999", "12345.678901"};

    private final Random random;
    private final Dialect dialect;

    private QueryFuzz(long seed, Dialect dialect) {
        this.random = new Random(seed);
        this.dialect = dialect;
    }

    /** The column list of the fuzzed table in {@code dialect}, for a CREATE TABLE. */
    public static String columns(Dialect dialect) {
        return COLUMNS.stream().map(c -> c.name() + " " + c.type(dialect)).collect(Collectors.joining(", "));
    }

    /** The column names in table order. */
    public static List<String> columnNames() {
        return COLUMNS.stream().map(Column::name).toList();
    }

    /** Bounded in the test command; {@code -Dhyperstream.fuzz.seeds=N -Dhyperstream.fuzz.queries=M} for a long run. */
    public static int seeds(int bounded) {
        return Integer.getInteger("hyperstream.fuzz.seeds", bounded);
    }

    public static int queries(int bounded) {
        return Integer.getInteger("hyperstream.fuzz.queries", bounded);
    }

    /** The first seed: {@code -Dhyperstream.fuzz.seed=S} reruns a reported one. */
    public static long firstSeed() {
        return Long.getLong("hyperstream.fuzz.seed", 1);
    }

    /**
     * One seeded run: fills {@code ours} and {@code reference} (both created empty with
     * {@link #columns}) with the same rows in {@code batches} INSERTs (so our table has several
     * files), then runs {@code queries} random queries through both and the oracles, then random
     * DELETEs against the model. Throws {@link AssertionError} naming the seed and the shrunk
     * predicate at the first mismatch.
     */
    public static void run(long seed, Dialect dialect, Engine engine, String ours, String reference, int rows, int batches,
            int queries) {
        new QueryFuzz(seed, dialect).run(seed, engine, ours, reference, rows, batches, queries);
    }

    private void run(long seed, Engine engine, String ours, String reference, int rows, int batches, int queries) {
        List<String> values = new ArrayList<>();
        for (int id = 0; id < rows; id++) {
            values.add(row(id));
        }
        int per = Math.max(1, (rows + batches - 1) / batches);
        for (int from = 0; from < rows; from += per) {
            String batch = String.join(", ", values.subList(from, Math.min(rows, from + per)));
            engine.execute("INSERT INTO " + ours + " VALUES " + batch);
            engine.execute("INSERT INTO " + reference + " VALUES " + batch);
        }
        Check check = new Check(seed, engine, ours, reference);
        check.sameRows("whole table", "*", null);
        for (Column column : COLUMNS) {
            if (column.kind() != Kind.ARRAY && column.kind() != Kind.STRUCT) {
                String c = column.name();
                check.sameAggregate("count(*), count(" + c + "), min(" + c + "), max(" + c + ")");
            }
        }
        for (int q = 0; q < queries; q++) {
            Node predicate = predicate(3);
            String projection = projection();
            switch (random.nextInt(4)) {
                case 0 -> check.tlp(predicate);
                case 1 -> check.norec(predicate);
                case 2 -> check.sameRows("ordered LIMIT", "id", predicate, " ORDER BY id LIMIT " + (1 + random.nextInt(5)));
                default -> check.sameRows("filter", projection, predicate);
            }
        }
        // DELETEs: after each, our table holds exactly the reference's rows that no deleted predicate held for.
        for (int d = 0; d < 3; d++) {
            Node predicate = predicate(2);
            engine.execute("DELETE FROM " + ours + " WHERE " + predicate.sql());
            check.deleted.add(predicate);
            check.sameRows("after DELETE WHERE " + predicate.sql(), "*", null);
            for (int q = 0; q < 3; q++) {
                check.sameRows("filter after DELETE", projection(), predicate(2));
            }
        }
    }

    /** The oracles over one pair of tables; {@code deleted}: the predicates DELETEd from ours so far. */
    private static final class Check {
        final long seed;
        final Engine engine;
        final String ours;
        final String reference;
        final List<Node> deleted = new ArrayList<>();

        Check(long seed, Engine engine, String ours, String reference) {
            this.seed = seed;
            this.engine = engine;
            this.ours = ours;
            this.reference = reference;
        }

        /** The reference's rows that the model keeps: none a deleted predicate held for. */
        String model() {
            if (deleted.isEmpty()) {
                return reference;
            }
            String kept = deleted.stream().map(p -> "NOT coalesce(" + p.sql() + ", false)").collect(Collectors.joining(" AND "));
            return "(SELECT * FROM " + reference + " WHERE " + kept + ") AS model";
        }

        void sameRows(String what, String projection, Node predicate) {
            sameRows(what, projection, predicate, "");
        }

        void sameRows(String what, String projection, Node predicate, String tail) {
            Function<Node, String> failure = p -> {
                String where = p == null ? "" : " WHERE " + p.sql();
                List<String> got = sorted(engine.rows("SELECT " + projection + " FROM " + ours + where + tail));
                List<String> expected = sorted(engine.rows("SELECT " + projection + " FROM " + model() + where + tail));
                return got.equals(expected) ? null : "ours " + difference(got, expected) + ", the reference " + difference(expected, got);
            };
            verify(what + " SELECT " + projection + " ... " + tail, predicate, failure);
        }

        void sameAggregate(String aggregates) {
            List<String> got = engine.rows("SELECT " + aggregates + " FROM " + ours);
            List<String> expected = engine.rows("SELECT " + aggregates + " FROM " + model());
            if (!got.equals(expected)) {
                throw new AssertionError("seed " + seed + ": SELECT " + aggregates + " differs: ours " + got + ", the reference "
                        + expected + " (rerun with -Dhyperstream.fuzz.seed=" + seed + ")");
            }
        }

        /** Ternary logic partitioning: every row is in exactly one of p, NOT p, p IS NULL. */
        void tlp(Node predicate) {
            verify("TLP", predicate, p -> {
                long all = count("SELECT count(*) FROM " + ours);
                long parts = count("SELECT count(*) FROM " + ours + " WHERE " + p.sql())
                        + count("SELECT count(*) FROM " + ours + " WHERE NOT (" + p.sql() + ")")
                        + count("SELECT count(*) FROM " + ours + " WHERE (" + p.sql() + ") IS NULL");
                return all == parts ? null : "count(*) = " + all + " but p, NOT p and p IS NULL count " + parts;
            });
        }

        /** Non-optimizing reference engine construction: the pushed filter against the same predicate evaluated per row. */
        void norec(Node predicate) {
            verify("NoREC", predicate, p -> {
                long pushed = count("SELECT count(*) FROM " + ours + " WHERE " + p.sql());
                long evaluated = count("SELECT count(CASE WHEN " + p.sql() + " THEN 1 END) FROM " + ours);
                return pushed == evaluated ? null : "WHERE counts " + pushed + ", the projected predicate " + evaluated;
            });
        }

        private long count(String sql) {
            String only = engine.rows(sql).get(0);
            return Long.parseLong(only.replaceAll("[^0-9-]", ""));
        }

        /** Fails with the seed and the smallest part of {@code predicate} that still fails. */
        private void verify(String what, Node predicate, Function<Node, String> failure) {
            String found = failure.apply(predicate);
            if (found == null) {
                return;
            }
            Node shrunk = predicate;
            String shrunkFailure = found;
            boolean smaller = true;
            while (smaller && shrunk != null) {
                smaller = false;
                for (Node candidate : shrunk.shrinks()) {
                    String f = failure.apply(candidate);
                    if (f != null) {
                        shrunk = candidate;
                        shrunkFailure = f;
                        smaller = true;
                        break;
                    }
                }
            }
            throw new AssertionError("seed " + seed + ": " + what + " differs"
                    + (predicate == null ? "" : " for WHERE " + predicate.sql() + ", shrunk to WHERE " + shrunk.sql())
                    + ": " + shrunkFailure + (deleted.isEmpty() ? "" : " (after deleting " + deleted.stream().map(Node::sql).toList() + ")")
                    + " (rerun with -Dhyperstream.fuzz.seed=" + seed + ")");
        }
    }

    private static List<String> sorted(List<String> rows) {
        List<String> copy = new ArrayList<>(rows);
        Collections.sort(copy);
        return copy;
    }

    /** What {@code a} holds more often than {@code b}, with counts. */
    private static String difference(List<String> a, List<String> b) {
        Map<String, Integer> counts = new TreeMap<>();
        a.forEach(r -> counts.merge(r, 1, Integer::sum));
        b.forEach(r -> counts.merge(r, -1, Integer::sum));
        Map<String, Integer> more = new HashMap<>();
        counts.forEach((r, n) -> {
            if (n > 0) {
                more.put(r, n);
            }
        });
        return more.isEmpty() ? "(" + a.size() + " rows) hold nothing more" : "(" + a.size() + " rows) also hold " + new TreeMap<>(more);
    }

    // ---- rows

    private String row(int id) {
        List<String> values = new ArrayList<>();
        for (Column column : COLUMNS) {
            values.add(column.kind() == Kind.ID ? Integer.toString(id) : random.nextInt(8) == 0 ? "NULL" : value(column.kind()));
        }
        return "(" + String.join(", ", values) + ")";
    }

    private String pick(String[] values) {
        // Half the time a few common values, so that predicates match some rows and files repeat them.
        return values[random.nextInt(random.nextBoolean() ? Math.min(4, values.length) : values.length)];
    }

    /** A non-null literal of {@code kind}. */
    private String value(Kind kind) {
        return switch (kind) {
            case ID -> Integer.toString(random.nextInt(300));
            case INT -> random.nextBoolean() ? pick(INTS) : Integer.toString(random.nextInt(41) - 20);
            case BIGINT -> "CAST('" + (random.nextBoolean() ? pick(BIGINTS) : Long.toString(random.nextInt(2001) - 1000)) + "' AS BIGINT)";
            case DOUBLE -> "CAST('" + (random.nextInt(3) > 0 ? pick(DOUBLES) : (random.nextInt(81) - 40) / 4.0) + "' AS DOUBLE)";
            case FLOAT -> "CAST('" + (random.nextInt(3) > 0 ? pick(FLOATS) : (random.nextInt(81) - 40) / 4.0) + "' AS "
                    + (dialect == Dialect.SPARK ? "FLOAT" : "REAL") + ")";
            case STRING -> "'" + pick(STRINGS).replace("'", "''") + "'";
            case BOOLEAN -> random.nextBoolean() ? "true" : "false";
            case DATE -> "DATE '" + pick(DATES) + "'";
            case TIMESTAMP -> (dialect == Dialect.SPARK ? "TIMESTAMP_NTZ '" : "TIMESTAMP '") + pick(TIMESTAMPS) + "'";
            case DECIMAL -> "CAST('" + pick(DECIMALS) + "' AS DECIMAL(38,6))";
            case ARRAY -> array();
            case STRUCT -> struct();
        };
    }

    private String array() {
        int n = random.nextInt(4);
        List<String> elements = new ArrayList<>();
        for (int k = 0; k < n; k++) {
            elements.add(random.nextInt(6) == 0 ? (dialect == Dialect.SPARK ? "CAST(NULL AS INT)" : "NULL") : value(Kind.INT));
        }
        if (dialect == Dialect.SPARK) {
            return n == 0 ? "CAST(array() AS ARRAY<INT>)" : "array(" + String.join(", ", elements) + ")";
        }
        return "CAST(ARRAY[" + String.join(", ", elements) + "] AS array(integer))";
    }

    private String struct() {
        String a = random.nextInt(5) == 0 ? "CAST(NULL AS INT)" : value(Kind.INT);
        String c = random.nextInt(5) == 0 ? "CAST(NULL AS " + (dialect == Dialect.SPARK ? "STRING" : "varchar") + ")" : value(Kind.STRING);
        return dialect == Dialect.SPARK ? "named_struct('a', " + a + ", 'c', " + c + ")"
                : "CAST(ROW(" + a + ", " + c + ") AS row(a integer, c varchar))";
    }

    // ---- predicates

    /** A predicate tree: its SQL text and the parts a shrink may put in its place. */
    private record Node(String sql, List<Node> children, Function<List<Node>, Node> rebuild) {
        static Node leaf(String sql) {
            return new Node(sql, List.of(), c -> null);
        }

        /** Smaller predicates: each child in this one's place, and this one with a child shrunk. */
        List<Node> shrinks() {
            List<Node> out = new ArrayList<>(children);
            for (int k = 0; k < children.size(); k++) {
                for (Node smaller : children.get(k).shrinks()) {
                    List<Node> replaced = new ArrayList<>(children);
                    replaced.set(k, smaller);
                    out.add(rebuild.apply(replaced));
                }
            }
            return out;
        }
    }

    private static Node and(Node a, Node b) {
        return new Node("(" + a.sql() + " AND " + b.sql() + ")", List.of(a, b), c -> and(c.get(0), c.get(1)));
    }

    private static Node or(Node a, Node b) {
        return new Node("(" + a.sql() + " OR " + b.sql() + ")", List.of(a, b), c -> or(c.get(0), c.get(1)));
    }

    private static Node not(Node a) {
        return new Node("(NOT " + a.sql() + ")", List.of(a), c -> not(c.get(0)));
    }

    private Node predicate(int depth) {
        if (depth > 0 && random.nextInt(3) == 0) {
            return switch (random.nextInt(3)) {
                case 0 -> and(predicate(depth - 1), predicate(depth - 1));
                case 1 -> or(predicate(depth - 1), predicate(depth - 1));
                default -> not(predicate(depth - 1));
            };
        }
        return Node.leaf(atom());
    }

    private static final String[] OPERATORS = {"=", "<>", "<", "<=", ">", ">="};

    private String atom() {
        Column column = COLUMNS.get(random.nextInt(COLUMNS.size()));
        String c = column.name();
        Kind kind = column.kind();
        if (kind == Kind.ARRAY) {
            return switch (random.nextInt(3)) {
                case 0 -> (dialect == Dialect.SPARK ? "size(arr)" : "cardinality(arr)") + " " + op() + " " + random.nextInt(4);
                case 1 -> (dialect == Dialect.SPARK ? "array_contains(arr, " : "contains(arr, ") + value(Kind.INT) + ")";
                default -> "arr IS " + (random.nextBoolean() ? "" : "NOT ") + "NULL";
            };
        }
        if (kind == Kind.STRUCT) {
            return switch (random.nextInt(3)) {
                case 0 -> "st.a " + op() + " " + value(Kind.INT);
                case 1 -> "st.c " + op() + " " + value(Kind.STRING);
                default -> "st" + (random.nextBoolean() ? ".c" : "") + " IS " + (random.nextBoolean() ? "" : "NOT ") + "NULL";
            };
        }
        if (kind == Kind.BOOLEAN && random.nextInt(3) == 0) {
            return random.nextBoolean() ? "b" : "b = " + value(Kind.BOOLEAN);
        }
        int shape = random.nextInt(kind == Kind.STRING ? 9 : 8);
        return switch (shape) {
            case 0 -> c + " IS " + (random.nextBoolean() ? "" : "NOT ") + "NULL";
            case 1 -> {
                List<String> values = new ArrayList<>();
                for (int k = 1 + random.nextInt(3); k > 0; k--) {
                    values.add(value(kind));
                }
                yield c + (random.nextInt(3) == 0 ? " NOT IN (" : " IN (") + String.join(", ", values) + ")";
            }
            case 2 -> c + (random.nextInt(3) == 0 ? " NOT BETWEEN " : " BETWEEN ") + value(kind) + " AND " + value(kind);
            case 3 -> value(kind) + " " + op() + " " + c;
            case 8 -> "s " + (random.nextInt(4) == 0 ? "NOT LIKE '" : "LIKE '") + pick(new String[] {"a%", "%b%", "a_", "", "%", "日%", "_"})
                    + "'";
            default -> c + " " + op() + " " + value(kind);
        };
    }

    private String op() {
        return OPERATORS[random.nextInt(OPERATORS.length)];
    }

    private String projection() {
        List<String> names = new ArrayList<>(columnNames());
        Collections.shuffle(names, random);
        return String.join(", ", names.subList(0, 1 + random.nextInt(names.size())));
    }
}
