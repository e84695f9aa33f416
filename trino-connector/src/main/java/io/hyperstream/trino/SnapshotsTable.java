package io.hyperstream.trino;

import io.hyperstream.jni.Catalog;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import static io.trino.spi.type.BigintType.BIGINT;
import static io.trino.spi.type.DateTimeEncoding.packDateTimeWithZone;
import static io.trino.spi.type.TimeZoneKey.UTC_KEY;
import static io.trino.spi.type.TimestampWithTimeZoneType.TIMESTAMP_TZ_MILLIS;

import io.hyperstream.jni.NativeTable;
import io.trino.spi.connector.ColumnMetadata;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTableMetadata;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.connector.InMemoryRecordSet;
import io.trino.spi.connector.RecordCursor;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.connector.SystemTable;
import io.trino.spi.predicate.TupleDomain;
import java.util.List;

/** {@code "<table>$snapshots"}: the snapshot history of a stored table, oldest first. */
final class SnapshotsTable implements SystemTable {
    private final ConnectorTableMetadata metadata;
    private final Catalog.TableRef location;

    SnapshotsTable(SchemaTableName table, Catalog.TableRef location) {
        this.metadata = new ConnectorTableMetadata(
                new SchemaTableName(table.getSchemaName(), table.getTableName() + "$snapshots"),
                List.of(new ColumnMetadata("committed_at", TIMESTAMP_TZ_MILLIS),
                        new ColumnMetadata("snapshot_id", BIGINT),
                        new ColumnMetadata("parent_id", BIGINT),
                        new ColumnMetadata("sequence_number", BIGINT)));
        this.location = location;
    }

    @Override
    public Distribution getDistribution() {
        return Distribution.SINGLE_COORDINATOR;
    }

    @Override
    public ConnectorTableMetadata getTableMetadata() {
        return metadata;
    }

    @Override
    public RecordCursor cursor(ConnectorTransactionHandle transaction, ConnectorSession session,
            TupleDomain<Integer> constraint) {
        InMemoryRecordSet.Builder rows = InMemoryRecordSet.builder(metadata);
        List<NativeTable.SnapshotInfo> snapshots = nativeCall(() -> {
            try (NativeTable table = location.open()) {
                return table.snapshots();
            }
        });
        for (NativeTable.SnapshotInfo s : snapshots) {
            rows.addRow(packDateTimeWithZone(s.timestampMillis(), UTC_KEY), s.snapshotId(),
                    s.parentId() < 0 ? null : s.parentId(), s.sequenceNumber());
        }
        return rows.build().cursor();
    }
}
