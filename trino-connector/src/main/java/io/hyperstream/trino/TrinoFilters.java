package io.hyperstream.trino;

import io.airlift.slice.Slice;
import io.hyperstream.jni.Filters;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.expression.Call;
import io.trino.spi.expression.ConnectorExpression;
import io.trino.spi.expression.Constant;
import io.trino.spi.expression.StandardFunctions;
import io.trino.spi.expression.Variable;
import io.trino.spi.predicate.Domain;
import io.trino.spi.predicate.Range;
import io.trino.spi.predicate.SortedRangeSet;
import io.trino.spi.predicate.TupleDomain;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.BooleanType;
import io.trino.spi.type.DateType;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.DoubleType;
import io.trino.spi.type.IntegerType;
import io.trino.spi.type.RealType;
import io.trino.spi.type.TimestampType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarcharType;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Trino's {@link TupleDomain} as the native predicate model: the one place this translation lives. */
final class TrinoFilters {
    private TrinoFilters() {}

    /** Whether a domain over {@code column} translates exactly (and so is enforced natively). */
    static boolean supports(HyperStreamColumnHandle column, Domain domain) {
        if (column.ordinal() < 0 || !isSupportedType(column.type())
                || !(domain.isAll() || domain.isNone() || domain.isOnlyNull() || domain.getValues() instanceof SortedRangeSet)) {
            return false;
        }
        try {
            toFilter(column, domain);
            return true;
        } catch (IllegalArgumentException e) {
            return false; // a value without a literal form (NaN, infinity): Trino keeps the filter
        }
    }

    /**
     * Whether a column compares as floats: natively -0.0 equals 0.0 as in Trino, but NaN orders
     * above every number (Spark's rule) where Trino follows IEEE. Its domains and comparisons are
     * pushed for pruning and checked again by Trino, except comparisons under a NOT (which would turn
     * the scan's superset into a subset): those stay with Trino.
     */
    static boolean isFloat(Type type) {
        return type instanceof DoubleType || type instanceof RealType;
    }

    private static boolean isSupportedType(Type type) {
        return type instanceof BigintType || type instanceof IntegerType || type instanceof DoubleType
                || type instanceof RealType || type instanceof VarcharType || type instanceof BooleanType
                || type instanceof DateType || type instanceof DecimalType
                || (type instanceof TimestampType timestamp && timestamp.isShort());
    }

    /** The filter for {@code constraint}, or null when it passes every row. */
    static String toFilter(TupleDomain<HyperStreamColumnHandle> constraint) {
        if (constraint.isNone()) {
            return Filters.alwaysFalse();
        }
        if (constraint.isAll()) {
            return null;
        }
        List<String> conjuncts = new ArrayList<>();
        for (Map.Entry<HyperStreamColumnHandle, Domain> entry : constraint.getDomains().orElseThrow().entrySet()) {
            conjuncts.add(toFilter(entry.getKey(), entry.getValue()));
        }
        return conjuncts.isEmpty() ? null : Filters.and(conjuncts);
    }

    /**
     * Whether a join's dynamic filter may narrow a stored scan: not under a pushed top-k or limit,
     * which choose their rows among all the rows the pushed filter passes.
     */
    static boolean takesDynamicFilter(HyperStreamTableHandle handle) {
        return handle.isStored() && handle.topK() <= 0 && handle.limit() <= 0 && !handle.countStar();
    }

    /**
     * {@code pushed} (the handle's filter, or null) narrowed by a dynamic filter's predicate: the
     * domains of its columns that translate exactly join as conjuncts, the others are left to the
     * join (a dynamic filter only ever narrows, so dropping one of its domains is safe).
     */
    static String withDynamicFilter(String pushed, TupleDomain<ColumnHandle> dynamic) {
        if (dynamic.isAll()) {
            return pushed;
        }
        if (dynamic.isNone()) {
            return Filters.alwaysFalse(); // the build side is empty: no row can join
        }
        List<String> conjuncts = new ArrayList<>();
        if (pushed != null) {
            conjuncts.add(pushed);
        }
        for (Map.Entry<ColumnHandle, Domain> entry : dynamic.getDomains().orElseThrow().entrySet()) {
            if (entry.getKey() instanceof HyperStreamColumnHandle column && supports(column, entry.getValue())) {
                conjuncts.add(toFilter(column, entry.getValue()));
            }
        }
        return conjuncts.isEmpty() ? null : conjuncts.size() == 1 ? conjuncts.get(0) : Filters.and(conjuncts);
    }

