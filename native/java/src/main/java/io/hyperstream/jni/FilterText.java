package io.hyperstream.jni;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A filter written as SQL's WHERE clause writes one, turned into the native predicate JSON
 * ({@link Filters}): for places where a user gives a filter as text, not through an engine's
 * planner (a Trino table function's argument). It takes columns compared with literals ({@code =
 * <> != < <= > >=}), {@code [NOT] IN (...)}, {@code [NOT] BETWEEN ... AND ...}, {@code IS [NOT]
 * NULL}, {@code LIKE 'prefix%'}, joined by {@code AND}, {@code OR}, {@code NOT} and parentheses.
 * Literals are numbers, {@code 'strings'} (a quote doubled inside), {@code TRUE}, {@code FALSE};
 * column names are plain or {@code "quoted"}. Anything else is refused with its position.
 */
public final class FilterText {
    private final String text;
    private int at;

    private FilterText(String text) {
        this.text = text;
    }

    /** The native filter JSON of {@code text}; an {@link InvalidArgumentException} names what is wrong and where. */
    public static String parse(String text) {
        FilterText parser = new FilterText(text == null ? "" : text);
        String filter = parser.or();
        parser.skipSpace();
        if (parser.at < parser.text.length()) {
            throw parser.error("unexpected '" + parser.text.substring(parser.at) + "'");
        }
        return filter;
    }

    private String or() {
        List<String> args = new ArrayList<>(List.of(and()));
        while (keyword("OR")) {
            args.add(and());
        }
        return Filters.or(args);
    }

    private String and() {
        List<String> args = new ArrayList<>(List.of(unary()));
        while (keyword("AND")) {
            args.add(unary());
        }
        return Filters.and(args);
    }

    private String unary() {
        if (keyword("NOT")) {
            return Filters.not(unary());
        }
        if (symbol("(")) {
            String inner = or();
            expect(")");
            return inner;
        }
        return predicate();
    }

    private String predicate() {
        String column = identifier();
        if (keyword("IS")) {
            boolean not = keyword("NOT");
            if (!keyword("NULL")) {
                throw error("expected NULL after IS");
            }
            return not ? Filters.notNull(column) : Filters.isNull(column);
        }
        boolean not = keyword("NOT");
        if (keyword("IN")) {
            expect("(");
            List<Object> values = new ArrayList<>(List.of(literal()));
            while (symbol(",")) {
                values.add(literal());
            }
            expect(")");
            String in = Filters.in(column, values);
            return not ? Filters.not(in) : in;
        }
        if (keyword("BETWEEN")) {
            Object low = literal();
            if (!keyword("AND")) {
                throw error("expected AND in BETWEEN");
            }
            String between = Filters.and(Filters.ge(column, low), Filters.le(column, literal()));
            return not ? Filters.not(between) : between;
        }
        if (keyword("LIKE")) {
            skipSpace();
            int start = at;
            if (!(literal() instanceof String pattern) || !pattern.endsWith("%")
                    || pattern.substring(0, pattern.length() - 1).matches(".*[%_].*")) {
                at = start;
                throw error("LIKE takes a 'prefix%' pattern only");
            }
            String like = Filters.startsWith(column, pattern.substring(0, pattern.length() - 1));
            return not ? Filters.not(like) : like;
        }
        if (not) {
            throw error("expected IN, BETWEEN or LIKE after NOT");
        }
        for (String op : List.of("<=", ">=", "<>", "!=", "=", "<", ">")) {
            if (symbol(op)) {
                return Filters.comparison(op.equals("!=") ? "<>" : op, column, literal());
            }
        }
        throw error("expected a comparison, IN, BETWEEN, LIKE or IS after column " + column);
    }

    private String identifier() {
        skipSpace();
        if (symbol("\"")) {
            int end = text.indexOf('"', at);
            if (end < 0) {
                throw error("unterminated quoted name");
            }
            String name = text.substring(at, end);
            at = end + 1;
            return name;
        }
        int start = at;
        while (at < text.length() && (Character.isLetterOrDigit(text.charAt(at)) || text.charAt(at) == '_')) {
            at++;
        }
        if (start == at || Character.isDigit(text.charAt(start))) {
            at = start;
            throw error("expected a column name");
        }
        return text.substring(start, at);
    }

    private Object literal() {
        skipSpace();
        if (symbol("'")) {
            StringBuilder value = new StringBuilder();
            while (true) {
                if (at >= text.length()) {
                    throw error("unterminated string");
                }
                char c = text.charAt(at++);
                if (c == '\'') {
                    if (at < text.length() && text.charAt(at) == '\'') {
                        at++;
                    } else {
                        return value.toString();
                    }
                }
                value.append(c);
            }
        }
        if (keyword("TRUE")) {
            return true;
        }
        if (keyword("FALSE")) {
            return false;
        }
        int start = at;
        if (at < text.length() && (text.charAt(at) == '-' || text.charAt(at) == '+')) {
            at++;
        }
        while (at < text.length() && (Character.isDigit(text.charAt(at)) || ".eE".indexOf(text.charAt(at)) >= 0
                || (text.charAt(at) == '-' || text.charAt(at) == '+') && "eE".indexOf(text.charAt(at - 1)) >= 0)) {
            at++;
        }
        String number = text.substring(start, at);
        try {
            BigDecimal value = new BigDecimal(number);
            if (value.scale() <= 0 && number.matches("[-+]?\\d+")) {
                return value.longValueExact();
            }
            return value.doubleValue();
        } catch (NumberFormatException | ArithmeticException e) {
            at = start;
            throw error("expected a number, a 'string', TRUE or FALSE");
        }
    }

    private void expect(String s) {
        if (!symbol(s)) {
            throw error("expected '" + s + "'");
        }
    }

    private boolean symbol(String s) {
        skipSpace();
        if (text.startsWith(s, at)) {
            at += s.length();
            return true;
        }
        return false;
    }

    private boolean keyword(String word) {
        skipSpace();
        int end = at + word.length();
        if (end <= text.length() && text.substring(at, end).toUpperCase(Locale.ROOT).equals(word)
                && (end == text.length() || !(Character.isLetterOrDigit(text.charAt(end)) || text.charAt(end) == '_'))) {
            at = end;
            return true;
        }
        return false;
    }

    private void skipSpace() {
        while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
            at++;
        }
    }

    private InvalidArgumentException error(String what) {
        return new InvalidArgumentException("filter '" + text + "' at position " + (at + 1) + ": " + what);
    }
}
