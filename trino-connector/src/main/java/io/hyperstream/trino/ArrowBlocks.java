package io.hyperstream.trino;

import io.airlift.slice.Slice;
import io.airlift.slice.Slices;
import io.trino.spi.block.ArrayBlock;
import io.trino.spi.block.RowBlock;
import io.trino.spi.block.Block;
import io.trino.spi.block.ByteArrayBlock;
import io.trino.spi.block.Int128ArrayBlock;
import io.trino.spi.block.IntArrayBlock;
import io.trino.spi.block.ShortArrayBlock;
import io.trino.spi.block.LongArrayBlock;
import io.trino.spi.block.VariableWidthBlock;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Optional;
import org.apache.arrow.memory.ArrowBuf;
import io.trino.spi.block.BlockBuilder;
import io.trino.spi.type.LongTimestampWithTimeZone;
import io.trino.spi.type.TimeZoneKey;
import io.trino.spi.type.TimestampWithTimeZoneType;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.BitVectorHelper;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.complex.ListVector;
import org.apache.arrow.vector.complex.StructVector;

/**
 * Arrow vectors as Trino blocks. Trino blocks live on the heap, so each buffer is copied once, in
 * bulk; no value is copied one by one except booleans, which Arrow packs into bits. Arrow's
 * validity bitmap and Trino's {@code valueIsValid} words share one layout (bit set = value present,
 * least significant bit first), so validity moves as whole words.
 */
final class ArrowBlocks {
    private ArrowBlocks() {}

    static Block toBlock(FieldVector vector) {
        int count = vector.getValueCount();
        if (vector instanceof TimeStampMicroTZVector micros) {
            // timestamp(6) with time zone is a long Trino type: epoch millis and picoseconds of the milli.
            BlockBuilder builder = TimestampWithTimeZoneType.TIMESTAMP_TZ_MICROS.createBlockBuilder(null, count);
            for (int i = 0; i < count; i++) {
                if (micros.isNull(i)) {
                    builder.appendNull();
                    continue;
                }
                long value = micros.get(i);
                TimestampWithTimeZoneType.TIMESTAMP_TZ_MICROS.writeObject(builder, LongTimestampWithTimeZone.fromEpochMillisAndFraction(
                        Math.floorDiv(value, 1000), (int) Math.floorMod(value, 1000) * 1_000_000, TimeZoneKey.UTC_KEY));
            }
            return builder.build();
        }
        if (vector instanceof DecimalVector && ((DecimalVector) vector).getPrecision() <= 18) {
            // A short decimal: Trino keeps its unscaled value as a long, Arrow's low word (it fits).
            long[] words = new long[count * 2];
            littleEndian(vector.getDataBuffer(), (long) count * 16).asLongBuffer().get(words);
            long[] values = new long[count];
            for (int i = 0; i < count; i++) {
                values[i] = words[i * 2];
            }
            return new LongArrayBlock(count, validity(vector), values);
        }
        if (vector instanceof BigIntVector || vector instanceof Float8Vector || vector instanceof TimeStampMicroVector) {
            long[] values = new long[count];
            littleEndian(vector.getDataBuffer(), (long) count * Long.BYTES).asLongBuffer().get(values);
            return new LongArrayBlock(count, validity(vector), values);
        }
        if (vector instanceof IntVector || vector instanceof Float4Vector || vector instanceof DateDayVector) {
            int[] values = new int[count];
            littleEndian(vector.getDataBuffer(), (long) count * Integer.BYTES).asIntBuffer().get(values);
            return new IntArrayBlock(count, validity(vector), values);
        }
        if (vector instanceof SmallIntVector) {
            short[] values = new short[count];
            littleEndian(vector.getDataBuffer(), (long) count * Short.BYTES).asShortBuffer().get(values);
            return new ShortArrayBlock(count, validity(vector), values);
        }
        if (vector instanceof TinyIntVector) {
            byte[] values = new byte[count];
            vector.getDataBuffer().getBytes(0, values);
            return new ByteArrayBlock(count, validity(vector), values);
        }
        if (vector instanceof DecimalVector) {
            // Arrow keeps each value as 16 little-endian bytes (low word first); Trino wants (high, low).
            long[] words = new long[count * 2];
            littleEndian(vector.getDataBuffer(), (long) count * 16).asLongBuffer().get(words);
            for (int i = 0; i < words.length; i += 2) {
                long low = words[i];
                words[i] = words[i + 1];
                words[i + 1] = low;
            }
            return new Int128ArrayBlock(count, validity(vector), words);
        }
        if (vector instanceof BitVector bits) {
            ArrowBuf data = bits.getDataBuffer();
            byte[] values = new byte[count];
            for (int i = 0; i < count; i++) {
                values[i] = (byte) BitVectorHelper.get(data, i);
            }
            return new ByteArrayBlock(count, validity(vector), values);
        }
        if (vector instanceof VarCharVector || vector instanceof VarBinaryVector) {
            BaseVariableWidthVector strings = (BaseVariableWidthVector) vector;
            int[] offsets = new int[count + 1];
            littleEndian(strings.getOffsetBuffer(), (long) (count + 1) * Integer.BYTES).asIntBuffer().get(offsets);
            int base = offsets[0];
            byte[] data = new byte[offsets[count] - base];
            strings.getDataBuffer().getBytes(base, data);
            if (base != 0) {
                for (int i = 0; i <= count; i++) {
                    offsets[i] -= base;
                }
            }
            Slice slice = Slices.wrappedBuffer(data);
            return new VariableWidthBlock(count, slice, offsets, validity(vector));
        }
        if (vector instanceof FixedSizeListVector list) {
            return fixedSizeList(list, count);
        }
        if (vector instanceof ListVector list) {
            return list(list, count);
        }
        if (vector instanceof StructVector struct) {
            // Arrow keeps a slot per row in every field, null rows too, as this block wants.
            Block[] fields = struct.getChildrenFromFields().stream().map(ArrowBlocks::toBlock).toArray(Block[]::new);
            return RowBlock.fromNotNullSuppressedFieldBlocks(count, validity(struct), fields);
        }
        throw new UnsupportedOperationException("no Trino block for Arrow vector " + vector.getField());
    }

