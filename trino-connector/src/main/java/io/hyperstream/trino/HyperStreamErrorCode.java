package io.hyperstream.trino;

import static io.trino.spi.ErrorType.EXTERNAL;
import static io.trino.spi.ErrorType.INTERNAL_ERROR;
import static io.trino.spi.ErrorType.USER_ERROR;
import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;

import io.hyperstream.jni.CommitConflictException;
import io.hyperstream.jni.CommitStateUnknownException;
import io.hyperstream.jni.CorruptDataException;
import io.hyperstream.jni.HyperStreamException;
import io.hyperstream.jni.HyperStreamIOException;
import io.hyperstream.jni.InvalidArgumentException;
import io.hyperstream.jni.NotFoundException;
import io.trino.spi.ErrorCode;
import io.trino.spi.ErrorCodeSupplier;
import io.trino.spi.ErrorType;
import io.trino.spi.TrinoException;
import java.util.function.Supplier;

/** Trino error codes for native errors; each native exception class maps to one. */
public enum HyperStreamErrorCode implements ErrorCodeSupplier {
    HYPERSTREAM_INVALID_ARGUMENT(0, USER_ERROR),
    HYPERSTREAM_NOT_FOUND(1, USER_ERROR),
    HYPERSTREAM_COMMIT_CONFLICT(2, EXTERNAL),
    HYPERSTREAM_CORRUPT_DATA(3, EXTERNAL),
    HYPERSTREAM_IO_ERROR(4, EXTERNAL),
    HYPERSTREAM_INTERNAL_ERROR(5, INTERNAL_ERROR),
    HYPERSTREAM_COMMIT_STATE_UNKNOWN(6, EXTERNAL);

    private final ErrorCode errorCode;

    HyperStreamErrorCode(int code, ErrorType type) {
        this.errorCode = new ErrorCode(code + 0x0720_0000, name(), type);
    }

    @Override
    public ErrorCode toErrorCode() {
        return errorCode;
    }

    /** The native exception as a {@link TrinoException} with the same message. */
    public static TrinoException translate(HyperStreamException e) {
        HyperStreamErrorCode code;
        if (e instanceof InvalidArgumentException) {
            code = HYPERSTREAM_INVALID_ARGUMENT;
        } else if (e instanceof NotFoundException) {
            code = HYPERSTREAM_NOT_FOUND;
        } else if (e instanceof CommitConflictException) {
            code = HYPERSTREAM_COMMIT_CONFLICT;
        } else if (e instanceof CommitStateUnknownException) {
            code = HYPERSTREAM_COMMIT_STATE_UNKNOWN;
        } else if (e instanceof CorruptDataException) {
            code = HYPERSTREAM_CORRUPT_DATA;
        } else if (e instanceof HyperStreamIOException) {
            code = HYPERSTREAM_IO_ERROR;
        } else {
            code = HYPERSTREAM_INTERNAL_ERROR;
        }
        return new TrinoException(code, e.getMessage(), e);
    }

    /** Runs a native call, translating its exceptions. */
    public static <T> T nativeCall(Supplier<T> call) {
        try {
            return call.get();
        } catch (HyperStreamException e) {
            throw translate(e);
        }
    }

    /** As {@link #nativeCall(Supplier)}, for a call that returns nothing. */
    public static void nativeRun(Runnable call) {
        nativeCall(() -> {
            call.run();
            return null;
        });
    }

    /**
     * Runs {@code resolve}, a schema or table name turned into a path by {@link io.hyperstream.jni.CatalogRoot};
     * a name the catalog refuses fails as Trino's connectors fail an identifier they cannot take
     * ({@code NOT_SUPPORTED}), saying why; any other native failure (a REST catalog that cannot be
     * reached) as {@link #translate} maps it.
     */
    public static <T> T named(Supplier<T> resolve) {
        try {
            return resolve.get();
        } catch (InvalidArgumentException refused) {
            throw new TrinoException(NOT_SUPPORTED, refused.getMessage(), refused);
        } catch (HyperStreamException e) {
            throw translate(e);
        }
    }
}