    private static String toFilter(HyperStreamColumnHandle column, Domain domain) {
        String name = column.name();
        if (domain.isNone()) {
            return Filters.alwaysFalse();
        }
        if (domain.isAll()) {
            return Filters.alwaysTrue();
        }
        if (domain.isOnlyNull()) {
            return Filters.isNull(name);
        }
        List<String> disjuncts = new ArrayList<>();
        List<Object> points = new ArrayList<>();
        if (domain.getValues().isAll()) {
            disjuncts.add(Filters.notNull(name));
        } else {
            for (Range range : domain.getValues().getRanges().getOrderedRanges()) {
                if (range.isSingleValue()) {
                    points.add(value(column.type(), range.getSingleValue()));
                    continue;
                }
                List<String> bounds = new ArrayList<>();
                range.getLowValue().ifPresent(low -> bounds.add(range.isLowInclusive()
                        ? Filters.ge(name, value(column.type(), low)) : Filters.gt(name, value(column.type(), low))));
                range.getHighValue().ifPresent(high -> bounds.add(range.isHighInclusive()
                        ? Filters.le(name, value(column.type(), high)) : Filters.lt(name, value(column.type(), high))));
                disjuncts.add(bounds.isEmpty() ? Filters.notNull(name) : Filters.and(bounds));
            }
        }
        if (points.size() == 1) {
            disjuncts.add(Filters.eq(name, points.get(0)));
        } else if (!points.isEmpty()) {
            disjuncts.add(Filters.in(name, points));
        }
        if (domain.isNullAllowed()) {
            disjuncts.add(Filters.isNull(name));
        }
        return Filters.or(disjuncts);
    }

    private static final Map<String, String> COMPARISONS = Map.of("$equal", "=", "$not_equal", "<>", "$less_than", "<",
            "$less_than_or_equal", "<=", "$greater_than", ">", "$greater_than_or_equal", ">=");

    /**
     * The filter for a pushed expression (one conjunct of what Trino could not say as domains: an
     * OR across columns, a NOT, IN, IS NULL, comparisons between a column and a constant, combined
     * with AND, OR and NOT), or null when any part of it does not translate exactly.
     */
    static String toFilter(ConnectorExpression expression, Map<String, ColumnHandle> assignments) {
        try {
            return translate(expression, assignments, false);
        } catch (IllegalArgumentException e) {
            return null; // a value without a literal form (NaN, infinity)
        }
    }

    /**
     * Whether Trino must check {@code expression} again after the native scan: it compares a float
     * column, which the scan orders with NaN above every number where Trino follows IEEE (the scan
     * passes a superset of Trino's rows, never fewer: float comparisons under a NOT are not pushed).
     */
    static boolean rechecked(ConnectorExpression expression, Map<String, ColumnHandle> assignments) {
        if (expression instanceof Variable variable) {
            return assignments.get(variable.getName()) instanceof HyperStreamColumnHandle column && isFloat(column.type());
        }
        return expression.getChildren().stream().anyMatch(child -> rechecked(child, assignments));
    }