    private static Block list(ListVector list, int count) {
        int[] offsets = new int[count + 1];
        littleEndian(list.getOffsetBuffer(), (long) (count + 1) * Integer.BYTES).asIntBuffer().get(offsets);
        Block elements = toBlock(list.getDataVector());
        boolean nullsHoldElements = false;
        for (int row = 0; row < count && list.getNullCount() > 0; row++) {
            nullsHoldElements |= list.isNull(row) && offsets[row + 1] != offsets[row];
        }
        if (offsets[0] == 0 && !nullsHoldElements) {
            return ArrayBlock.fromElementBlock(count, validity(list), offsets, elements);
        }
        // Trino wants the elements from 0 and null arrays to hold none: keep only the present rows' elements.
        int[] positions = new int[offsets[count] - offsets[0]];
        int[] kept = new int[count + 1];
        int next = 0;
        for (int row = 0; row < count; row++) {
            kept[row] = next;
            if (!list.isNull(row)) {
                for (int p = offsets[row]; p < offsets[row + 1]; p++) {
                    positions[next++] = p;
                }
            }
        }
        kept[count] = next;
        return ArrayBlock.fromElementBlock(count, validity(list), kept, elements.copyPositions(positions, 0, next));
    }

    private static Block fixedSizeList(FixedSizeListVector list, int count) {
        int size = list.getListSize();
        Block elements = toBlock(list.getDataVector());
        Optional<long[]> validity = validity(list);
        int[] offsets = new int[count + 1];
        if (validity.isEmpty()) {
            for (int i = 0; i <= count; i++) {
                offsets[i] = i * size;
            }
            return ArrayBlock.fromElementBlock(count, Optional.empty(), offsets, elements);
        }
        // Trino wants null arrays to hold no elements: keep only the elements of present rows.
        int present = count - list.getNullCount();
        int[] positions = new int[present * size];
        int next = 0;
        for (int row = 0; row < count; row++) {
            offsets[row] = next;
            if (!list.isNull(row)) {
                for (int j = 0; j < size; j++) {
                    positions[next++] = row * size + j;
                }
            }
        }
        offsets[count] = next;
        return ArrayBlock.fromElementBlock(count, validity, offsets, elements.copyPositions(positions, 0, next));
    }

    /** Trino's {@code valueIsValid} words from the vector's validity bitmap; empty when nothing is null. */
    private static Optional<long[]> validity(ValueVector vector) {
        int count = vector.getValueCount();
        if (vector.getNullCount() == 0) {
            return Optional.empty();
        }
        int words = (count + 63) / 64;
        byte[] bytes = new byte[words * Long.BYTES];
        vector.getValidityBuffer().getBytes(0, bytes, 0, (count + 7) / 8);
        long[] valid = new long[words];
        ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(valid);
        return Optional.of(valid);
    }

    private static ByteBuffer littleEndian(ArrowBuf buffer, long length) {
        return buffer.nioBuffer(0, Math.toIntExact(length)).order(ByteOrder.LITTLE_ENDIAN);
    }
}
