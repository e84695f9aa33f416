package io.hyperstream.spark;

import io.hyperstream.jni.Filters;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Literal;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Spark's V2 predicates as the native predicate model: the one place this translation lives. A
 * predicate translates only when the native scan enforces exactly what Spark means by it; the rest
 * stay with Spark.
 */
final class SparkFilters {
    private SparkFilters() {}

    /** The filter for {@code predicate} over {@code schema}, or empty when it does not translate. */
    static Optional<String> translate(Predicate predicate, StructType schema) {
        try {
            return Optional.ofNullable(toFilter(predicate, schema));
        } catch (IllegalArgumentException e) {
            return Optional.empty(); // a literal without a JSON form (NaN, infinity)
        }
    }

    private static String toFilter(Expression expression, StructType schema) {
        if (!(expression instanceof Predicate p)) {
            return null;
        }
        Expression[] c = p.children();
        switch (p.name()) {
            case "ALWAYS_TRUE":
                return Filters.alwaysTrue();
            case "ALWAYS_FALSE":
                return Filters.alwaysFalse();
            case "AND":
            case "OR": {
                List<String> parts = new ArrayList<>();
                for (Expression child : c) {
                    String part = toFilter(child, schema);
                    if (part == null) {
                        return null;
                    }
                    parts.add(part);
                }
                return p.name().equals("AND") ? Filters.and(parts) : Filters.or(parts);
            }
            case "NOT": {
                String inner = toFilter(c[0], schema);
                return inner == null ? null : Filters.not(inner);
            }
            case "IS_NULL":
            case "IS_NOT_NULL": {
                String column = column(c[0], schema);
                if (column == null) {
                    return null;
                }
                return p.name().equals("IS_NULL") ? Filters.isNull(column) : Filters.notNull(column);
            }
            case "IN": {
                String column = column(c[0], schema);
                if (column == null) {
                    return null;
                }
                List<Object> values = new ArrayList<>();
                for (int i = 1; i < c.length; i++) {
                    Object value = literal(c[i]);
                    if (value == null) {
                        return null;
                    }
                    values.add(value);
                }
                return Filters.in(column, values);
            }
            case "STARTS_WITH": {
                String column = column(c[0], schema);
                Object prefix = literal(c[1]);
                return column == null || !(prefix instanceof String s) ? null : Filters.startsWith(column, s);
            }
            case "=":
            case "<>":
            case "<":
            case "<=":
            case ">":
            case ">=":
                return comparison(p.name(), c, schema);
            default:
                return null;
        }
    }

    private static String comparison(String op, Expression[] c, StructType schema) {
        String column = column(c[0], schema);
        Object value = literal(c[1]);
        if (column == null || value == null) {
            // `5 < id` is `id > 5`.
            column = column(c[1], schema);
            value = literal(c[0]);
            op = Filters.swapped(op);
        }
        return column == null || value == null ? null : Filters.comparison(op, column, value);
    }

    /** A top-level column of a type the native filters compare exactly. */
    private static String column(Expression e, StructType schema) {
        if (!(e instanceof NamedReference ref) || ref.fieldNames().length != 1) {
            return null;
        }
        String name = ref.fieldNames()[0];
        for (StructField field : schema.fields()) {
            if (field.name().equals(name) && isSupported(field.dataType())) {
                return name;
            }
        }
        return null;
    }

    private static boolean isSupported(DataType type) {
        return type instanceof LongType || type instanceof IntegerType || type instanceof DoubleType
                || type instanceof FloatType || type instanceof StringType || type instanceof BooleanType
                || type instanceof DateType || type instanceof TimestampType || type instanceof TimestampNTZType
                || type instanceof DecimalType;
    }

    /** A non-null literal of a supported type as a filter value. */
    private static Object literal(Expression e) {
        if (!(e instanceof Literal<?> literal) || literal.value() == null || !isSupported(literal.dataType())) {
            return null;
        }
        Object value = literal.value();
        if (value instanceof UTF8String s) {
            return s.toString();
        }
        if (value instanceof Float f) {
            return (double) f;
        }
        if (literal.dataType() instanceof DateType) {
            return java.time.LocalDate.ofEpochDay((Integer) value).toString(); // the native side parses ISO dates
        }
        if (value instanceof Decimal decimal) {
            return decimal.toJavaBigDecimal().toPlainString(); // exact, where a double would round
        }
        return value; // timestamps: microseconds since the epoch, as the column holds them
    }
}
