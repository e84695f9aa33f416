package io.hyperstream.trino;

import static io.trino.testing.TestingSession.testSessionBuilder;

import io.hyperstream.jni.TableVersion;
import io.hyperstream.jni.Allocators;
import io.hyperstream.jni.CommitCrashes;
import io.hyperstream.jni.NativeTable;
import io.trino.testing.DistributedQueryRunner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.junit.jupiter.api.Test;

/**
 * A Trino process killed while it runs INSERTs (page sinks writing, the coordinator committing),
 * readers reading the table meanwhile, at 24 points: every read and the table afterwards hold whole
 * INSERTs, the table takes the next INSERT, and orphan removal leaves only the live files.
 */
class TestCommitCrashes {
    static final int ROWS = 1000;
    static final int KILLS = 24;

    /** The writer process: a query runner with the plugin as a server loads it, INSERTing forever. */
    public static void main(String[] args) throws Exception {
        Path root = Path.of(args[0]);
        try (DistributedQueryRunner runner = DistributedQueryRunner.builder(testSessionBuilder().setCatalog("lake").setSchema("db").build())
                .setWorkerCount(0).build()) {
            IsolatedPlugin.install(runner);
            runner.createCatalog("lake", "hyperstream", Map.of("hyperstream.root", root.toString()));
            long start = (long) runner.execute("SELECT count(*) FROM t").getOnlyValue();
            System.out.println("ready");
            for (long first = start; ; first += ROWS) {
                runner.execute("INSERT INTO t SELECT x + " + first + " FROM UNNEST(sequence(0, " + (ROWS - 1) + ")) AS u(x)");
                System.out.println("committed " + first);
            }
        }
    }

    @Test
    void killedTrinoWritersLeaveWholeInserts() throws Exception {
        Path root = Files.createTempDirectory("hyperstream-trino-crash");
        String location = root.resolve("db").resolve("t").toString();
        Files.createDirectories(root.resolve("db"));
        try (BufferAllocator allocator = Allocators.child("crash-create");
                NativeTable table = NativeTable.create(location, new Schema(List.of(Field.nullable("id", new ArrowType.Int(64, true)))),
                        Map.of(), Map.of(), allocator)) {
            // An empty table: the writer appends from id 0.
        }
        try (BufferAllocator allocator = Allocators.child("crash-check")) {
            CommitCrashes.killRepeatedly(TestCommitCrashes.class, List.of(root.toString()), location, KILLS, ROWS,
                    () -> ids(allocator, location));
        }
    }

    /** The {@code id} column of every live row of the table at {@code location}, sorted. */
    private static long[] ids(BufferAllocator allocator, String location) throws IOException {
        try (NativeTable table = NativeTable.load(location, Map.of());
                ArrowReader reader = table.scanFiles(allocator, table.dataFiles(TableVersion.CURRENT), new String[] {"id"}, 65_536)) {
            List<Long> ids = new ArrayList<>();
            while (reader.loadNextBatch()) {
                BigIntVector column = (BigIntVector) reader.getVectorSchemaRoot().getVector(0);
                for (int i = 0; i < column.getValueCount(); i++) {
                    ids.add(column.get(i));
                }
            }
            return ids.stream().mapToLong(Long::longValue).sorted().toArray();
        }
    }
}
