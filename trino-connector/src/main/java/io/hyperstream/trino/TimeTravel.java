package io.hyperstream.trino;

import static io.trino.spi.StandardErrorCode.NOT_SUPPORTED;
import io.trino.spi.TrinoException;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTableVersion;

/** FOR VERSION AS OF and FOR TIMESTAMP AS OF, as a stored table reads them. */
final class TimeTravel {

    static long snapshotId(ConnectorTableVersion version) {
        if (!(version.getVersion() instanceof Long id)) {
            throw new TrinoException(NOT_SUPPORTED, "HyperStream tables travel by snapshot id: FOR VERSION AS OF <bigint>");
        }
        return id;
    }

    /** FOR TIMESTAMP AS OF's point in time, in epoch milliseconds (a timestamp without zone is in the session's). */
    static long epochMillis(ConnectorSession session, ConnectorTableVersion version) {
        Object value = version.getVersion();
        if (version.getVersionType() instanceof io.trino.spi.type.TimestampWithTimeZoneType zoned) {
            return zoned.isShort() ? io.trino.spi.type.DateTimeEncoding.unpackMillisUtc((long) value)
                    : ((io.trino.spi.type.LongTimestampWithTimeZone) value).getEpochMillis();
        }
        if (version.getVersionType() instanceof io.trino.spi.type.TimestampType local) {
            long micros = local.isShort() ? (long) value : ((io.trino.spi.type.LongTimestamp) value).getEpochMicros();
            return java.time.LocalDateTime.ofEpochSecond(Math.floorDiv(micros, 1_000_000), (int) Math.floorMod(micros, 1_000_000) * 1000,
                    java.time.ZoneOffset.UTC).atZone(session.getTimeZoneKey().getZoneId()).toInstant().toEpochMilli();
        }
        throw new TrinoException(NOT_SUPPORTED, "FOR TIMESTAMP AS OF takes a timestamp, got " + version.getVersionType());
    }
}
