package io.hyperstream.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * pgvector's distance operators in Spark SQL text, written as calls of the HyperStream catalog's
 * functions before Spark's own parser reads the text ({@link HyperStreamSparkExtensions}):
 * {@code a <-> b} is {@code l2_distance(a, b)}, {@code <=>} {@code cosine_distance}, {@code <#>}
 * {@code negative_inner_product}, {@code <+>} {@code l1_distance}, {@code <~>} {@code
 * hamming_distance} and {@code <%>} {@code jaccard_distance}. Being the catalog's functions, the calls
 * push down as any other ({@code ORDER BY embedding <=> array(...) LIMIT 10} is a native top-k).
 *
 * <p>An operand is a primary: a column (qualified or not), a literal, a function call, an array
 * constructor or a parenthesised expression; parenthesise anything else ({@code a <-> (b + c)}). The
 * operators apply left to right. pgvector's text forms are taken as operands too: a vector {@code
 * '[1, 2, 3]'} becomes {@code array(1, 2, 3)}; a sparse vector {@code '{1:0.5,3:2}/5'} (positions
 * from 1, then the dimension) becomes the struct of a sparse vector column, {@code
 * named_struct('indices', array(0, 2), 'values', array(0.5, 2))} (positions from 0); a bit string
 * {@code B'0101'} becomes the bytes of a binary column, first bit the high bit of the first byte and
 * the last byte padded with zero bits ({@code X'50'}). Since {@code <=>} is also Spark's null-safe
 * equality, it means cosine distance only where one operand is a vector constant ({@code array(...)},
 * {@code ARRAY[...]}, {@code '[...]'} or {@code '{...}/n'}); elsewhere it keeps Spark's meaning. Text
 * in quotes, backquotes and comments is left as it is.
 */
final class PgVectorOperators {
    private PgVectorOperators() {}

    /** Operator → function. */
    static final Map<String, String> FUNCTIONS = Map.of(
            "<->", "l2_distance",
            "<=>", "cosine_distance",
            "<#>", "negative_inner_product",
            "<+>", "l1_distance",
            "<~>", "hamming_distance",
            "<%>", "jaccard_distance");

    private static final Pattern ANY_OPERATOR = Pattern.compile("<[-=#+~%]>");
    private static final Pattern VECTOR_TEXT = Pattern.compile("'\\s*\\[([^\\]']*)\\]\\s*'");
    private static final Pattern SPARSE_TEXT = Pattern.compile("'\\s*\\{([^}']*)\\}\\s*/\\s*(\\d+)\\s*'");
    private static final Pattern BITS_TEXT = Pattern.compile("[bB]'([01]*)'");
    private static final Set<String> KEYWORDS = Set.of("SELECT", "FROM", "WHERE", "BY", "AND", "OR", "NOT", "ON", "WHEN",
            "THEN", "ELSE", "CASE", "END", "HAVING", "AS", "IN", "IS", "LIKE", "BETWEEN", "DISTINCT", "ALL", "LIMIT", "UNION",
            "JOIN", "SET", "VALUES", "ASC", "DESC", "RETURN");
    private static final Pattern SIMPLE_NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private enum Kind { WORD, QUOTED, STRING, DOT, OPEN, CLOSE, OPERATOR, OTHER }

    private record Token(Kind kind, int start, int end, String text) {}

    /** Whether {@code sql} may hold an operator (a quick look before the rewrite). */
    static boolean mayHold(String sql) {
        return ANY_OPERATOR.matcher(sql).find();
    }

    /**
     * {@code sql} with every operator written as a call of {@code catalog}'s function; the same text
     * when it has none. An operator without operands it can tell is left for Spark's parser to refuse.
     */
    static String rewrite(String sql, String catalog) {
        if (sql == null || !mayHold(sql)) {
            return sql;
        }
        String prefix = (SIMPLE_NAME.matcher(catalog).matches() ? catalog : "`" + catalog.replace("`", "``") + "`") + ".";
        // Each rewrite removes one operator, so this ends.
        while (true) {
            List<Token> tokens = tokenize(sql);
            String next = null;
            for (int i = 0; i < tokens.size() && next == null; i++) {
                if (tokens.get(i).kind() == Kind.OPERATOR) {
                    next = rewriteAt(sql, tokens, i, prefix);
                }
            }
            if (next == null) {
                return sql;
            }
            sql = next;
        }
    }

    /** The text with the operator at token {@code op} written as a call, or null to leave it. */
    private static String rewriteAt(String sql, List<Token> tokens, int op, String prefix) {
        int left = op > 0 ? operandStart(tokens, op - 1) : -1;
        int right = op + 1 < tokens.size() ? operandEnd(tokens, op + 1) : -1;
        if (left < 0 || right < 0 || isKeyword(tokens, left, op - 1) || isKeyword(tokens, op + 1, right)) {
            return null;
        }
        String operator = tokens.get(op).text();
        if (operator.equals("<=>") && !isVectorConstant(tokens, left, op - 1) && !isVectorConstant(tokens, op + 1, right)) {
            return null;
        }
        String a = operand(sql, tokens, left, op - 1);
        String b = operand(sql, tokens, op + 1, right);
        return sql.substring(0, tokens.get(left).start()) + prefix + FUNCTIONS.get(operator) + "(" + a + ", " + b + ")"
                + sql.substring(tokens.get(right).end());
    }

