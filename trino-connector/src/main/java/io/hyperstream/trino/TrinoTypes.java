package io.hyperstream.trino;

import io.trino.spi.type.ArrayType;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.BooleanType;
import io.trino.spi.type.DateType;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.DoubleType;
import io.trino.spi.type.SmallintType;
import io.trino.spi.type.TinyintType;
import io.trino.spi.type.IntegerType;
import io.trino.spi.type.RealType;
import io.trino.spi.type.TimestampType;
import io.trino.spi.type.TimestampWithTimeZoneType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarbinaryType;
import io.trino.spi.type.VarcharType;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;

/** Arrow types of the native library as Trino types; the one place this mapping lives. */
final class TrinoTypes {
    private TrinoTypes() {}

    static Type toTrinoType(Field field) {
        ArrowType type = field.getType();
        if (type instanceof ArrowType.Int i && i.getIsSigned() && i.getBitWidth() == 64) {
            return BigintType.BIGINT;
        }
        if (type instanceof ArrowType.Int i && i.getIsSigned() && i.getBitWidth() == 32) {
            return IntegerType.INTEGER;
        }
        if (type instanceof ArrowType.Int i && i.getIsSigned() && i.getBitWidth() == 16) {
            return SmallintType.SMALLINT;
        }
        if (type instanceof ArrowType.Int i && i.getIsSigned() && i.getBitWidth() == 8) {
            return TinyintType.TINYINT;
        }
        if (type instanceof ArrowType.Decimal d) {
            return DecimalType.createDecimalType(d.getPrecision(), d.getScale());
        }
        if (type instanceof ArrowType.Date d && d.getUnit() == DateUnit.DAY) {
            return DateType.DATE;
        }
        if (type instanceof ArrowType.Timestamp t && t.getUnit() == TimeUnit.MICROSECOND) {
            // Iceberg's timestamptz (an instant) and timestamp (a local date-time), both in microseconds.
            return t.getTimezone() == null ? TimestampType.TIMESTAMP_MICROS : TimestampWithTimeZoneType.TIMESTAMP_TZ_MICROS;
        }
        if (type instanceof ArrowType.Binary) {
            return VarbinaryType.VARBINARY;
        }
        if (type instanceof ArrowType.FloatingPoint f && f.getPrecision() == FloatingPointPrecision.DOUBLE) {
            return DoubleType.DOUBLE;
        }
        if (type instanceof ArrowType.FloatingPoint f && f.getPrecision() == FloatingPointPrecision.SINGLE) {
            return RealType.REAL;
        }
        if (type instanceof ArrowType.Utf8) {
            return VarcharType.VARCHAR;
        }
        if (type instanceof ArrowType.Bool) {
            return BooleanType.BOOLEAN;
        }
        if (type instanceof ArrowType.FixedSizeList || type instanceof ArrowType.List) {
            return new ArrayType(toTrinoType(field.getChildren().get(0)));
        }
        if (type instanceof ArrowType.Struct) {
            return io.trino.spi.type.RowType.from(field.getChildren().stream()
                    .map(child -> io.trino.spi.type.RowType.field(child.getName(), toTrinoType(child))).toList());
        }
        throw new UnsupportedOperationException("column '" + field.getName() + "' has Arrow type " + type
                + ", which the HyperStream Trino connector cannot map yet");
    }
}
