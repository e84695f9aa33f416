package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The deployment tier of the Spark connector: {@code tests/spark_cluster_scenario.py} submitted with
 * {@code spark-submit} from a Spark distribution (pyspark's, in the test command's Python) to
 * {@code local-cluster[2,1,1024]}, a standalone master with two workers whose executors are JVMs of
 * their own, fetching the shaded JAR from the driver as {@code --jars} ships it on a cluster. The
 * command is the README's, with that master.
 */
class SparkClusterTest {
    @TempDir
    Path dir;

    @Test
    void theUserScenarioPassesWithExecutorsInTheirOwnJvms() throws Exception {
        String python = System.getProperty("hyperstream.test.python", "");
        assumeTrue(!python.isBlank(), "no -Dhyperstream.test.python with pyspark (build-connectors.sh test gives one)");
        Path sparkHome = Path.of(run(List.of(python, "-c", "import os, pyspark; print(os.path.dirname(pyspark.__file__))"), Map.of()).strip());
        Path repo = Path.of(System.getProperty("hyperstream.repo.root"));
        Path root = Files.createDirectories(dir.resolve("lake"));
        Path scratch = Files.createDirectories(dir.resolve("scratch"));
        List<String> submit = List.of(sparkHome.resolve("bin").resolve("spark-submit").toString(),
                "--master", "local-cluster[2,1,1024]",
                "--jars", System.getProperty("hyperstream.connector.jar"),
                "--conf", "spark.sql.catalog.lake=" + HyperStreamCatalog.class.getName(),
                "--conf", "spark.sql.catalog.lake.root=" + root,
                "--conf", "spark.driver.host=127.0.0.1",
                "--conf", "spark.ui.enabled=false",
                repo.resolve("tests").resolve("spark_cluster_scenario.py").toString(), root.toString(), scratch.toString());
        String output = run(submit, Map.of("SPARK_HOME", sparkHome.toString(), "JAVA_HOME", System.getProperty("java.home"),
                "PYSPARK_PYTHON", python, "SPARK_LOCAL_IP", "127.0.0.1"));
        assertTrue(output.contains("SCENARIO PASSED"), output);
    }

    /** Runs a command to its end; its output, or a failure that shows it. */
    private String run(List<String> command, Map<String, String> environment) throws IOException, InterruptedException {
        Path log = Files.createTempFile(dir, "process", ".log");
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        builder.environment().putAll(environment);
        Process process = builder.start();
        if (!process.waitFor(20, TimeUnit.MINUTES)) {
            process.destroyForcibly().waitFor();
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertEquals(0, process.exitValue(), String.join(" ", command) + " failed:\n" + output);
        return output;
    }
}