    /** An operand's text, pgvector's text forms written as Spark values (see the class comment). */
    private static String operand(String sql, List<Token> tokens, int from, int to) {
        String text = sql.substring(tokens.get(from).start(), tokens.get(to).end());
        var vector = VECTOR_TEXT.matcher(text);
        if (from == to && vector.matches()) {
            return "array(" + vector.group(1) + ")";
        }
        var sparse = SPARSE_TEXT.matcher(text);
        if (from == to && sparse.matches()) {
            return sparseStruct(sparse.group(1), sparse.group(2));
        }
        var bits = BITS_TEXT.matcher(text);
        return to == from + 1 && bits.matches() ? bytes(bits.group(1)) : text;
    }

    /** pgvector's sparse vector text ({@code 1:0.5,3:2} of dimension {@code dimension}) as a Spark struct. */
    private static String sparseStruct(String entries, String dimension) {
        long size = Long.parseLong(dimension);
        StringBuilder indices = new StringBuilder();
        StringBuilder values = new StringBuilder();
        for (String entry : entries.isBlank() ? new String[0] : entries.split(",")) {
            String[] pair = entry.split(":");
            long position;
            try {
                position = pair.length == 2 ? Long.parseLong(pair[0].trim()) : -1;
            } catch (NumberFormatException e) {
                position = -1;
            }
            if (position < 1 || position > size) {
                throw new IllegalArgumentException("sparse vector '{" + entries + "}/" + dimension + "': entry '" + entry.trim()
                        + "' is not position:value with a position from 1 to " + size);
            }
            indices.append(indices.length() == 0 ? "" : ", ").append(position - 1);
            values.append(values.length() == 0 ? "" : ", ").append(pair[1].trim());
        }
        return indices.length() == 0
                ? "named_struct('indices', cast(array() AS array<int>), 'values', cast(array() AS array<float>))"
                : "named_struct('indices', array(" + indices + "), 'values', array(" + values + "))";
    }

    /** A bit string ({@code 0101}) as a binary literal: first bit the high bit of the first byte. */
    private static String bytes(String bits) {
        StringBuilder hex = new StringBuilder("X'");
        for (int at = 0; at < bits.length(); at += 8) {
            String chunk = (bits.substring(at, Math.min(at + 8, bits.length())) + "0000000").substring(0, 8);
            hex.append(String.format("%02X", Integer.parseInt(chunk, 2)));
        }
        return hex.append("'").toString();
    }

    /** Whether an operand is a lone clause keyword ({@code SELECT <-> x} has no left operand). */
    private static boolean isKeyword(List<Token> tokens, int from, int to) {
        return from == to && tokens.get(from).kind() == Kind.WORD && KEYWORDS.contains(tokens.get(from).text().toUpperCase(Locale.ROOT));
    }

    private static boolean isVectorConstant(List<Token> tokens, int from, int to) {
        Token first = tokens.get(from);
        if (from == to) {
            return first.kind() == Kind.STRING
                    && (VECTOR_TEXT.matcher(first.text()).matches() || SPARSE_TEXT.matcher(first.text()).matches());
        }
        return first.kind() == Kind.WORD && first.text().equalsIgnoreCase("array") && tokens.get(from + 1).kind() == Kind.OPEN
                && matching(tokens, from + 1) == to;
    }

    /** The first token of the primary that ends at token {@code end}, or -1. */
    private static int operandStart(List<Token> tokens, int end) {
        int i = end;
        if (tokens.get(i).kind() == Kind.CLOSE) {
            i = matching(tokens, i);
        } else if (!isAtom(tokens.get(i))) {
            return -1;
        }
        while (i > 0) {
            Token here = tokens.get(i);
            Token before = tokens.get(i - 1);
            if (isAtom(here) && before.kind() == Kind.DOT && adjacent(before, here) && i > 1
                    && (isName(tokens.get(i - 2)) || tokens.get(i - 2).kind() == Kind.CLOSE) && adjacent(tokens.get(i - 2), before)) {
                i -= 2;
                if (tokens.get(i).kind() == Kind.CLOSE) {
                    i = matching(tokens, i);
                }
            } else if ((here.kind() == Kind.OPEN || here.kind() == Kind.STRING) && callsOrQualifies(before, here)) {
                i -= 1;
                if (tokens.get(i).kind() == Kind.CLOSE) {
                    i = matching(tokens, i);
                }
            } else {
                break;
            }
            if (i < 0) {
                return -1;
            }
        }
        return i;
    }

