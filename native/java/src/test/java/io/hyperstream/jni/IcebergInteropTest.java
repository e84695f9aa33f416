package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.complex.FixedSizeListVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.arrow.vector.ipc.ArrowStreamWriter;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Table;
import org.apache.iceberg.data.GenericAppenderFactory;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.encryption.EncryptedFiles;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.DataWriter;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** HyperStream tables are genuine Iceberg tables: Apache Iceberg Java reads ours, and we read its. */
class IcebergInteropTest {
    private static final int DIM = 4;
    private BufferAllocator allocator;

    @TempDir
    Path dir;

    @BeforeEach
    void openAllocator() {
        allocator = Allocators.child("interop-test");
    }

    @AfterEach
    void closeAllocator() {
        allocator.close();
    }

    static Schema arrowSchema() {
        Field item = new Field("item", FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)), null);
        return new Schema(List.of(
                new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
                Field.nullable("name", ArrowType.Utf8.INSTANCE),
                Field.nullable("score", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
                new Field("embedding", FieldType.notNullable(new ArrowType.FixedSizeList(DIM)), List.of(item))));
    }

    static String name(long id) {
        return id % 5 == 0 ? null : "name-" + id;
    }

    static float element(long id, int j) {
        return id * 0.25f + j;
    }

    /** Rows {@code [start, end)} as an Arrow stream (IPC round trip, so the reader owns its data). */
    private ArrowReader rows(long start, long end) throws Exception {
        return rows(start, end, arrowSchema());
    }

    /** Rows {@code [start, end)} of the columns of {@code schema} (ours, or a prefix of them). */
    private ArrowReader rows(long start, long end, Schema schema) throws Exception {
        return rows(allocator, start, end, schema);
    }

    static ArrowReader rows(BufferAllocator allocator, long start, long end, Schema schema) throws Exception {
        ByteArrayOutputStream ipc = new ByteArrayOutputStream();
        try (VectorSchemaRoot root = VectorSchemaRoot.create(schema, allocator);
                ArrowStreamWriter writer = new ArrowStreamWriter(root, null, ipc)) {
            writer.start();
            root.allocateNew();
            int n = (int) (end - start);
            BigIntVector ids = (BigIntVector) root.getVector("id");
            VarCharVector names = (VarCharVector) root.getVector("name");
            Float8Vector scores = (Float8Vector) root.getVector("score");
            FixedSizeListVector embeddings = (FixedSizeListVector) root.getVector("embedding");
            for (int i = 0; i < n; i++) {
                long id = start + i;
                ids.setSafe(i, id);
                String name = name(id);
                if (name == null) {
                    names.setNull(i);
                } else {
                    names.setSafe(i, name.getBytes(StandardCharsets.UTF_8));
                }
                scores.setSafe(i, id / 2.0);
                if (embeddings != null) {
                    embeddings.setNotNull(i);
                    for (int j = 0; j < DIM; j++) {
                        ((Float4Vector) embeddings.getDataVector()).setSafe(i * DIM + j, element(id, j));
                    }
                }
            }
            root.setRowCount(n);
            writer.writeBatch();
            writer.end();
        }
        return new ArrowStreamReader(new ByteArrayInputStream(ipc.toByteArray()), allocator);
    }

    @Test
    void icebergJavaReadsTablesWrittenByHyperStream() throws Exception {
        String location = dir.resolve("ours").toString();
        long first;
        long second;
        try (NativeTable table = NativeTable.create(location, arrowSchema(), Map.of("owner", "tests"), Map.of(), allocator)) {
            first = table.append(allocator, rows(0, 300));
            second = table.append(allocator, rows(300, 420));
            assertEquals(second, table.currentSnapshotId());
            assertEquals(List.of(first, second), table.snapshots().stream().map(NativeTable.SnapshotInfo::snapshotId).toList());
        }
        assertEquals("3", Files.readString(Path.of(location, "metadata", "version-hint.text")), "no trailing newline");

        Table iceberg = new HadoopTables(new Configuration()).load(location);
        assertEquals(second, iceberg.currentSnapshot().snapshotId());
        assertEquals("tests", iceberg.properties().get("owner"));
        Types.NestedField embedding = iceberg.schema().findField("embedding");
        assertEquals(Types.ListType.ofRequired(embedding.type().asListType().elementId(), Types.FloatType.get()),
                embedding.type());
        assertTrue(iceberg.schema().findField("id").isRequired());

        Map<Long, Record> rows = read(IcebergGenerics.read(iceberg).build());
        assertEquals(420, rows.size());
        for (long id = 0; id < 420; id++) {
            Record row = rows.get(id);
            assertEquals(name(id), row.getField("name"));
            assertEquals(id / 2.0, row.getField("score"));
            List<?> vector = (List<?>) row.getField("embedding");
            for (int j = 0; j < DIM; j++) {
                assertEquals(element(id, j), vector.get(j));
            }
        }
        assertEquals(300, read(IcebergGenerics.read(iceberg).useSnapshot(first).build()).size());
        // Manifest statistics made it across: Iceberg's own planner prunes by our id bounds.
        assertEquals(120, read(IcebergGenerics.read(iceberg)
                .where(org.apache.iceberg.expressions.Expressions.greaterThanOrEqual("id", 300L)).build()).size());
    }

    /**
     * A task's writer fed batch by batch keeps a bounded buffer: it rolls data files at the table's
     * target size, Java's buffers are free after each batch, and Iceberg Java reads every row of the
     * files it rolled. Bad batches and limits fail as invalid arguments; an aborted writer removes
     * its files.
     */
    @Test
    void writersFedBatchByBatchRollFilesThatIcebergJavaReadsWhole() throws Exception {
        String location = dir.resolve("rolled").toString();
        int batches = 40;
        int rowsPerBatch = 5_000;
        try (NativeTable table = NativeTable.create(location, arrowSchema(),
                Map.of("write.target-file-size-bytes", String.valueOf(4 << 20)), Map.of(), allocator)) {
            String[] files;
            try (TableWriter writer = table.openWriter()) {
                for (int b = 0; b < batches; b++) {
                    try (ArrowReader reader = rows((long) b * rowsPerBatch, (long) (b + 1) * rowsPerBatch)) {
                        reader.loadNextBatch();
                        writer.write(allocator, reader.getVectorSchemaRoot());
                    }
                    assertEquals(0, allocator.getAllocatedMemory(), "the writer keeps no Java buffer");
                    assertTrue(writer.bufferedBytes() < 4 << 20, "what reaches the target is rolled: " + writer.bufferedBytes());
                }
                files = writer.finish();
            }
            assertTrue(files.length >= 3, files.length + " files");
            table.commitAppend(files);

            try (TableWriter aborted = table.openWriter()) {
                for (int b = 0; b < 4; b++) {
                    try (ArrowReader reader = rows(1_000_000L + (long) b * rowsPerBatch, 1_000_000L + (long) (b + 1) * rowsPerBatch)) {
                        reader.loadNextBatch();
                        aborted.write(allocator, reader.getVectorSchemaRoot());
                    }
                    if (b == 0) {
                        assertTrue(aborted.bufferedBytes() > 0, "one batch is under the target");
                        assertTrue(NativeLibrary.writeMemoryHeld() >= aborted.bufferedBytes(), "the process budget counts it");
                    }
                }
                aborted.abort();
            }
            try (TableWriter bad = table.openWriter();
                    VectorSchemaRoot root = VectorSchemaRoot.create(new Schema(List.of(Field.nullable("id", ArrowType.Utf8.INSTANCE))), allocator)) {
                root.allocateNew();
                ((VarCharVector) root.getVector("id")).setSafe(0, "not a number".getBytes(StandardCharsets.UTF_8));
                root.setRowCount(1);
                assertThrows(InvalidArgumentException.class, () -> bad.write(allocator, root));
                assertThrows(InvalidArgumentException.class, bad::finish, "a writer that failed part way can only be aborted");
                bad.abort();
            }
        }
        assertThrows(InvalidArgumentException.class, () -> NativeLibrary.setWriteMemoryLimit(1024));
        Table iceberg = new HadoopTables(new Configuration()).load(location);
        Map<Long, Record> rows = read(IcebergGenerics.read(iceberg).build());
        assertEquals(batches * rowsPerBatch, rows.size(), "the aborted writer's rows are not there");
        for (long id = 0; id < (long) batches * rowsPerBatch; id += 997) {
            assertEquals(name(id), rows.get(id).getField("name"));
        }
        try (var data = Files.walk(Path.of(location, "data"))) {
            assertEquals(countFiles(iceberg), data.filter(p -> p.toString().endsWith(".parquet")).count(),
                    "no file of the aborted writers is left");
        }
    }

    private static long countFiles(Table iceberg) throws java.io.IOException {
        try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks = iceberg.newScan().planFiles()) {
            long n = 0;
            for (org.apache.iceberg.FileScanTask ignored : tasks) {
                n++;
            }
            return n;
        }
    }

    @Test
    void pyicebergStaticTableReadsTablesWrittenByHyperStream() throws Exception {
        String python = System.getProperty("hyperstream.test.python", "");
        org.junit.jupiter.api.Assumptions.assumeFalse(python.isBlank(),
                "hyperstream.test.python is not set: ./build-connectors.sh test sets it to a Python with pyiceberg");
        String location = dir.resolve("for-python").toString();
        long first;
        try (NativeTable table = NativeTable.create(location, arrowSchema(), Map.of(), Map.of(), allocator)) {
            first = table.append(allocator, rows(0, 300));
            table.append(allocator, rows(300, 420));
        }
        String metadata = Path.of(location, "metadata", "v3.metadata.json").toString();
        List<Map<String, Object>> rows = pyiceberg(python, metadata, null);
        assertEquals(420, rows.size());
        for (int id = 0; id < 420; id++) {
            Map<String, Object> row = rows.get(id);
            assertEquals((long) id, ((Number) row.get("id")).longValue());
            assertEquals(name(id), row.get("name"));
            assertEquals(id / 2.0, ((Number) row.get("score")).doubleValue());
            List<?> vector = (List<?>) row.get("embedding");
            for (int j = 0; j < DIM; j++) {
                assertEquals(element(id, j), ((Number) vector.get(j)).floatValue());
            }
        }
        assertEquals(300, pyiceberg(python, metadata, first).size(), "pyiceberg travels to our first snapshot");
    }

    /** The rows pyiceberg's StaticTable reads from {@code metadata} (at {@code snapshot} when given). */
    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> pyiceberg(String python, String metadata, Long snapshot) throws Exception {
        Path script = Path.of(System.getProperty("hyperstream.repo.root", "../.."), "tests", "pyiceberg_read.py");
        List<String> command = new java.util.ArrayList<>(List.of(python, script.toString(), metadata));
        if (snapshot != null) {
            command.add(snapshot.toString());
        }
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, process.waitFor(), "pyiceberg failed:\n" + output);
        String json = output.lines().filter(l -> l.startsWith("{")).reduce((a, b) -> b).orElseThrow();
        Map<String, Object> parsed = new com.fasterxml.jackson.databind.ObjectMapper().readValue(json, Map.class);
        return (List<Map<String, Object>>) parsed.get("rows");
    }

    @Test
    void icebergJavaReadsOurOverwritesAndTruncates() throws Exception {
        String location = dir.resolve("overwritten").toString();
        long full;
        long replaced;
        try (NativeTable table = NativeTable.create(location, arrowSchema(), Map.of(), Map.of(), allocator)) {
            table.append(allocator, rows(0, 100));
            full = table.append(allocator, rows(100, 150));
            replaced = table.commitOverwrite(table.writeDataFiles(allocator, rows(1000, 1010)));
            table.commitOverwrite(new String[0]);
        }
        Table iceberg = new HadoopTables(new Configuration()).load(location);
        assertEquals(0, read(IcebergGenerics.read(iceberg).build()).size(), "the truncate left no rows");
        assertEquals(java.util.stream.LongStream.range(1000, 1010).boxed().collect(java.util.stream.Collectors.toSet()),
                read(IcebergGenerics.read(iceberg).useSnapshot(replaced).build()).keySet());
        assertEquals(150, read(IcebergGenerics.read(iceberg).useSnapshot(full).build()).size());
        assertEquals("overwrite", iceberg.snapshot(replaced).operation());
        // Iceberg's own change planning sees which files each overwrite removed.
        int removed = 0;
        for (DataFile ignored : iceberg.snapshot(replaced).removedDataFiles(iceberg.io())) {
            removed++;
        }
        assertEquals(2, removed);
    }

    @Test
    void icebergJavaAndPyicebergApplyOurPositionDeletes() throws Exception {
        String location = dir.resolve("deleted").toString();
        long full;
        long deleted;
        try (NativeTable table = NativeTable.create(location, arrowSchema(), Map.of(), Map.of(), allocator)) {
            table.append(allocator, rows(0, 300));
            full = table.append(allocator, rows(300, 420));
            NativeTable.DeleteResult result = table.deleteWhere(Filters.or(
                    Filters.and(Filters.ge("id", 100), Filters.lt("id", 150)), Filters.isNull("name")));
            assertEquals(50 + 84 - 10, result.deletedRows(), "ids 100..149, and every fifth id outside them");
            deleted = result.snapshotId();
            assertEquals(-1, table.deleteWhere(Filters.eq("id", 100)).snapshotId(), "nothing left to delete");
            assertEquals(96, table.deleteWhere(Filters.ge("id", 300)).deletedRows(), "ids 300..419 but the null names");
        }
        java.util.Set<Long> left = java.util.stream.LongStream.range(0, 300)
                .filter(id -> id % 5 != 0 && (id < 100 || id >= 150)).boxed().collect(java.util.stream.Collectors.toSet());
        Table iceberg = new HadoopTables(new Configuration()).load(location);
        assertEquals(left, read(IcebergGenerics.read(iceberg).build()).keySet());
        assertEquals(420, read(IcebergGenerics.read(iceberg).useSnapshot(full).build()).size());
        assertEquals(left.size() + 96, read(IcebergGenerics.read(iceberg).useSnapshot(deleted).build()).size());
        assertEquals("delete", iceberg.snapshot(deleted).operation());
        int deleteFiles = 0;
        for (org.apache.iceberg.DeleteFile file : iceberg.snapshot(deleted).addedDeleteFiles(iceberg.io())) {
            assertEquals(org.apache.iceberg.FileContent.POSITION_DELETES, file.content());
            deleteFiles++;
        }
        assertEquals(2, deleteFiles, "one position delete file per data file deleted from");

        assertPyicebergReadsIds(iceberg, left);
    }

    /**
     * A row-level change (what UPDATE and MERGE commit): rows deleted by their {@code _file} and
     * {@code _pos}, new rows added, one snapshot; Iceberg Java and pyiceberg read the same rows.
     */
    @Test
    void icebergJavaAndPyicebergReadOurRowLevelChanges() throws Exception {
        for (String version : new String[] {"2", "3"}) {
            String location = dir.resolve("changed-v" + version).toString();
            java.util.Set<Long> left = new java.util.TreeSet<>();
            try (NativeTable table = NativeTable.create(location, arrowSchema(), Map.of("format-version", version), Map.of(), allocator)) {
                table.append(allocator, rows(0, 300));
                table.append(allocator, rows(300, 420));
                long read = table.currentSnapshotId();
                RowDeletes deletes = new RowDeletes();
                try (ArrowReader scan = table.scan(allocator, TableVersion.CURRENT, new String[] {"id", "_file", "_pos"}, 64)) {
                    while (scan.loadNextBatch()) {
                        VectorSchemaRoot root = scan.getVectorSchemaRoot();
                        BigIntVector ids = (BigIntVector) root.getVector("id");
                        VarCharVector files = (VarCharVector) root.getVector("_file");
                        BigIntVector positions = (BigIntVector) root.getVector("_pos");
                        for (int i = 0; i < root.getRowCount(); i++) {
                            if (ids.get(i) % 7 == 3 || ids.get(i) >= 400) {
                                deletes.add(new String(files.get(i), StandardCharsets.UTF_8), positions.get(i));
                            } else {
                                left.add(ids.get(i));
                            }
                        }
                    }
                }
                String[] added = table.writeDataFiles(allocator, rows(1000, 1050));
                long committed = table.commitRowChanges(read, "merge", null, deletes.fragments().toArray(String[]::new), added);
                assertTrue(committed > 0);
                java.util.stream.LongStream.range(1000, 1050).forEach(left::add);
                // A second change that read before the first and deletes rows of the same files conflicts.
                RowDeletes stale = new RowDeletes();
                try (ArrowReader scan = table.scan(allocator, TableVersion.snapshot(read), new String[] {"_file"}, 1)) {
                    scan.loadNextBatch();
                    stale.add(new String(((VarCharVector) scan.getVectorSchemaRoot().getVector("_file")).get(0), StandardCharsets.UTF_8), 1);
                }
                long before = filesUnder(location);
                String[] staleFiles = table.writeDataFiles(allocator, rows(2000, 2010));
                assertThrows(CommitConflictException.class, () -> table.commitRowChanges(read, "merge", null, stale.fragments().toArray(String[]::new), staleFiles));
                assertEquals(before, filesUnder(location), "a refused change leaves none of its files");
            }
            Table iceberg = new HadoopTables(new Configuration()).load(location);
            assertEquals(left, read(IcebergGenerics.read(iceberg).build()).keySet(), "format version " + version);
            assertEquals("overwrite", iceberg.currentSnapshot().operation());
            assertPyicebergReadsIds(iceberg, left);
        }
    }

    /** The metadata tables say what Iceberg Java sees: snapshots, history, files, manifests, partitions, refs, properties. */
    @Test
    void metadataTablesAgreeWithIcebergJava() throws Exception {
        String location = dir.resolve("described").toString();
        try (NativeTable table = NativeTable.create(location, arrowSchema(),
                Map.of(NativeTable.PARTITIONING, "bucket(id, 4)", "write.target-file-size-bytes", "1048576"), Map.of(), allocator)) {
            table.append(allocator, rows(0, 300));
            table.append(allocator, rows(300, 420));
            table.deleteWhere(Filters.lt("id", 50));
            table.createVectorIndex("embedding", "{\"metric\":\"l2\",\"m\":8}");
            Table iceberg = new HadoopTables(new Configuration()).load(location);
            List<Object[]> snapshots = metadataRows(table, "snapshots");
            List<org.apache.iceberg.Snapshot> theirs = new java.util.ArrayList<>();
            iceberg.snapshots().forEach(theirs::add);
            assertEquals(theirs.stream().map(org.apache.iceberg.Snapshot::snapshotId).toList(), snapshots.stream().map(r -> r[1]).toList());
            assertEquals(theirs.stream().map(org.apache.iceberg.Snapshot::parentId).toList(), snapshots.stream().map(r -> r[2]).toList());
            assertEquals(theirs.stream().map(org.apache.iceberg.Snapshot::operation).toList(), snapshots.stream().map(r -> r[3]).toList());
            assertEquals(iceberg.history().stream().map(org.apache.iceberg.HistoryEntry::snapshotId).toList(),
                    metadataRows(table, "history").stream().map(r -> r[1]).toList());
            // Files: data files and delete files, with their row counts.
            List<org.apache.iceberg.FileScanTask> tasks = new java.util.ArrayList<>();
            try (CloseableIterable<org.apache.iceberg.FileScanTask> planned = iceberg.newScan().planFiles()) {
                planned.forEach(tasks::add);
            }
            List<Object[]> files = metadataRows(table, "files");
            assertEquals(tasks.size(), files.stream().filter(r -> (int) r[0] == 0).count());
            assertEquals(tasks.stream().mapToLong(t -> t.file().recordCount()).sum(),
                    files.stream().filter(r -> (int) r[0] == 0).mapToLong(r -> (long) r[5]).sum());
            java.util.Set<String> deletes = new java.util.TreeSet<>();
            tasks.forEach(t -> t.deletes().forEach(d -> deletes.add(d.location())));
            assertEquals(deletes, files.stream().filter(r -> (int) r[0] == 1).map(r -> (String) r[1]).collect(java.util.stream.Collectors.toCollection(java.util.TreeSet::new)));
            assertEquals(iceberg.currentSnapshot().allManifests(iceberg.io()).stream().map(org.apache.iceberg.ManifestFile::path).sorted().toList(),
                    metadataRows(table, "manifests").stream().map(r -> (String) r[1]).sorted().toList());
            // Partitions: one row per bucket, rows as Iceberg Java counts them.
            Map<Integer, Long> rowsByBucket = new TreeMap<>();
            tasks.forEach(t -> rowsByBucket.merge(t.file().partition().get(0, Integer.class), t.file().recordCount(), Long::sum));
            Map<Integer, Long> ours = new TreeMap<>();
            for (Object[] r : metadataRows(table, "partitions")) {
                String partition = (String) r[0];
                ours.put(Integer.parseInt(partition.substring(partition.indexOf('=') + 1, partition.length() - 1)), (long) r[2]);
            }
            assertEquals(rowsByBucket, ours);
            assertEquals(iceberg.refs().entrySet().stream().map(e -> e.getKey() + "=" + e.getValue().snapshotId()).sorted().toList(),
                    metadataRows(table, "refs").stream().map(r -> r[0] + "=" + r[2]).sorted().toList());
            assertEquals(new TreeMap<>(iceberg.properties()), metadataRows(table, "properties").stream()
                    .collect(java.util.stream.Collectors.toMap(r -> (String) r[0], r -> (String) r[1], (a, b) -> a, TreeMap::new)));
            // Our own: every data file's index files, each named with its size.
            List<Object[]> indexes = metadataRows(table, "indexes");
            for (String kind : List.of("vector sidecar", "hnsw graph", "ndv sketch")) {
                assertEquals(tasks.size(), indexes.stream().filter(r -> r[2].equals(kind)).count(), kind);
            }
            assertTrue(indexes.stream().allMatch(r -> (long) r[4] > 0));
            InvalidArgumentException bad = assertThrows(InvalidArgumentException.class, () -> metadataRows(table, "nope"));
            assertTrue(bad.getMessage().contains("snapshots, history"), bad.getMessage());
        }
    }

    private static long filesUnder(String location) throws java.io.IOException {
        try (var walk = java.nio.file.Files.walk(java.nio.file.Path.of(location, "data"))) {
            return walk.filter(java.nio.file.Files::isRegularFile).count();
        }
    }

    /** The rows of a metadata table, each as its column values. */
    private List<Object[]> metadataRows(NativeTable table, String name) throws Exception {
        List<Object[]> rows = new java.util.ArrayList<>();
        try (ArrowReader reader = table.metadataTable(allocator, name)) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                for (int i = 0; i < root.getRowCount(); i++) {
                    Object[] row = new Object[root.getFieldVectors().size()];
                    for (int c = 0; c < row.length; c++) {
                        Object value = root.getVector(c).getObject(i);
                        row[c] = value instanceof org.apache.arrow.vector.util.Text text ? text.toString() : value;
                    }
                    rows.add(row);
                }
            }
        }
        return rows;
    }

    @Test
    void icebergJavaReadsOurFormatVersion3TablesRowLineageAndDeletionVectors() throws Exception {
        String location = dir.resolve("v3").toString();
        long deleted;
        Map<Long, Long> ours;
        try (NativeTable table = NativeTable.create(location, arrowSchema(), Map.of("format-version", "3"), Map.of(), allocator)) {
            table.append(allocator, rows(0, 300));
            table.append(allocator, rows(300, 420));
            deleted = table.deleteWhere(Filters.or(Filters.and(Filters.ge("id", 100), Filters.lt("id", 150)), Filters.isNull("name")))
                    .snapshotId();
            ours = rowIds(table.scan(allocator, TableVersion.CURRENT, new String[] {"id", "_row_id"}, 64));
        }
        java.util.Set<Long> left = java.util.stream.LongStream.range(0, 420)
                .filter(id -> id % 5 != 0 && (id < 100 || id >= 150)).boxed().collect(java.util.stream.Collectors.toSet());
        Table iceberg = new HadoopTables(new Configuration()).load(location);
        assertEquals(3, ((org.apache.iceberg.HasTableOperations) iceberg).operations().current().formatVersion());
        assertEquals(left, read(IcebergGenerics.read(iceberg).build()).keySet());
        int vectors = 0;
        for (org.apache.iceberg.DeleteFile file : iceberg.snapshot(deleted).addedDeleteFiles(iceberg.io())) {
            assertTrue(org.apache.iceberg.util.ContentFileUtil.isDV(file), file.location());
            vectors++;
        }
        assertEquals(2, vectors, "one deletion vector per data file deleted from");
        // Row lineage as Iceberg Java sees it: each snapshot's first row id and rows, each file's first row id.
        List<org.apache.iceberg.Snapshot> history = new java.util.ArrayList<>();
        iceberg.snapshots().forEach(history::add);
        assertEquals(List.of(0L, 300L), history.stream().limit(2).map(org.apache.iceberg.Snapshot::firstRowId).toList());
        assertEquals(List.of(300L, 120L), history.stream().limit(2).map(org.apache.iceberg.Snapshot::addedRows).toList());
        List<Long> firstRowIds = new java.util.ArrayList<>();
        try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks = iceberg.newScan().planFiles()) {
            tasks.forEach(t -> firstRowIds.add(t.file().firstRowId()));
        }
        firstRowIds.sort(null);
        assertEquals(List.of(0L, 300L), firstRowIds);
        // Every row's id, ours and Iceberg Java's: its position in the order rows were appended.
        assertEquals(left, ours.keySet());
        ours.forEach((id, rowId) -> assertEquals(id, rowId, "row id of " + id));
        assertEquals(ours, icebergRowIds(iceberg));

        // Compaction moves the rows; their ids move with them, for both readers.
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            assertEquals(2, table.rewriteDataFiles(10_000).filesRewritten());
            assertEquals(ours, rowIds(table.scan(allocator, TableVersion.CURRENT, new String[] {"id", "_row_id"}, 64)));
        }
        iceberg.refresh();
        assertEquals(left, read(IcebergGenerics.read(iceberg).build()).keySet());
        assertEquals(ours, icebergRowIds(iceberg));
        assertPyicebergReadsIds(iceberg, left);
    }

    @Test
    void hyperStreamReadsIcebergJavasFormatVersion3TablesAndTheirDeletionVectors() throws Exception {
        String location = dir.resolve("their-v3").toString();
        org.apache.iceberg.Schema schema = theirSchema();
        Table iceberg = new HadoopTables(new Configuration()).create(schema, PartitionSpec.unpartitioned(),
                Map.of("format-version", "3"), location);
        DataFile first = writeWithIceberg(iceberg, location + "/data/first.parquet", 0, 100);
        iceberg.newAppend().appendFile(first).commit();
        iceberg.newAppend().appendFile(writeWithIceberg(iceberg, location + "/data/second.parquet", 100, 150)).commit();
        org.apache.iceberg.deletes.BaseDVFileWriter dvs = new org.apache.iceberg.deletes.BaseDVFileWriter(
                org.apache.iceberg.io.OutputFileFactory.builderFor(iceberg, 1, 1).format(FileFormat.PUFFIN).build(), path -> null);
        try (dvs) {
            for (long position : new long[] {0, 7, 99}) {
                dvs.delete(first.location(), position, iceberg.spec(), null);
            }
        }
        org.apache.iceberg.RowDelta delta = iceberg.newRowDelta();
        dvs.result().deleteFiles().forEach(delta::addDeletes);
        delta.commit();
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            Map<Long, Long> rowIds = rowIds(table.scan(allocator, TableVersion.CURRENT, new String[] {"id", "_row_id"}, 64));
            assertEquals(147, rowIds.size());
            assertTrue(!rowIds.containsKey(0L) && !rowIds.containsKey(7L) && !rowIds.containsKey(99L));
            rowIds.forEach((id, rowId) -> assertEquals(id, rowId, "their row ids, inherited from their manifests"));
            // Our delete folds their vector into ours; our append takes ids after theirs.
            assertEquals(2, table.deleteWhere(Filters.in("id", List.of(7L, 8L, 120L))).deletedRows());
            table.append(allocator, rows(500, 510, new Schema(arrowSchema().getFields().subList(0, 3))));
        }
        iceberg.refresh();
        Map<Long, Record> rows = read(IcebergGenerics.read(iceberg).build());
        assertEquals(155, rows.size());
        assertTrue(!rows.containsKey(8L) && !rows.containsKey(120L) && !rows.containsKey(0L) && rows.containsKey(505L));
        assertEquals(150L, iceberg.currentSnapshot().firstRowId());
        for (org.apache.iceberg.DeleteFile file : iceberg.currentSnapshot().removedDeleteFiles(iceberg.io())) {
            assertTrue(org.apache.iceberg.util.ContentFileUtil.isDV(file), "their vector, replaced by ours");
        }
        Map<Long, Long> theirs = icebergRowIds(iceberg);
        assertEquals(155L, theirs.get(505L));
    }

    /** pyiceberg's StaticTable of the table's current metadata reads exactly the rows {@code ids} (when a Python with pyiceberg is given). */
    private static void assertPyicebergReadsIds(Table iceberg, java.util.Set<Long> ids) throws Exception {
        String python = System.getProperty("hyperstream.test.python", "");
        if (!python.isBlank()) {
            String metadata = ((org.apache.iceberg.HasTableOperations) iceberg).operations().current().metadataFileLocation().replaceFirst("^file:", "");
            assertEquals(ids, pyiceberg(python, metadata, null).stream()
                    .map(r -> ((Number) r.get("id")).longValue()).collect(java.util.stream.Collectors.toSet()));
        }
    }

    /** id -> _row_id of a native read of those two columns. */
    private static Map<Long, Long> rowIds(ArrowReader reader) throws Exception {
        Map<Long, Long> rows = new TreeMap<>();
        try (reader) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                BigIntVector ids = (BigIntVector) root.getVector("id");
                BigIntVector rowIds = (BigIntVector) root.getVector("_row_id");
                for (int i = 0; i < root.getRowCount(); i++) {
                    rows.put(ids.get(i), rowIds.get(i));
                }
            }
        }
        return rows;
    }

    /** id -> _row_id as Iceberg Java's generic reader reads them. */
    private static Map<Long, Long> icebergRowIds(Table iceberg) throws Exception {
        org.apache.iceberg.Schema projection = new org.apache.iceberg.Schema(iceberg.schema().findField("id"),
                org.apache.iceberg.MetadataColumns.ROW_ID);
        Map<Long, Long> rows = new TreeMap<>();
        try (CloseableIterable<Record> records = IcebergGenerics.read(iceberg).project(projection).build()) {
            for (Record record : records) {
                rows.put((Long) record.getField("id"), (Long) record.getField("_row_id"));
            }
        }
        return rows;
    }

    /**
     * Iceberg's own writers delete rows of several data files with one delete file (format version
     * 3: one Puffin file holding a deletion vector per data file; 2 with {@code
     * write.delete.granularity=partition}: one position delete file of the partition). Our delete,
     * and our compaction after it, keep what that file deletes from the files they leave alone.
     */
    @Test
    void ourChangesKeepIcebergJavasDeleteFilesThatServeSeveralDataFiles() throws Exception {
        for (String version : List.of("2", "3")) {
            String location = dir.resolve("shared-deletes-v" + version).toString();
            org.apache.iceberg.Schema schema = theirSchema();
            Table iceberg = new HadoopTables(new Configuration()).create(schema, PartitionSpec.unpartitioned(),
                    Map.of("format-version", version, "write.delete.mode", "merge-on-read"), location);
            DataFile first = writeWithIceberg(iceberg, location + "/data/first.parquet", 1, 4);
            DataFile second = writeWithIceberg(iceberg, location + "/data/second.parquet", 4, 7);
            iceberg.newAppend().appendFile(first).commit();
            iceberg.newAppend().appendFile(second).commit();
            // DELETE FROM t WHERE id IN (1, 4), as Iceberg writes it: one delete file for both data files.
            org.apache.iceberg.RowDelta delta = iceberg.newRowDelta();
            if (version.equals("3")) {
                org.apache.iceberg.deletes.BaseDVFileWriter dvs = new org.apache.iceberg.deletes.BaseDVFileWriter(
                        org.apache.iceberg.io.OutputFileFactory.builderFor(iceberg, 1, 1).format(FileFormat.PUFFIN).build(), path -> null);
                try (dvs) {
                    dvs.delete(first.location(), 0, iceberg.spec(), null);
                    dvs.delete(second.location(), 0, iceberg.spec(), null);
                }
                assertEquals(1, dvs.result().deleteFiles().stream().map(org.apache.iceberg.DeleteFile::location).distinct().count());
                dvs.result().deleteFiles().forEach(delta::addDeletes);
            } else {
                org.apache.iceberg.deletes.PositionDeleteWriter<Record> deletes = new GenericAppenderFactory(schema).newPosDeleteWriter(
                        EncryptedFiles.plainAsEncryptedOutput(iceberg.io().newOutputFile(location + "/data/partition-deletes.parquet")),
                        FileFormat.PARQUET, null);
                try (deletes) {
                    deletes.write(org.apache.iceberg.deletes.PositionDelete.<Record>create().set(first.location(), 0L));
                    deletes.write(org.apache.iceberg.deletes.PositionDelete.<Record>create().set(second.location(), 0L));
                }
                delta.addDeletes(deletes.toDeleteFile());
            }
            delta.commit();
            try (NativeTable table = NativeTable.load(location, Map.of())) {
                assertEquals(1, table.deleteWhere(Filters.eq("id", 2L)).deletedRows());
                assertEquals(java.util.Set.of(3L, 5L, 6L), readNative(table.scan(allocator, TableVersion.CURRENT, null, 16)).keySet(),
                        "format version " + version);
            }
            iceberg.refresh();
            assertEquals(java.util.Set.of(3L, 5L, 6L), read(IcebergGenerics.read(iceberg).build()).keySet(), "format version " + version);
            try (NativeTable table = NativeTable.load(location, Map.of())) {
                table.rewriteDataFiles(1000);
                assertEquals(java.util.Set.of(3L, 5L, 6L), readNative(table.scan(allocator, TableVersion.CURRENT, null, 16)).keySet());
            }
            iceberg.refresh();
            assertEquals(java.util.Set.of(3L, 5L, 6L), read(IcebergGenerics.read(iceberg).build()).keySet(), "after our compaction");
        }
    }

    @Test
    void hyperStreamAppliesIcebergJavasPositionAndEqualityDeletes() throws Exception {
        String location = dir.resolve("their-deletes").toString();
        org.apache.iceberg.Schema schema = theirSchema();
        Table iceberg = new HadoopTables(new Configuration()).create(schema, PartitionSpec.unpartitioned(), location);
        DataFile rows = writeWithIceberg(iceberg, location + "/data/rows.parquet", 0, 100);
        iceberg.newAppend().appendFile(rows).commit();
        org.apache.iceberg.deletes.PositionDeleteWriter<Record> deletes = new GenericAppenderFactory(schema).newPosDeleteWriter(
                EncryptedFiles.plainAsEncryptedOutput(iceberg.io().newOutputFile(location + "/data/deletes.parquet")),
                FileFormat.PARQUET, null);
        try (deletes) {
            for (long position : new long[] {0, 7, 8, 99}) {
                deletes.write(org.apache.iceberg.deletes.PositionDelete.<Record>create().set(rows.location(), position));
            }
        }
        iceberg.newRowDelta().addDeletes(deletes.toDeleteFile()).commit();
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            Map<Long, Object[]> read = readNative(table.scan(allocator, TableVersion.CURRENT, null, 16));
            assertEquals(96, read.size());
            assertTrue(!read.containsKey(7L) && !read.containsKey(99L) && read.containsKey(9L), read.keySet().toString());
            // Our delete on top of theirs keeps both.
            assertEquals(2, table.deleteWhere(Filters.in("id", List.of(7L, 50L, 51L))).deletedRows());
            assertEquals(94, readNative(table.scan(allocator, TableVersion.CURRENT, null, 16)).size());
        }
        iceberg.refresh();
        assertEquals(94, read(IcebergGenerics.read(iceberg).build()).size());

        org.apache.iceberg.deletes.EqualityDeleteWriter<Record> equality = new GenericAppenderFactory(schema, PartitionSpec.unpartitioned(),
                new int[] {1}, schema.select("id"), null).newEqDeleteWriter(
                EncryptedFiles.plainAsEncryptedOutput(iceberg.io().newOutputFile(location + "/data/eq.parquet")), FileFormat.PARQUET, null);
        try (equality) {
            GenericRecord key = GenericRecord.create(schema.select("id"));
            key.setField("id", 3L);
            equality.write(key);
        }
        iceberg.newRowDelta().addDeletes(equality.toDeleteFile()).commit();
        // Their equality delete (Flink's upserts write these) applies to every read of ours, and our
        // commits keep it: Iceberg Java reads the same rows after our delete.
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            Map<Long, Object[]> read = readNative(table.scan(allocator, TableVersion.CURRENT, null, 16));
            assertEquals(93, read.size());
            assertTrue(!read.containsKey(3L) && read.containsKey(4L), read.keySet().toString());
            assertEquals(93L, table.rowCount(TableVersion.CURRENT));
            assertEquals(1, table.deleteWhere(Filters.in("id", List.of(3L, 4L))).deletedRows());
        }
        iceberg.refresh();
        Map<Long, Record> theirs = read(IcebergGenerics.read(iceberg).build());
        assertEquals(92, theirs.size());
        assertTrue(!theirs.containsKey(3L) && !theirs.containsKey(4L));
    }

    @Test
    void icebergJavaReadsOurEvolvedSchemas() throws Exception {
        String location = dir.resolve("evolved").toString();
        try (NativeTable table = NativeTable.create(location, arrowSchema(), Map.of(), Map.of(), allocator)) {
            table.append(allocator, rows(0, 10));
            table.addColumn(allocator, Field.nullable("rank", new ArrowType.Int(32, true)));
            table.renameColumn("score", "half");
            table.dropColumn("name");
            assertEquals(List.of("id", "half", "embedding", "rank"),
                    table.schema(allocator).getFields().stream().map(Field::getName).toList());
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
                    () -> table.addColumn(allocator, new Field("strict", FieldType.notNullable(new ArrowType.Int(64, true)), null)));
            assertTrue(e.getMessage().contains("must be nullable"), e.getMessage());
            NotFoundException missing = assertThrows(NotFoundException.class, () -> table.dropColumn("nope"));
            assertTrue(missing.getMessage().contains("nope"), missing.getMessage());
        }
        Table iceberg = new HadoopTables(new Configuration()).load(location);
        assertEquals(List.of("id", "half", "embedding", "rank"),
                iceberg.schema().columns().stream().map(Types.NestedField::name).toList());
        Map<Long, Record> rows = read(IcebergGenerics.read(iceberg).build());
        assertEquals(10, rows.size());
        assertEquals(3.5, rows.get(7L).getField("half"));
        assertEquals(null, rows.get(7L).getField("rank"));
    }

    /**
     * Parquet Java writes a checksum of every page; a value damaged inside a page of a file it wrote
     * is a {@link CorruptDataException} naming the file, not a wrong value read.
     */
    @Test
    void damagedPagesOfFilesWithChecksumsAreCorruptDataNotWrongValues() throws Exception {
        String location = dir.resolve("checksummed").toString();
        Table iceberg = new HadoopTables(new Configuration()).create(theirSchema(), PartitionSpec.unpartitioned(),
                Map.of("write.parquet.compression-codec", "uncompressed"), location);
        String path = location + "/data/file-0.parquet";
        iceberg.newAppend().appendFile(writeWithIceberg(iceberg, path, 0, 100)).commit();
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            assertEquals(100, readNative(table.scan(allocator, TableVersion.CURRENT, null, 64)).size(), "the whole file reads");
        }
        // Score 37.5 (row 75) is stored as its eight bytes; one bit of it flipped.
        byte[] bytes = Files.readAllBytes(Path.of(path));
        byte[] value = java.nio.ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN).putDouble(37.5).array();
        int at = -1;
        for (int i = 0; i + 8 <= bytes.length && at < 0; i++) {
            if (java.util.Arrays.equals(bytes, i, i + 8, value, 0, 8)) {
                at = i;
            }
        }
        assertTrue(at > 4, "the value is in a page");
        bytes[at] ^= 1;
        Files.write(Path.of(path), bytes);
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            CorruptDataException e = assertThrows(CorruptDataException.class, () -> readNative(table.scan(allocator, TableVersion.CURRENT, null, 64)));
            assertTrue(e.getMessage().contains("file-0.parquet") && e.getMessage().toLowerCase(java.util.Locale.ROOT).contains("crc"),
                    e.getMessage());
        }
    }

    @Test
    void hyperStreamReadsTablesWrittenByIcebergJava() throws Exception {
        String location = dir.resolve("theirs").toString();
        Table iceberg = new HadoopTables(new Configuration()).create(theirSchema(), PartitionSpec.unpartitioned(), location);
        for (int file = 0; file < 2; file++) {
            String path = location + "/data/file-" + file + ".parquet";
            iceberg.newAppend().appendFile(writeWithIceberg(iceberg, path, file * 100L, file * 100L + 100)).commit();
        }
        long firstSnapshot = iceberg.history().get(0).snapshotId();

        try (NativeTable table = NativeTable.load(location, Map.of())) {
            assertEquals(iceberg.currentSnapshot().snapshotId(), table.currentSnapshotId());
            Map<Long, Object[]> rows = readNative(table.scan(allocator, TableVersion.CURRENT, null, 64));
            assertEquals(200, rows.size());
            for (long id = 0; id < 200; id++) {
                assertEquals(name(id), rows.get(id)[0]);
                assertEquals(id / 2.0, rows.get(id)[1]);
            }
            assertEquals(100, readNative(table.scan(allocator, TableVersion.snapshot(firstSnapshot), null, 64)).size());
            // Our appends on top of Iceberg Java's commits, and Iceberg Java reads them.
            Schema ours = table.schema(allocator);
            assertEquals(List.of("id", "name", "score"), ours.getFields().stream().map(Field::getName).toList());
        }
    }

    @Test
    void icebergJavaReadsOurPartitionedSortedTablesAndPrunesByOurPartitionValues() throws Exception {
        String location = dir.resolve("partitioned").toString();
        try (NativeTable table = NativeTable.create(location, arrowSchema(),
                Map.of(NativeTable.PARTITIONING, "bucket(id, 4), truncate(name, 6)", NativeTable.SORTED_BY, "score DESC"), Map.of(), allocator)) {
            assertEquals(List.of("bucket(id, 4)", "truncate(name, 6)"), table.partitioning());
            assertEquals(List.of("score DESC NULLS LAST"), table.sortOrder());
            table.append(allocator, rows(0, 300));
            table.append(allocator, rows(300, 420));
            assertEquals(2, table.deleteWhere(Filters.in("id", List.of(17L, 18L))).deletedRows());
        }
        Table iceberg = new HadoopTables(new Configuration()).load(location);
        PartitionSpec expected = PartitionSpec.builderFor(iceberg.schema()).bucket("id", 4).truncate("name", 6).build();
        assertTrue(expected.compatibleWith(iceberg.spec()), iceberg.spec().toString());
        assertEquals("score", iceberg.schema().findColumnName(iceberg.sortOrder().fields().get(0).sourceId()));
        assertEquals(org.apache.iceberg.SortDirection.DESC, iceberg.sortOrder().fields().get(0).direction());
        Map<Long, Record> rows = read(IcebergGenerics.read(iceberg).build());
        assertEquals(418, rows.size());
        assertTrue(!rows.containsKey(17L) && !rows.containsKey(18L) && rows.containsKey(19L));
        for (long id : new long[] {0, 1, 299, 419}) {
            assertEquals(name(id), rows.get(id).getField("name"));
            assertEquals(id / 2.0, rows.get(id).getField("score"));
        }
        // Iceberg's planner prunes by the partition values we wrote: id = 42 plans only files of its bucket.
        int bucket = org.apache.iceberg.transforms.Transforms.bucket(4).bind(Types.LongType.get()).apply(42L);
        int all = 0;
        int planned = 0;
        try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks = iceberg.newScan().planFiles()) {
            for (org.apache.iceberg.FileScanTask task : tasks) {
                all++;
            }
        }
        try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks = iceberg.newScan()
                .filter(org.apache.iceberg.expressions.Expressions.equal("id", 42L)).planFiles()) {
            for (org.apache.iceberg.FileScanTask task : tasks) {
                assertEquals(bucket, task.file().partition().get(0, Integer.class));
                planned++;
            }
        }
        assertTrue(planned > 0 && planned * 3 < all, planned + " of " + all + " files planned");
        assertEquals(1, read(IcebergGenerics.read(iceberg).where(org.apache.iceberg.expressions.Expressions.equal("id", 42L)).build()).size());

        String python = System.getProperty("hyperstream.test.python", "");
        if (!python.isBlank()) {
            String metadata = ((org.apache.iceberg.HasTableOperations) iceberg).operations().current().metadataFileLocation().replaceFirst("^file:", "");
            assertEquals(rows.keySet(), pyiceberg(python, metadata, null).stream()
                    .map(r -> ((Number) r.get("id")).longValue()).collect(java.util.stream.Collectors.toSet()));
        }
    }

    @Test
    void hyperStreamReadsAndWritesIcebergJavasPartitionedTables() throws Exception {
        String location = dir.resolve("their-partitions").toString();
        org.apache.iceberg.Schema schema = theirSchema();
        PartitionSpec spec = PartitionSpec.builderFor(schema).truncate("id", 100).build();
        Table iceberg = new HadoopTables(new Configuration()).create(schema, spec, location);
        for (long start : new long[] {0, 100}) {
            org.apache.iceberg.PartitionKey key = new org.apache.iceberg.PartitionKey(spec, schema);
            GenericRecord first = GenericRecord.create(schema);
            first.setField("id", start);
            key.partition(first);
            iceberg.newAppend().appendFile(writeWithIceberg(iceberg, location + "/data/id_trunc=" + start + "/f.parquet", start, start + 100, key)).commit();
        }
        Schema plain = new Schema(arrowSchema().getFields().subList(0, 3));
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            assertEquals(List.of("truncate(id, 100)"), table.partitioning());
            assertEquals(200, readNative(table.scan(allocator, TableVersion.CURRENT, null, 64)).size());
            // Our rows go to their spec's partitions; our deletes to the partitions of the rows they delete.
            table.append(allocator, rows(150, 260, plain));
            assertEquals(2, table.deleteWhere(Filters.in("id", List.of(5L, 250L))).deletedRows());
            String[] files = table.dataFiles(TableVersion.CURRENT, Filters.eq("id", 255L));
            assertEquals(1, files.length, String.join("\n", files));
            assertTrue(files[0].contains("id_trunc=200"), files[0]);
        }
        iceberg.refresh();
        Map<Long, Record> rows = read(IcebergGenerics.read(iceberg).build());
        assertEquals(260 - 2, rows.size(), "ids 0..259 (150..199 in both writers' files), less the two deleted");
        assertTrue(!rows.containsKey(5L) && !rows.containsKey(250L));
        int planned = 0;
        try (CloseableIterable<org.apache.iceberg.FileScanTask> tasks = iceberg.newScan()
                .filter(org.apache.iceberg.expressions.Expressions.equal("id", 160L)).planFiles()) {
            for (org.apache.iceberg.FileScanTask task : tasks) {
                assertEquals(100L, task.file().partition().get(0, Long.class));
                planned++;
            }
        }
        assertEquals(2, planned, "theirs and ours of partition 100");
    }

    /**
     * Iceberg Java writes a format version 3 table that uses what its metadata can hold (column docs
     * and defaults, a partition spec, a sort order, a branch and a tag with retention, statistics and
     * partition statistics files, properties); our append changes its metadata JSON only where an
     * append must (a new snapshot, its log entries, main's snapshot, the counters) and keeps every
     * other field as written, and Iceberg Java reads the result.
     */
    @Test
    void anAppendOfOursChangesIcebergJavasMetadataOnlyWhereAnAppendMust() throws Exception {
        String location = dir.resolve("their-metadata").toString();
        org.apache.iceberg.Schema schema = new org.apache.iceberg.Schema(
                Types.NestedField.required(1, "id", Types.LongType.get(), "the row's key"),
                Types.NestedField.optional(2, "name", Types.StringType.get()),
                Types.NestedField.optional(3, "score", Types.DoubleType.get()));
        PartitionSpec spec = PartitionSpec.builderFor(schema).truncate("id", 1000).build();
        org.apache.iceberg.SortOrder order = org.apache.iceberg.SortOrder.builderFor(schema).asc("id").desc("score").build();
        Table iceberg = new HadoopTables(new Configuration()).create(schema, spec, order,
                Map.of("format-version", "3", "owner.team", "them", "write.metadata.metrics.default", "full"), location);
        org.apache.iceberg.PartitionKey key = new org.apache.iceberg.PartitionKey(spec, schema);
        GenericRecord first = GenericRecord.create(schema);
        first.setField("id", 0L);
        key.partition(first);
        iceberg.newAppend().appendFile(writeWithIceberg(iceberg, location + "/data/id_trunc=0/a.parquet", 0, 50, key)).commit();
        long snapshot = iceberg.currentSnapshot().snapshotId();
        iceberg.updateSchema().addColumn("flag", Types.IntegerType.get(), "set later", org.apache.iceberg.expressions.Literal.of(3)).commit();
        iceberg.manageSnapshots().createBranch("audit", snapshot).setMinSnapshotsToKeep("audit", 3).setMaxSnapshotAgeMs("audit", 86_400_000L)
                .createTag("v1", snapshot).setMaxRefAgeMs("v1", 7 * 86_400_000L).commit();
        String stats = location + "/metadata/stats.puffin";
        String partitionStats = location + "/metadata/partition-stats.parquet";
        Files.write(Path.of(stats), new byte[] {1, 2, 3, 4});
        Files.write(Path.of(partitionStats), new byte[] {1, 2, 3, 4});
        iceberg.updateStatistics().setStatistics(new org.apache.iceberg.GenericStatisticsFile(snapshot, stats, 4, 0, List.of(
                new org.apache.iceberg.GenericBlobMetadata("apache-datasketches-theta-v1", snapshot, 1, List.of(1), Map.of("ndv", "50"))))).commit();
        iceberg.updatePartitionStatistics().setPartitionStatistics(org.apache.iceberg.ImmutableGenericPartitionStatisticsFile.builder()
                .snapshotId(snapshot).path(partitionStats).fileSizeInBytes(4).build()).commit();
        iceberg.updateProperties().set("commit.retry.num-retries", "7").commit();
        com.fasterxml.jackson.databind.ObjectMapper json = new com.fasterxml.jackson.databind.ObjectMapper();
        java.util.function.Supplier<com.fasterxml.jackson.databind.JsonNode> current = () -> {
            String file = ((org.apache.iceberg.HasTableOperations) iceberg).operations().refresh().metadataFileLocation();
            try {
                return json.readTree((file.startsWith("file:") ? Path.of(java.net.URI.create(file)) : Path.of(file)).toFile());
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        };
        com.fasterxml.jackson.databind.JsonNode before = current.get();

        try (NativeTable table = NativeTable.load(location, Map.of())) {
            table.append(allocator, rows(50, 60, new Schema(arrowSchema().getFields().subList(0, 3))));
        }
        com.fasterxml.jackson.databind.JsonNode after = current.get();

        java.util.Set<String> changing = java.util.Set.of("last-sequence-number", "last-updated-ms", "current-snapshot-id", "snapshots",
                "snapshot-log", "metadata-log", "refs", "next-row-id");
        List<String> keys = new java.util.ArrayList<>();
        before.fieldNames().forEachRemaining(keys::add);
        List<String> keysAfter = new java.util.ArrayList<>();
        after.fieldNames().forEachRemaining(keysAfter::add);
        assertEquals(new java.util.TreeSet<>(keys), new java.util.TreeSet<>(keysAfter), "the same fields");
        for (String field : keys) {
            if (!changing.contains(field)) {
                assertEquals(before.get(field), after.get(field), field);
            }
        }
        // Lists grow by one entry each, keeping theirs as written.
        for (String list : List.of("snapshots", "snapshot-log", "metadata-log")) {
            assertEquals(before.get(list).size() + 1, after.get(list).size(), list);
            for (int i = 0; i < before.get(list).size(); i++) {
                assertEquals(before.get(list).get(i), after.get(list).get(i), list + "[" + i + "]");
            }
        }
        com.fasterxml.jackson.databind.JsonNode added = after.get("snapshots").get(after.get("snapshots").size() - 1);
        assertEquals(before.get("current-snapshot-id"), added.get("parent-snapshot-id"));
        assertEquals("append", added.get("summary").get("operation").asText());
        assertEquals(before.get("current-schema-id"), added.get("schema-id"));
        assertEquals(after.get("current-snapshot-id"), added.get("snapshot-id"));
        assertEquals(before.get("last-sequence-number").asLong() + 1, after.get("last-sequence-number").asLong());
        assertEquals(before.get("next-row-id").asLong() + 10, after.get("next-row-id").asLong(), "ten new rows took ten row ids");
        // Refs: main moves to the new snapshot, keeping its other fields; the branch and the tag are as written.
        List<String> refs = new java.util.ArrayList<>();
        before.get("refs").fieldNames().forEachRemaining(refs::add);
        assertEquals(List.of("audit", "main", "v1"), refs.stream().sorted().toList());
        for (String ref : refs) {
            com.fasterxml.jackson.databind.node.ObjectNode was = before.get("refs").get(ref).deepCopy();
            com.fasterxml.jackson.databind.node.ObjectNode is = after.get("refs").get(ref).deepCopy();
            if (ref.equals("main")) {
                assertEquals(after.get("current-snapshot-id"), is.remove("snapshot-id"));
                was.remove("snapshot-id");
            }
            assertEquals(was, is, ref);
        }
        // A row-level delete of ours changes no more of what they wrote.
        try (NativeTable table = NativeTable.load(location, Map.of())) {
            assertEquals(1, table.deleteWhere(Filters.eq("id", 3L)).deletedRows());
        }
        com.fasterxml.jackson.databind.JsonNode deleted = current.get();
        for (String field : keys) {
            if (!changing.contains(field)) {
                assertEquals(before.get(field), deleted.get(field), field + " after a delete");
            }
        }
        for (String ref : List.of("audit", "v1")) {
            assertEquals(before.get("refs").get(ref), deleted.get("refs").get(ref), ref + " after a delete");
        }
        // Iceberg Java reads the table: their rows, ours, and the default of the column added after both were written.
        iceberg.refresh();
        Map<Long, Record> rows = read(IcebergGenerics.read(iceberg).build());
        assertEquals(59, rows.size());
        assertEquals(3, rows.get(55L).getField("flag"), "our rows take the column's write default");
        assertEquals(3, rows.get(5L).getField("flag"), "their rows read its initial default");
    }

    @Test
    void badInputIsNamedAndCommitsNothing() throws Exception {
        String location = dir.resolve("bad").toString();
        try (NativeTable table = NativeTable.create(location, arrowSchema(), Map.of(), Map.of(), allocator)) {
            Schema wrong = new Schema(List.of(Field.nullable("colour", ArrowType.Utf8.INSTANCE)));
            ByteArrayOutputStream ipc = new ByteArrayOutputStream();
            try (VectorSchemaRoot root = VectorSchemaRoot.create(wrong, allocator);
                    ArrowStreamWriter writer = new ArrowStreamWriter(root, null, ipc)) {
                writer.start();
                root.setRowCount(0);
                writer.writeBatch();
                writer.end();
            }
            ArrowReader reader = new ArrowStreamReader(new ByteArrayInputStream(ipc.toByteArray()), allocator);
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> table.append(allocator, reader));
            assertTrue(e.getMessage().contains("'colour'"), e.getMessage());
            assertEquals(-1, table.currentSnapshotId());
            NotFoundException unknown = assertThrows(NotFoundException.class,
                    () -> table.scan(allocator, TableVersion.CURRENT, new String[] {"nope"}, 10));
            assertTrue(unknown.getMessage().contains("nope"), unknown.getMessage());
        }
        assertThrows(InvalidArgumentException.class, () -> NativeTable.create(location, arrowSchema(), Map.of(), Map.of(), allocator));
        Files.writeString(Path.of(location, "metadata", "v1.metadata.json"), "{ broken");
        CorruptDataException corrupt = assertThrows(CorruptDataException.class, () -> NativeTable.load(location, Map.of()));
        assertTrue(corrupt.getMessage().contains("v1.metadata.json"), corrupt.getMessage());
        NotFoundException missing = assertThrows(NotFoundException.class,
                () -> NativeTable.load(dir.resolve("nothing-here").toString(), Map.of()));
        assertTrue(missing.getMessage().contains("nothing-here"), missing.getMessage());
    }

    /** The schema of the tables Iceberg Java writes here: ours without the vector column. */
    static org.apache.iceberg.Schema theirSchema() {
        return new org.apache.iceberg.Schema(
                Types.NestedField.required(1, "id", Types.LongType.get()),
                Types.NestedField.optional(2, "name", Types.StringType.get()),
                Types.NestedField.optional(3, "score", Types.DoubleType.get()));
    }

    /** Rows {@code [start, end)} written by Iceberg Java's own Parquet writer at {@code path}, not yet committed. */
    static DataFile writeWithIceberg(Table iceberg, String path, long start, long end) throws Exception {
        return writeWithIceberg(iceberg, path, start, end, null);
    }

    /** As above, in {@code partition} of the table's spec (null when unpartitioned). */
    private static DataFile writeWithIceberg(Table iceberg, String path, long start, long end,
            org.apache.iceberg.StructLike partition) throws Exception {
        org.apache.iceberg.Schema schema = iceberg.schema();
        DataWriter<Record> writer = new GenericAppenderFactory(schema, iceberg.spec()).setAll(iceberg.properties()).newDataWriter(
                EncryptedFiles.plainAsEncryptedOutput(iceberg.io().newOutputFile(path)), FileFormat.PARQUET, partition);
        try (writer) {
            for (long id = start; id < end; id++) {
                GenericRecord record = GenericRecord.create(schema);
                record.setField("id", id);
                record.setField("name", name(id));
                record.setField("score", id / 2.0);
                writer.write(record);
            }
        }
        return writer.toDataFile();
    }

    static Map<Long, Record> read(CloseableIterable<Record> records) throws Exception {
        Map<Long, Record> rows = new TreeMap<>();
        try (records) {
            for (Record record : records) {
                rows.put((Long) record.getField("id"), record.copy());
            }
        }
        return rows;
    }

    static Map<Long, Object[]> readNative(ArrowReader reader) throws Exception {
        Map<Long, Object[]> rows = new TreeMap<>();
        try (reader) {
            while (reader.loadNextBatch()) {
                VectorSchemaRoot root = reader.getVectorSchemaRoot();
                BigIntVector ids = (BigIntVector) root.getVector("id");
                VarCharVector names = (VarCharVector) root.getVector("name");
                Float8Vector scores = (Float8Vector) root.getVector("score");
                for (int i = 0; i < root.getRowCount(); i++) {
                    String name = names.isNull(i) ? null : new String(names.get(i), StandardCharsets.UTF_8);
                    rows.put(ids.get(i), new Object[] {name, scores.isNull(i) ? null : scores.get(i)});
                }
            }
        }
        return rows;
    }
}
