package io.hyperstream.jni;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** The process {@code IcebergJavaReader} (test support) runs: Iceberg's classes are on its class path only. */
public final class IcebergJavaReaderMain {
    private IcebergJavaReaderMain() {}

    /** {@code <location> <column>...}: prints the rows, sorted. */
    public static void main(String[] args) throws IOException {
        org.apache.iceberg.Table table = new org.apache.iceberg.hadoop.HadoopTables(new org.apache.hadoop.conf.Configuration()).load(args[0]);
        List<String> rows = new ArrayList<>();
        try (org.apache.iceberg.io.CloseableIterable<org.apache.iceberg.data.Record> records =
                org.apache.iceberg.data.IcebergGenerics.read(table).build()) {
            for (org.apache.iceberg.data.Record record : records) {
                List<String> values = new ArrayList<>();
                for (int c = 1; c < args.length; c++) {
                    values.add(String.valueOf(record.getField(args[c])));
                }
                rows.add(String.join("|", values));
            }
        }
        rows.sort(null);
        rows.forEach(System.out::println);
    }
}