    /** The last token of the primary that starts at token {@code start}, or -1. */
    private static int operandEnd(List<Token> tokens, int start) {
        int i = start;
        if (tokens.get(i).kind() == Kind.OPEN) {
            i = matching(tokens, i);
        } else if (!isAtom(tokens.get(i))) {
            return -1;
        }
        while (i >= 0 && i + 1 < tokens.size()) {
            Token here = tokens.get(i);
            Token after = tokens.get(i + 1);
            if (after.kind() == Kind.DOT && adjacent(here, after) && (isName(here) || here.kind() == Kind.CLOSE)
                    && i + 2 < tokens.size() && isAtom(tokens.get(i + 2)) && adjacent(after, tokens.get(i + 2))) {
                i += 2;
            } else if ((after.kind() == Kind.OPEN || after.kind() == Kind.STRING) && callsOrQualifies(here, after)) {
                i = after.kind() == Kind.OPEN ? matching(tokens, i + 1) : i + 1;
            } else {
                break;
            }
        }
        return i;
    }

    /**
     * Whether {@code before} and the bracket or string {@code here} form one primary: a call or
     * subscript ({@code f(x)}, {@code v[0]}, {@code ARRAY[1]}, {@code array (1)}) or a typed literal
     * ({@code X'0F'}).
     */
    private static boolean callsOrQualifies(Token before, Token here) {
        if (here.kind() == Kind.STRING) {
            return before.kind() == Kind.WORD && adjacent(before, here);
        }
        boolean arrayWord = before.kind() == Kind.WORD && before.text().equalsIgnoreCase("array");
        return (isName(before) || before.kind() == Kind.CLOSE) && (adjacent(before, here) || arrayWord);
    }

    private static boolean isAtom(Token t) {
        return t.kind() == Kind.WORD || t.kind() == Kind.QUOTED || t.kind() == Kind.STRING;
    }

    private static boolean isName(Token t) {
        return t.kind() == Kind.WORD || t.kind() == Kind.QUOTED;
    }

    private static boolean adjacent(Token a, Token b) {
        return a.end() == b.start();
    }

    /** The index of the bracket matching the one at {@code at} (either way), or -1. */
    private static int matching(List<Token> tokens, int at) {
        int step = tokens.get(at).kind() == Kind.OPEN ? 1 : -1;
        int depth = 0;
        for (int i = at; i >= 0 && i < tokens.size(); i += step) {
            Kind kind = tokens.get(i).kind();
            if (kind == Kind.OPEN || kind == Kind.CLOSE) {
                depth += kind == (step == 1 ? Kind.OPEN : Kind.CLOSE) ? 1 : -1;
                if (depth == 0) {
                    return i;
                }
            }
        }
        return -1;
    }

    /** Spark SQL's tokens as far as operands need them; comments and blanks are dropped. */
    private static List<Token> tokenize(String sql) {
        List<Token> tokens = new ArrayList<>();
        int i = 0;
        int n = sql.length();
        while (i < n) {
            char c = sql.charAt(i);
            int start = i;
            Kind kind;
            if (Character.isWhitespace(c)) {
                i++;
                continue;
            } else if (c == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
                while (i < n && sql.charAt(i) != '\n') {
                    i++;
                }
                continue;
            } else if (c == '/' && i + 1 < n && sql.charAt(i + 1) == '*') {
                int close = sql.indexOf("*/", i + 2);
                i = close < 0 ? n : close + 2;
                continue;
            } else if (c == '\'' || c == '"') {
                i = closingQuote(sql, i, c);
                kind = Kind.STRING;
            } else if (c == '`') {
                i = closingQuote(sql, i, c);
                kind = Kind.QUOTED;
            } else if (Character.isLetterOrDigit(c) || c == '_' || c == '$') {
                while (i < n && (Character.isLetterOrDigit(sql.charAt(i)) || sql.charAt(i) == '_' || sql.charAt(i) == '$')) {
                    i++;
                }
                kind = Kind.WORD;
            } else if (c == '.') {
                i++;
                kind = Kind.DOT;
            } else if (c == '(' || c == '[') {
                i++;
                kind = Kind.OPEN;
            } else if (c == ')' || c == ']') {
                i++;
                kind = Kind.CLOSE;
            } else if (c == '<' && i + 2 < n && FUNCTIONS.containsKey(sql.substring(i, i + 3))) {
                i += 3;
                kind = Kind.OPERATOR;
            } else {
                i++;
                kind = Kind.OTHER;
            }
            tokens.add(new Token(kind, start, i, sql.substring(start, i)));
        }
        return tokens;
    }

    /** The index after the quote that closes the one at {@code open} (doubled quotes and backslashes escape). */
    private static int closingQuote(String sql, int open, char quote) {
        int i = open + 1;
        while (i < sql.length()) {
            char c = sql.charAt(i);
            if (c == '\\' && quote != '`') {
                i += 2;
            } else if (c == quote) {
                if (i + 1 < sql.length() && sql.charAt(i + 1) == quote) {
                    i += 2;
                } else {
                    return i + 1;
                }
            } else {
                i++;
            }
        }
        return sql.length();
    }
}
