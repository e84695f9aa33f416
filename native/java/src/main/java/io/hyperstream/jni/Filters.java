package io.hyperstream.jni;

import java.util.List;
import java.util.StringJoiner;

/**
 * Builds filters in the native predicate model's JSON form, the one thing engine translations
 * produce: {@code Filters.and(Filters.eq("category", 3), Filters.notNull("name"))}. Values are
 * numbers, booleans, strings (dates and timestamps in ISO form) or null; the native side casts them
 * to the column's type and names the column when a value does not fit.
 */
public final class Filters {
    private Filters() {}

    public static String alwaysTrue() {
        return "{\"op\":\"true\"}";
    }

    public static String alwaysFalse() {
        return "{\"op\":\"false\"}";
    }

    public static String and(List<String> filters) {
        return combine("and", filters);
    }

    public static String and(String... filters) {
        return and(List.of(filters));
    }

    public static String or(List<String> filters) {
        return combine("or", filters);
    }

    public static String or(String... filters) {
        return or(List.of(filters));
    }

    public static String not(String filter) {
        return "{\"op\":\"not\",\"arg\":" + filter + "}";
    }

    /** {@code column <op> value}, where {@code op} is one of SQL's {@code = <> < <= > >=}. */
    public static String comparison(String op, String column, Object value) {
        return switch (op) {
            case "=" -> eq(column, value);
            case "<>" -> ne(column, value);
            case "<" -> lt(column, value);
            case "<=" -> le(column, value);
            case ">" -> gt(column, value);
            case ">=" -> ge(column, value);
            default -> throw new IllegalArgumentException("not a comparison: " + op);
        };
    }

    /** The comparison with its sides swapped: {@code 5 < id} is {@code id > 5}. */
    public static String swapped(String op) {
        return switch (op) {
            case "<" -> ">";
            case "<=" -> ">=";
            case ">" -> "<";
            case ">=" -> "<=";
            default -> op;
        };
    }

    public static String eq(String column, Object value) {
        return compare("eq", column, value);
    }

    public static String ne(String column, Object value) {
        return compare("ne", column, value);
    }

    public static String lt(String column, Object value) {
        return compare("lt", column, value);
    }

    public static String le(String column, Object value) {
        return compare("le", column, value);
    }

    public static String gt(String column, Object value) {
        return compare("gt", column, value);
    }

    public static String ge(String column, Object value) {
        return compare("ge", column, value);
    }

    public static String in(String column, List<?> values) {
        StringJoiner joined = new StringJoiner(",", "[", "]");
        values.forEach(v -> joined.add(literal(v)));
        return "{\"op\":\"in\",\"column\":" + quote(column) + ",\"values\":" + joined + "}";
    }

    public static String isNull(String column) {
        return "{\"op\":\"is_null\",\"column\":" + quote(column) + "}";
    }

    public static String notNull(String column) {
        return "{\"op\":\"not_null\",\"column\":" + quote(column) + "}";
    }

    public static String startsWith(String column, String prefix) {
        return "{\"op\":\"starts_with\",\"column\":" + quote(column) + ",\"prefix\":" + quote(prefix) + "}";
    }

    private static String compare(String op, String column, Object value) {
        return "{\"op\":\"" + op + "\",\"column\":" + quote(column) + ",\"value\":" + literal(value) + "}";
    }

    /** {@code filters} joined by {@code op}; one filter is itself. */
    private static String combine(String op, List<String> filters) {
        if (filters.size() == 1) {
            return filters.get(0);
        }
        StringJoiner joined = new StringJoiner(",", "{\"op\":\"" + op + "\",\"args\":[", "]}");
        filters.forEach(joined::add);
        return joined.toString();
    }

    /** A value as a JSON literal. */
    static String literal(Object value) {
        if (value == null) {
            return "null";
        }
        if (value instanceof Double d && (d.isNaN() || d.isInfinite())
                || value instanceof Float f && (f.isNaN() || f.isInfinite())) {
            throw new IllegalArgumentException("filter value " + value + " has no JSON form");
        }
        if (value instanceof Number || value instanceof Boolean) {
            return value.toString();
        }
        return quote(value.toString());
    }

    /** A string as a JSON string. */
    static String quote(String s) {
        StringBuilder out = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
        return out.append('"').toString();
    }
}
