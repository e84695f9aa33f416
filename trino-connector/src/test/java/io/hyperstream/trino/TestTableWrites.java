package io.hyperstream.trino;

import static io.trino.spi.type.BigintType.BIGINT;
import static io.trino.spi.type.VarcharType.VARCHAR;
import static io.trino.testing.TestingSession.testSessionBuilder;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.airlift.slice.Slice;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.NativeTable;
import io.trino.spi.Page;
import io.trino.spi.block.BlockBuilder;
import io.trino.testing.DistributedQueryRunner;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Writers hold a bounded buffer: an INSERT rolls data files at the table's target size
 * ({@code write.target-file-size-bytes}) and loses no row; a page sink reports what it holds to
 * Trino's memory accounting and an aborted one leaves no file.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TestTableWrites {
    private static final String TARGET = String.valueOf(1 << 20);
    private DistributedQueryRunner runner;
    private Path root;

    @BeforeAll
    void start() throws Exception {
        root = Files.createTempDirectory("hyperstream-writes");
        runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("db").build()).build();
        IsolatedPlugin.install(runner);
        runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString(),
                "hyperstream.write.memory-limit", String.valueOf(64 << 20)));
        runner.execute("CREATE SCHEMA lake.db");
    }

    @AfterAll
    void stop() {
        if (runner != null) {
            runner.close();
        }
    }

    /** A table of {@code id bigint, name varchar} under the catalog root, rolled at 1 MiB. */
    private Path createRolledTable(String name) {
        Path location = root.resolve("db").resolve(name);
        Schema schema = new Schema(List.of(Field.nullable("id", new ArrowType.Int(64, true)), Field.nullable("name", ArrowType.Utf8.INSTANCE)));
        try (BufferAllocator allocator = Allocators.child("test-create");
                NativeTable table = NativeTable.create(location.toString(), schema,
                        Map.of("write.target-file-size-bytes", TARGET), Map.of(), allocator)) {
            return location;
        }
    }

    private static long parquetFiles(Path table) throws Exception {
        try (Stream<Path> files = Files.walk(table.resolve("data"))) {
            return files.filter(p -> p.toString().endsWith(".parquet")).count();
        }
    }

    @Test
    void anInsertRollsFilesAtTheTargetSizeAndKeepsEveryRow() throws Exception {
        Path location = createRolledTable("rolled");
        runner.execute("INSERT INTO rolled SELECT n, 'name-' || CAST(n * 7919 AS varchar) || '-' || CAST(n AS varchar) "
                + "FROM (SELECT a * 10000 + b AS n FROM UNNEST(sequence(0, 29)) AS x(a) CROSS JOIN UNNEST(sequence(0, 9999)) AS y(b))");
        assertTrue(parquetFiles(location) >= 3, parquetFiles(location) + " files");
        assertEquals(300_000L, runner.execute("SELECT count(*) FROM rolled").getOnlyValue());
        assertEquals(44_999_850_000L, runner.execute("SELECT sum(id) FROM rolled").getOnlyValue());
        assertEquals("name-7919-1", runner.execute("SELECT name FROM rolled WHERE id = 1").getOnlyValue());
    }

    @Test
    void aPageSinkReportsWhatItHoldsAndAnAbortedOneLeavesNoFile() throws Exception {
        Path location = createRolledTable("direct");
        var handle = new HyperStreamTableInsertHandle(new HyperStreamTableInsertHandle.SchemaTableNameRecord("db", "direct"),
                location.toString(), java.util.Map.of(), List.of(BIGINT, VARCHAR));
        TablePageSink sink = new TablePageSink(handle);
        assertEquals(0, sink.getMemoryUsage());
        sink.appendPage(page(0, 1000));
        long held = sink.getMemoryUsage();
        assertTrue(held > 0 && held < 1 << 20, "a page is under the target, and counted: " + held);
        for (int p = 1; p < 60; p++) {
            sink.appendPage(page(p * 5000L, 5000));
            assertTrue(sink.getMemoryUsage() < 1 << 20, "what reaches the target is rolled: " + sink.getMemoryUsage());
        }
        assertTrue(parquetFiles(location) >= 2, "rolled files are written before the sink finishes");
        sink.abort();
        assertEquals(0, parquetFiles(location), "an aborted sink deletes every file it rolled");

        TablePageSink finished = new TablePageSink(handle);
        for (int p = 0; p < 60; p++) {
            finished.appendPage(page(p * 5000L, 5000));
        }
        Collection<Slice> fragments = finished.finish().get();
        assertEquals(parquetFiles(location), fragments.size());
        assertTrue(fragments.size() >= 2, fragments.size() + " fragments");
        assertEquals(0, finished.getMemoryUsage());
    }

    @Test
    void aWriteMemoryLimitUnderSixteenMegabytesIsRefused() {
        String message = assertThrows(RuntimeException.class,
                () -> runner.createCatalog("tiny", "hyperstream", Map.of("hyperstream.write.memory-limit", "1024"))).getMessage();
        assertTrue(message.contains("hyperstream.write.memory-limit") && message.contains("1024"), message);
    }

    private static Page page(long first, int rows) {
        BlockBuilder ids = BIGINT.createBlockBuilder(null, rows);
        BlockBuilder names = VARCHAR.createBlockBuilder(null, rows);
        for (int i = 0; i < rows; i++) {
            BIGINT.writeLong(ids, first + i);
            VARCHAR.writeString(names, "name-" + ((first + i) * 7919) + "-" + (first + i));
        }
        return new Page(ids.build(), names.build());
    }
}
