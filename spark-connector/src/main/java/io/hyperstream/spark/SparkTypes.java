package io.hyperstream.spark;

import io.hyperstream.jni.NativeTable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** Arrow schemas of the native library as Spark types; the one place this mapping lives. */
final class SparkTypes {
    private SparkTypes() {}

    static StructType toStructType(Schema schema) {
        List<StructField> fields = new ArrayList<>();
        for (Field field : schema.getFields()) {
            DataType type = toDataType(field);
            fields.add(new StructField(field.getName(), type, field.isNullable(), defaults(field, type)));
        }
        return new StructType(fields.toArray(StructField[]::new));
    }

    /** Spark's keys of a column's default: for rows written without it, and for rows written before it existed. */
    static final String CURRENT_DEFAULT = "CURRENT_DEFAULT";
    static final String EXISTS_DEFAULT = "EXISTS_DEFAULT";

    /**
     * A column's Iceberg defaults as Spark's column metadata: {@code write-default} as
     * {@code CURRENT_DEFAULT} (Spark fills it into an INSERT that omits the column, and
     * {@code DEFAULT} in UPDATE and MERGE), {@code initial-default} as {@code EXISTS_DEFAULT}.
     */
    private static Metadata defaults(Field field, DataType type) {
        Map<String, String> metadata = field.getMetadata() == null ? Map.of() : field.getMetadata();
        String write = metadata.get(NativeTable.WRITE_DEFAULT);
        String initial = metadata.get(NativeTable.INITIAL_DEFAULT);
        if (write == null && initial == null) {
            return Metadata.empty();
        }
        org.apache.spark.sql.types.MetadataBuilder builder = new org.apache.spark.sql.types.MetadataBuilder();
        if (write != null) {
            builder.putString(CURRENT_DEFAULT, defaultSql(field.getName(), write, type));
        }
        builder.putString(EXISTS_DEFAULT, defaultSql(field.getName(), initial != null ? initial : write, type));
        return builder.build();
    }

