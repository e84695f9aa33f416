package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;

import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.Catalog;
import io.hyperstream.jni.NativeTable;
import io.trino.spi.connector.ColumnMetadata;
import io.trino.spi.connector.ConnectorPageSource;
import io.trino.spi.connector.ConnectorSession;
import io.trino.spi.connector.ConnectorTableMetadata;
import io.trino.spi.connector.ConnectorTransactionHandle;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.connector.SystemTable;
import io.trino.spi.predicate.TupleDomain;
import java.util.List;
import java.util.Optional;
import org.apache.arrow.memory.BufferAllocator;

/**
 * {@code "<table>$<name>"}: a metadata table of a stored table ({@link NativeTable#METADATA_TABLES}:
 * Iceberg's {@code snapshots}, {@code history}, {@code files}, {@code manifests}, {@code partitions},
 * {@code refs}, {@code properties}, and {@code indexes}, each data file's index files), read natively
 * from the current snapshot's metadata on the coordinator.
 */
final class MetadataTable implements SystemTable {
    private final ConnectorTableMetadata metadata;
    private final Catalog.TableRef location;
    private final String name;

    private MetadataTable(SchemaTableName table, String name, Catalog.TableRef location) {
        List<ColumnMetadata> columns;
        try (BufferAllocator allocator = Allocators.child("trino-metadata-table")) {
            columns = nativeCall(() -> NativeTable.metadataTableSchema(allocator, name)).getFields().stream()
                    .map(f -> ColumnMetadata.builder().setName(f.getName()).setType(TrinoTypes.toTrinoType(f)).setNullable(f.isNullable()).build())
                    .toList();
        }
        this.metadata = new ConnectorTableMetadata(new SchemaTableName(table.getSchemaName(), table.getTableName() + "$" + name), columns);
        this.location = location;
        this.name = name;
    }

    /** The metadata table {@code "<table>$<name>"} names, when it names one of a stored table. */
    static Optional<SystemTable> of(SchemaTableName table, java.util.function.Function<SchemaTableName, Optional<Catalog.TableRef>> stored) {
        String full = table.getTableName();
        int dollar = full.lastIndexOf('$');
        if (dollar <= 0 || !NativeTable.METADATA_TABLES.contains(full.substring(dollar + 1))) {
            return Optional.empty();
        }
        String name = full.substring(dollar + 1);
        SchemaTableName base = new SchemaTableName(table.getSchemaName(), full.substring(0, dollar));
        return stored.apply(base).map(location -> new MetadataTable(base, name, location));
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
    public ConnectorPageSource pageSource(ConnectorTransactionHandle transaction, ConnectorSession session, TupleDomain<Integer> constraint) {
        return HyperStreamPageSource.metadataTable(location, name, metadata.getColumns().size());
    }
}