    private static String translate(ConnectorExpression expression, Map<String, ColumnHandle> assignments, boolean negated) {
        if (expression instanceof Constant constant && constant.getType() instanceof BooleanType && constant.getValue() != null) {
            return (Boolean) constant.getValue() ? Filters.alwaysTrue() : Filters.alwaysFalse();
        }
        HyperStreamColumnHandle flag = column(expression, assignments);
        if (flag != null && flag.type() instanceof BooleanType) {
            return Filters.eq(flag.name(), true); // a boolean column on its own
        }
        if (!(expression instanceof Call call)) {
            return null;
        }
        List<ConnectorExpression> args = call.getArguments();
        String name = call.getFunctionName().getName();
        switch (name) {
            case "$and", "$or" -> {
                List<String> parts = new ArrayList<>();
                for (ConnectorExpression arg : args) {
                    String part = translate(arg, assignments, negated);
                    if (part == null) {
                        return null;
                    }
                    parts.add(part);
                }
                return name.equals("$and") ? Filters.and(parts) : Filters.or(parts);
            }
            case "$not" -> {
                String inner = translate(args.get(0), assignments, !negated);
                return inner == null ? null : Filters.not(inner);
            }
            case "$is_null" -> {
                HyperStreamColumnHandle column = column(args.get(0), assignments);
                return column == null ? null : Filters.isNull(column.name());
            }
            case "$in" -> {
                HyperStreamColumnHandle column = column(args.get(0), assignments);
                if (column == null || (negated && isFloat(column.type())) || !(args.get(1) instanceof Call array) || !array.getFunctionName().getName().equals("$array")) {
                    return null;
                }
                List<Object> values = new ArrayList<>();
                for (ConnectorExpression element : array.getArguments()) {
                    Object value = constant(element, column);
                    if (value == null) {
                        return null;
                    }
                    values.add(value);
                }
                return Filters.in(column.name(), values);
            }
            default -> {
                String op = COMPARISONS.get(name);
                if (op == null || args.size() != 2) {
                    return null;
                }
                HyperStreamColumnHandle column = column(args.get(0), assignments);
                Object value = column == null ? null : constant(args.get(1), column);
                if (column == null || value == null) {
                    // `5 < id` is `id > 5`.
                    column = column(args.get(1), assignments);
                    value = column == null ? null : constant(args.get(0), column);
                    op = Filters.swapped(op);
                }
                return column == null || value == null || (negated && isFloat(column.type())) ? null
                        : Filters.comparison(op, column.name(), value);
            }
        }
    }

    /** The conjuncts of an expression (itself when it is no AND). */
    static List<ConnectorExpression> conjuncts(ConnectorExpression expression) {
        if (expression instanceof Call call && call.getFunctionName().equals(StandardFunctions.AND_FUNCTION_NAME)) {
            List<ConnectorExpression> out = new ArrayList<>();
            for (ConnectorExpression arg : call.getArguments()) {
                out.addAll(conjuncts(arg));
            }
            return out;
        }
        if (expression instanceof Constant constant && Boolean.TRUE.equals(constant.getValue())) {
            return List.of();
        }
        return List.of(expression);
    }

    /** The conjunction of {@code conjuncts} (TRUE for none). */
    static ConnectorExpression and(List<ConnectorExpression> conjuncts) {
        return switch (conjuncts.size()) {
            case 0 -> Constant.TRUE;
            case 1 -> conjuncts.get(0);
            default -> new Call(BooleanType.BOOLEAN, StandardFunctions.AND_FUNCTION_NAME, conjuncts);
        };
    }

    /** A column of the table, of a type the native filters compare exactly. */
    private static HyperStreamColumnHandle column(ConnectorExpression expression, Map<String, ColumnHandle> assignments) {
        if (!(expression instanceof Variable variable)
                || !(assignments.get(variable.getName()) instanceof HyperStreamColumnHandle column)
                || column.ordinal() < 0 || !isSupportedType(column.type())) {
            return null;
        }
        return column;
    }

    /** A non-null constant of the column's own type, as a literal. */
    private static Object constant(ConnectorExpression expression, HyperStreamColumnHandle column) {
        if (!(expression instanceof Constant constant) || constant.getValue() == null || !constant.getType().equals(column.type())) {
            return null;
        }
        return value(column.type(), constant.getValue());
    }

    /** A Trino native value as the predicate model's literal. */
    private static Object value(Type type, Object value) {
        if (type instanceof RealType) {
            return (double) Float.intBitsToFloat(Math.toIntExact((Long) value));
        }
        if (value instanceof Slice slice) {
            return slice.toStringUtf8();
        }
        if (type instanceof DateType) {
            return java.time.LocalDate.ofEpochDay((Long) value).toString(); // the native side parses ISO dates
        }
        if (type instanceof DecimalType decimal) {
            // Exact, as a string: a double would round.
            java.math.BigDecimal exact = decimal.isShort() ? java.math.BigDecimal.valueOf((Long) value, decimal.getScale())
                    : new java.math.BigDecimal(((io.trino.spi.type.Int128) value).toBigInteger(), decimal.getScale());
            return exact.toPlainString();
        }
        return value; // a short timestamp: microseconds, as the column holds them
    }
}
