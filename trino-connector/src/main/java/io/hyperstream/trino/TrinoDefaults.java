package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.HYPERSTREAM_INVALID_ARGUMENT;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.trino.spi.TrinoException;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.BooleanType;
import io.trino.spi.type.CharType;
import io.trino.spi.type.DateType;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.DoubleType;
import io.trino.spi.type.IntegerType;
import io.trino.spi.type.RealType;
import io.trino.spi.type.SmallintType;
import io.trino.spi.type.TimestampType;
import io.trino.spi.type.TimestampWithTimeZoneType;
import io.trino.spi.type.TinyintType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarbinaryType;
import io.trino.spi.type.VarcharType;
import java.io.IOException;
import java.math.BigDecimal;

/**
 * Column defaults between Trino's SQL and Iceberg's JSON single values: the literal Trino hands
 * {@code ALTER TABLE ... ADD COLUMN ... DEFAULT} ({@code 7}, {@code BIGINT '7'}, {@code 'text'},
 * {@code DATE '2024-02-29'}, {@code TIMESTAMP '2024-01-01 10:00:00.000000'}, {@code X'AB'}) becomes
 * the column's {@code initial-default} and {@code write-default}; a column's {@code write-default}
 * becomes the SQL expression Trino fills into an INSERT that omits the column.
 */
final class TrinoDefaults {
    private TrinoDefaults() {}

    /** Iceberg's JSON single value of Trino's default literal {@code sql} for {@code column}; null for a NULL default. */
    static String toJson(String column, String sql, Type type) {
        String text = sql.trim();
        if (text.equalsIgnoreCase("NULL") || text.toUpperCase(java.util.Locale.ROOT).startsWith("CAST(NULL")) {
            return null;
        }
        JsonNodeFactory json = JsonNodeFactory.instance;
        try {
            String value = unquoted(text);
            JsonNode node;
            if (type instanceof BooleanType) {
                node = json.booleanNode(Boolean.parseBoolean(value.trim()));
            } else if (type instanceof TinyintType || type instanceof SmallintType || type instanceof IntegerType
                    || type instanceof BigintType) {
                node = json.numberNode(Long.parseLong(value.trim()));
            } else if (type instanceof RealType || type instanceof DoubleType) {
                double d = Double.parseDouble(value.trim());
                if (!Double.isFinite(d)) {
                    throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "the default of column '" + column + "' is " + d
                            + ": Iceberg's defaults take finite numbers only");
                }
                node = type instanceof RealType ? json.numberNode((float) d) : json.numberNode(d);
            } else if (type instanceof DecimalType) {
                node = json.textNode(new BigDecimal(value.trim()).toPlainString());
            } else if (type instanceof VarcharType || type instanceof CharType || type instanceof DateType) {
                node = json.textNode(value);
            } else if (type instanceof TimestampType) {
                node = json.textNode(value.trim().replace(' ', 'T'));
            } else if (type instanceof TimestampWithTimeZoneType) {
                String at = value.trim();
                if (!at.endsWith(" UTC")) {
                    throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "the default of column '" + column
                            + "' must be given in UTC (Iceberg keeps timestamps with time zone in UTC), got " + sql);
                }
                node = json.textNode(at.substring(0, at.length() - " UTC".length()).replace(' ', 'T') + "+00:00");
            } else if (type instanceof VarbinaryType) {
                node = json.textNode(value.replace(" ", "").toUpperCase(java.util.Locale.ROOT));
            } else {
                throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "column '" + column + "' of type " + type
                        + " cannot have a default: Iceberg's defaults are single values of primitive types");
            }
            return node.toString();
        } catch (NumberFormatException e) {
            throw new TrinoException(HYPERSTREAM_INVALID_ARGUMENT, "the default " + sql + " of column '" + column
                    + "' is not a literal of type " + type, e);
        }
    }

    /** The value of a literal: what stands between its quotes ({@code ''} read as {@code '}), or the whole of an unquoted one. */
    private static String unquoted(String literal) {
        int open = literal.indexOf('\'');
        if (open < 0 || !literal.endsWith("'") || open == literal.length() - 1) {
            return literal;
        }
        return literal.substring(open + 1, literal.length() - 1).replace("''", "'");
    }

    /** The SQL expression of a column's default of Iceberg JSON {@code json}, as Trino evaluates it; null for none. */
    static String toSql(String json, Type type) {
        if (json == null) {
            return null;
        }
        JsonNode value;
        try {
            value = new ObjectMapper().readTree(json);
        } catch (IOException e) {
            throw new IllegalStateException("a column default is not JSON: " + json, e);
        }
        if (value.isNull()) {
            return null;
        }
        String text = value.isTextual() ? value.asText() : value.toString();
        String quoted = "'" + text.replace("'", "''") + "'";
        // Trino takes literals only, each of its type's own form.
        if (type instanceof BooleanType || type instanceof IntegerType) {
            return text;
        } else if (type instanceof TinyintType || type instanceof SmallintType || type instanceof BigintType || type instanceof RealType
                || type instanceof DoubleType || type instanceof DecimalType || type instanceof DateType) {
            String keyword = type instanceof DecimalType ? "DECIMAL" : type.getDisplayName().toUpperCase(java.util.Locale.ROOT);
            return keyword + " " + quoted;
        } else if (type instanceof TimestampType) {
            return "TIMESTAMP " + quoted.replace('T', ' ');
        } else if (type instanceof TimestampWithTimeZoneType) {
            return "TIMESTAMP " + quoted.replace('T', ' ').replaceAll("(\\+00:00|Z)'$", " UTC'");
        } else if (type instanceof VarbinaryType) {
            return "X'" + text.replace("-", "") + "'";
        }
        return quoted;
    }
}
