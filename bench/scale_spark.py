"""The Spark half of the engine scale benchmark: the table `scale_bench --keep` stored, searched
through Spark SQL with executors in JVMs of their own.

Run by `./build-connectors.sh bench scale` with spark-submit on local-cluster[2,1,...] (a standalone
master, two workers, an executor JVM on each) and the shaded connector JAR shipped by --jars:

    spark-submit --master local-cluster[2,1,3072] --jars hyperstream-spark-<version>.jar \
        --conf spark.sql.catalog.lake=io.hyperstream.spark.HyperStreamCatalog \
        --conf spark.sql.catalog.lake.root=<lake> bench/scale_spark.py <lake>

Each of the stored queries runs as `SELECT id FROM lake.db.items ORDER BY
lake.l2_distance(embedding, array(...)) LIMIT 10`, exactly (vector.search.ef -1) and through the
HNSW graphs (ef 64), in one task (the single plan) and a task per data file (the distributed plan).
Prints a Markdown row per search and plan: the tasks its stage ran, p50/p99 latency of the whole
query (SQL text in, rows collected on the driver; every configuration runs 8 queries before any is
measured) and recall@10 against the stored exact answer, then
both plans of one query.
"""
import os
import re
import struct
import sys
import time

from pyspark.sql import SparkSession

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from spark_cluster_scenario import await_executors, plan, tasks_of  # noqa: E402

WARM_UP = 8
K = 10


def stored_queries(lake):
    """The queries and their exact answers, as scale_bench wrote them."""
    with open(os.path.join(lake, "truth.txt")) as f:
        truth = [[int(i) for i in line.split()] for line in f if line.strip()]
    with open(os.path.join(lake, "queries.f32"), "rb") as f:
        data = f.read()
    dim = len(data) // 4 // len(truth)
    return [list(struct.unpack_from(f"<{dim}f", data, q * dim * 4)) for q in range(len(truth))], truth


def sql(query):
    # Double literals (D) hold each f32 exactly; the function reads them back as f32.
    vector = "array(" + ", ".join(f"{v!r}D" for v in query) + ")"
    return f"SELECT id FROM lake.db.items ORDER BY lake.l2_distance(embedding, {vector}) LIMIT {K}"


def percentile(values, p):
    values = sorted(values)
    return values[round((len(values) - 1) * p)]


def main():
    lake = sys.argv[1]
    queries, truth = stored_queries(lake)
    spark = SparkSession.builder.appName("hyperstream-scale-bench").getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    await_executors(spark, 2)
    rows = spark.sql("SELECT count(*) FROM lake.db.items").collect()[0][0]
    # The driver's SQL parser and planner and the executors' read path warm up over the first few
    # dozen queries (parsing the 768 numbers of a query fell from 150 to 45 ms): every configuration
    # runs its first queries before any is measured.
    configs = [(search, ef, chosen) for search, ef in (("exact", -1), ("HNSW ef 64", 64)) for chosen in ("single", "distributed")]
    for turn in range(WARM_UP):
        for _, ef, chosen in configs:
            spark.conf.set("spark.hyperstream.vector.search.ef", str(ef))
            spark.conf.set("spark.hyperstream.vector.search.plan", chosen)
            spark.sql(sql(queries[turn % len(queries)])).collect()
    print("| vectors | engine | search | plan | tasks | p50 ms | p99 ms | recall@10 |")
    print("|---|---|---|---|---|---|---|---|")
    for search, ef in (("exact", -1), ("HNSW ef 64", 64)):
        spark.conf.set("spark.hyperstream.vector.search.ef", str(ef))
        for chosen in ("single", "distributed"):
            spark.conf.set("spark.hyperstream.vector.search.plan", chosen)
            _, tasks = tasks_of(spark, sql(queries[0]))
            ms, found = [], 0
            for query, expected in zip(queries, truth):
                start = time.perf_counter()
                ids = [r[0] for r in spark.sql(sql(query)).collect()]
                ms.append((time.perf_counter() - start) * 1e3)
                found += len(set(ids) & set(expected))
            print(f"| {rows:,} x {len(queries[0])} | Spark, 2 executors | {search} | {chosen} | {tasks} | "
                  f"{percentile(ms, 0.5):.1f} | {percentile(ms, 0.99):.1f} | {found / (K * len(queries)):.3f} |", flush=True)
    for chosen in ("single", "distributed"):
        spark.conf.set("spark.hyperstream.vector.search.plan", chosen)
        shown = plan(spark, sql(queries[0]))
        # The query vector's 768 numbers, shortened.
        print(f"{chosen} plan: " + re.sub(r"[-0-9.E]+(?:, ?[-0-9.E]+){8,}", "...", " ".join(shown.split())))
    spark.stop()


if __name__ == "__main__":
    main()
