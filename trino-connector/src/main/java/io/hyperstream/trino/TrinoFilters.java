package io.hyperstream.trino;

import io.airlift.slice.Slice;
import io.hyperstream.jni.Filters;
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