    /** Iceberg's JSON single value of a default as a Spark SQL expression of {@code type}. */
    static String defaultSql(String column, String json, DataType type) {
        com.fasterxml.jackson.databind.JsonNode value;
        try {
            value = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json);
        } catch (java.io.IOException e) {
            throw new IllegalStateException("the default of column '" + column + "' is not JSON: " + json, e);
        }
        if (value.isNull()) {
            return "NULL";
        }
        if (type instanceof org.apache.spark.sql.types.BinaryType) {
            return "X'" + value.asText().replace("-", "") + "'";
        }
        String text = value.isTextual() ? value.asText() : value.toString();
        return "CAST('" + text.replace("\\", "\\\\").replace("'", "\\'") + "' AS " + type.sql() + ")";
    }

    /**
     * A default Spark evaluated ({@code value} in Spark's internal form, of {@code type}) as
     * Iceberg's JSON single value; null for a NULL default (no default).
     */
    static String defaultJson(String column, Object value, DataType type) {
        if (value == null) {
            return null;
        }
        com.fasterxml.jackson.databind.node.JsonNodeFactory json = com.fasterxml.jackson.databind.node.JsonNodeFactory.instance;
        com.fasterxml.jackson.databind.JsonNode node;
        if (type instanceof org.apache.spark.sql.types.BooleanType) {
            node = json.booleanNode((Boolean) value);
        } else if (type instanceof org.apache.spark.sql.types.ByteType || type instanceof org.apache.spark.sql.types.ShortType
                || type instanceof org.apache.spark.sql.types.IntegerType || type instanceof org.apache.spark.sql.types.LongType) {
            node = json.numberNode(((Number) value).longValue());
        } else if (type instanceof org.apache.spark.sql.types.FloatType || type instanceof org.apache.spark.sql.types.DoubleType) {
            double d = ((Number) value).doubleValue();
            if (!Double.isFinite(d)) {
                throw new IllegalArgumentException("the default of column '" + column + "' is " + d
                        + ": Iceberg's defaults take finite numbers only");
            }
            node = type instanceof org.apache.spark.sql.types.FloatType ? json.numberNode(((Number) value).floatValue()) : json.numberNode(d);
        } else if (type instanceof org.apache.spark.sql.types.StringType) {
            node = json.textNode(value.toString());
        } else if (type instanceof DecimalType) {
            node = json.textNode(((org.apache.spark.sql.types.Decimal) value).toJavaBigDecimal().toPlainString());
        } else if (type instanceof org.apache.spark.sql.types.DateType) {
            node = json.textNode(java.time.LocalDate.ofEpochDay((Integer) value).toString());
        } else if (type instanceof org.apache.spark.sql.types.TimestampType || type instanceof org.apache.spark.sql.types.TimestampNTZType) {
            long micros = (Long) value;
            java.time.LocalDateTime at = java.time.LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000L),
                    (int) Math.floorMod(micros, 1_000_000L) * 1000, java.time.ZoneOffset.UTC);
            String text = at.format(java.time.format.DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS"));
            node = json.textNode(type instanceof org.apache.spark.sql.types.TimestampType ? text + "+00:00" : text);
        } else if (type instanceof org.apache.spark.sql.types.BinaryType) {
            node = json.textNode(java.util.HexFormat.of().withUpperCase().formatHex((byte[]) value));
        } else {
            throw new IllegalArgumentException("column '" + column + "' of type " + type.sql()
                    + " cannot have a default: Iceberg's defaults are single values of primitive types");
        }
        return node.toString();
    }

    /**
     * The Arrow schema of a new table for a Spark schema. Columns named in {@code vectors} (with
     * their dimension) must be {@code array<float>} and become vector columns.
     */
    static Schema toArrowSchema(StructType schema, Map<String, Integer> vectors) {
        List<Field> fields = new ArrayList<>();
        for (StructField field : schema.fields()) {
            Integer dimension = vectors.get(field.name());
            if (dimension != null) {
                if (!(field.dataType() instanceof ArrayType array) || array.elementType() != DataTypes.FloatType) {
                    throw new IllegalArgumentException("vector column '" + field.name() + "' must be array<float>, not "
                            + field.dataType().simpleString());
                }
                fields.add(NativeTable.vectorField(field.name(), field.nullable(), dimension));
                continue;
            }
            fields.add(toField(field.name(), field.dataType(), field.nullable()));
        }
        for (String name : vectors.keySet()) {
            if (!List.of(schema.fieldNames()).contains(name)) {
                throw new IllegalArgumentException("vector column '" + name + "' is not in the data's schema");
            }
        }
        return new Schema(fields);
    }

    /** The Arrow field of a Spark column (or array element, or struct field), nested types included. */
    private static Field toField(String name, DataType type, boolean nullable) {
        if (type instanceof ArrayType array) {
            return new Field(name, new FieldType(nullable, ArrowType.List.INSTANCE, null),
                    List.of(toField("element", array.elementType(), array.containsNull())));
        }
        if (type instanceof StructType struct) {
            List<Field> children = new ArrayList<>();
            for (StructField child : struct.fields()) {
                children.add(toField(child.name(), child.dataType(), child.nullable()));
            }
            return new Field(name, new FieldType(nullable, ArrowType.Struct.INSTANCE, null), children);
        }
        return new Field(name, new FieldType(nullable, toArrowType(name, type), null), null);
    }

    private static ArrowType toArrowType(String name, DataType type) {
        if (type == DataTypes.LongType) {
            return new ArrowType.Int(64, true);
        }
        if (type == DataTypes.IntegerType || type == DataTypes.ShortType || type == DataTypes.ByteType) {
            return new ArrowType.Int(32, true);
        }
        if (type == DataTypes.DoubleType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
        }
        if (type == DataTypes.FloatType) {
            return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
        }
        if (type == DataTypes.BooleanType) {
            return ArrowType.Bool.INSTANCE;
        }
        if (type == DataTypes.StringType) {
            return ArrowType.Utf8.INSTANCE;
        }
        if (type instanceof DecimalType decimal) {
            return new ArrowType.Decimal(decimal.precision(), decimal.scale(), 128);
        }
        if (type == DataTypes.DateType) {
            return new ArrowType.Date(DateUnit.DAY);
        }
        if (type == DataTypes.TimestampType) {
            return new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC");
        }
        if (type == DataTypes.TimestampNTZType) {
            return new ArrowType.Timestamp(TimeUnit.MICROSECOND, null);
        }
        if (type == DataTypes.BinaryType) {
            return ArrowType.Binary.INSTANCE;
        }
        throw new UnsupportedOperationException("column '" + name + "' has type " + type.simpleString()
                + ", which the HyperStream Spark connector cannot write yet");
    }

    static DataType toDataType(Field field) {
        ArrowType type = field.getType();
        if (type instanceof ArrowType.Int i && i.getIsSigned()) {
            switch (i.getBitWidth()) {
                case 8: return DataTypes.ByteType;
                case 16: return DataTypes.ShortType;
                case 32: return DataTypes.IntegerType;
                case 64: return DataTypes.LongType;
                default: break;
            }
        } else if (type instanceof ArrowType.FloatingPoint f) {
            if (f.getPrecision() == FloatingPointPrecision.SINGLE) {
                return DataTypes.FloatType;
            }
            if (f.getPrecision() == FloatingPointPrecision.DOUBLE) {
                return DataTypes.DoubleType;
            }
        } else if (type instanceof ArrowType.Decimal d) {
            return DataTypes.createDecimalType(d.getPrecision(), d.getScale());
        } else if (type instanceof ArrowType.Utf8) {
            return DataTypes.StringType;
        } else if (type instanceof ArrowType.Date d && d.getUnit() == DateUnit.DAY) {
            return DataTypes.DateType;
        } else if (type instanceof ArrowType.Timestamp t && t.getUnit() == TimeUnit.MICROSECOND) {
            // Iceberg's timestamptz (an instant) is Spark's timestamp; its timestamp, Spark's timestamp_ntz.
            return t.getTimezone() == null ? DataTypes.TimestampNTZType : DataTypes.TimestampType;
        } else if (type instanceof ArrowType.Binary) {
            return DataTypes.BinaryType;
        } else if (type instanceof ArrowType.Bool) {
            return DataTypes.BooleanType;
        } else if (type instanceof ArrowType.FixedSizeList || type instanceof ArrowType.List) {
            Field element = field.getChildren().get(0);
            return DataTypes.createArrayType(toDataType(element), element.isNullable());
        } else if (type instanceof ArrowType.Struct) {
            return toStructType(new Schema(field.getChildren()));
        }
        throw new UnsupportedOperationException("column '" + field.getName() + "' has Arrow type " + type
                + ", which the HyperStream Spark connector cannot map yet");
    }
}
