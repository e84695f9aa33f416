package io.hyperstream.trino;

import io.trino.spi.type.ArrayType;
import io.trino.spi.type.BigintType;
import io.trino.spi.type.BooleanType;
import io.trino.spi.type.DecimalType;
import io.trino.spi.type.DoubleType;
import io.trino.spi.type.SmallintType;
import io.trino.spi.type.TinyintType;
import io.trino.spi.type.IntegerType;
import io.trino.spi.type.RealType;
import io.trino.spi.type.Type;
import io.trino.spi.type.VarcharType;
import org.apache.arrow.vector.types.FloatingPointPrecision;
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
        if (type instanceof ArrowType.Decimal d && d.getPrecision() > 18) {
            // Decimals reach Trino as 128-bit values (see ArrowBlocks), so only long decimals.
            return DecimalType.createDecimalType(d.getPrecision(), d.getScale());
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
        if (type instanceof ArrowType.FixedSizeList) {
            return new ArrayType(toTrinoType(field.getChildren().get(0)));
        }
        throw new UnsupportedOperationException("column '" + field.getName() + "' has Arrow type " + type
                + ", which the HyperStream Trino connector cannot map yet");
    }
}
