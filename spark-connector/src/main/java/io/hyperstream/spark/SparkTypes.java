package io.hyperstream.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** Arrow schemas of the native library as Spark types; the one place this mapping lives. */
final class SparkTypes {
    private SparkTypes() {}

    static StructType toStructType(Schema schema) {
        List<StructField> fields = new ArrayList<>();
        for (Field field : schema.getFields()) {
            fields.add(new StructField(field.getName(), toDataType(field), field.isNullable(), Metadata.empty()));
        }
        return new StructType(fields.toArray(StructField[]::new));
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
        } else if (type instanceof ArrowType.Utf8) {
            return DataTypes.StringType;
        } else if (type instanceof ArrowType.Bool) {
            return DataTypes.BooleanType;
        } else if (type instanceof ArrowType.FixedSizeList) {
            Field element = field.getChildren().get(0);
            return DataTypes.createArrayType(toDataType(element), element.isNullable());
        }
        throw new UnsupportedOperationException("column '" + field.getName() + "' has Arrow type " + type
                + ", which the HyperStream Spark connector cannot map yet");
    }
}
