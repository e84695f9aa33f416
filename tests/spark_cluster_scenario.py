"""The Spark half of the deployment tier: HyperStream as a Spark user runs it on a cluster.

Run by spark-submit with the connector JAR shipped by --jars and executors in JVMs of their own
(SparkClusterTest runs it on local-cluster[2,1,1024]: a standalone master and two workers):

    spark-submit --master <master> --jars hyperstream-spark-<version>.jar \
        --conf spark.sql.catalog.lake=io.hyperstream.spark.HyperStreamCatalog \
        --conf spark.sql.catalog.lake.root=<root> \
        tests/spark_cluster_scenario.py <root> <scratch directory>

It writes, reads, filters (pushed), searches (a pushed top-k, checked against a brute-force search
in Python over the rows read back; the same top-k divided among tasks on both executors, checked
against the single task's answer), deletes, fills and reads an array store, and makes one write's
task fail on every attempt: nothing of that write is committed and no file of it is left. It ends by
printing SCENARIO PASSED; any failed check raises.
"""
import math
import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.errors import PySparkException
from py4j.protocol import Py4JJavaError

QUERY = [0.5, 0.25, 0.75, 1.0]
ROWS = 4000


def check(condition, message):
    if not condition:
        raise AssertionError(message)


def plan(spark, sql):
    return spark.sql(sql)._jdf.queryExecution().executedPlan().toString()


def files_under(path):
    found = set()
    for folder, _, names in os.walk(path):
        found.update(os.path.relpath(os.path.join(folder, name), path) for name in names)
    return found


def cosine(v, q):
    dot = sum(a * b for a, b in zip(v, q))
    return 1 - dot / math.sqrt(sum(a * a for a in v) * sum(b * b for b in q))


def await_executors(spark, wanted):
    """The executors are JVMs of their own, registered with the driver: wait for both."""
    tracker = spark.sparkContext._jsc.sc()
    deadline = time.time() + 180
    while tracker.getExecutorIds().size() < wanted:
        check(time.time() < deadline, f"only {tracker.getExecutorIds().size()} of {wanted} executors registered")
        time.sleep(0.5)


def tables_writes_and_reads(spark, root):
    spark.sql("CREATE NAMESPACE lake.db")
    spark.sql("CREATE TABLE lake.db.items (id BIGINT NOT NULL, category STRING, embedding ARRAY<FLOAT>) "
              "USING hyperstream TBLPROPERTIES ('vector.embedding.dimension' = '4')")
    # Four tasks over two executors: each task writes its data file natively in its executor's JVM.
    spark.sql(f"INSERT INTO lake.db.items SELECT id, concat('c', id % 10), array(CAST(id % 97 AS FLOAT) / 97, "
              f"CAST(id % 89 AS FLOAT) / 89, CAST(id % 83 AS FLOAT) / 83, 1.0) FROM range(0, {ROWS}, 1, 4)")
    total = spark.sql("SELECT count(*), sum(id) FROM lake.db.items").collect()[0]
    check((total[0], total[1]) == (ROWS, ROWS * (ROWS - 1) // 2), f"rows written: {total}")
    # The same table by path, through the DataFrame API.
    by_path = spark.read.format("hyperstream").load(os.path.join(root, "db", "items"))
    check(by_path.where("category = 'c4'").count() == ROWS // 10, "a path read with a filter")


def pushed_filter_and_top_k(spark):
    sql = "SELECT count(*), sum(id) FROM lake.db.items WHERE id BETWEEN 1000 AND 2999 AND category IN ('c3', 'c7')"
    passing = [x for x in range(1000, 3000) if x % 10 in (3, 7)]
    got = spark.sql(sql).collect()[0]
    check((got[0], got[1]) == (len(passing), sum(passing)), f"filtered rows: {got}")
    scan = plan(spark, sql)
    check("filter=" in scan and "Filter " not in scan, "the filter is pushed whole into the native scan:\n" + scan)

    vector = "array(" + ", ".join(str(x) for x in QUERY) + ")"
    top = f"SELECT id, lake.cosine_distance(embedding, {vector}) AS d FROM lake.db.items ORDER BY d LIMIT 5"
    pushed = plan(spark, top)
    check("nativeTopK=5 by cosine_distance" in pushed, "the top-k is pushed:\n" + pushed)
    check_nearest(spark, top, 5)


def check_nearest(spark, sql, k):
    """The rows of sql are the k nearest of the table, by a brute-force search over every row read back."""
    rows = spark.sql(sql).collect()
    every = spark.sql("SELECT id, embedding FROM lake.db.items").collect()
    expected = sorted((cosine(r["embedding"], QUERY), r["id"]) for r in every)
    kth = expected[k - 1][0]
    check(len(rows) == k, f"{len(rows)} rows, not {k}")
    by_id = {i: d for d, i in expected}
    previous = -1.0
    for row in rows:
        d = row["d"]
        check(abs(d - by_id[row["id"]]) < 1e-5, f"distance of {row['id']}: {d} vs {by_id[row['id']]}")
        check(previous - 1e-9 <= d <= kth + 1e-5, f"nearest first, within the k-th ({kth}): {rows}")
        previous = d


def tasks_of(spark, sql):
    """The rows of sql and the most tasks a stage of its job ran."""
    sc = spark.sparkContext
    group = f"q{time.time_ns()}"
    sc.setJobGroup(group, sql)
    try:
        rows = spark.sql(sql).collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    stages = [s for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds]
    return rows, max(tracker.getStageInfo(s).numTasks for s in stages)


def distributed_top_k(spark):
    """A top-k divided among tasks on both executors returns the single task's rows."""
    vector = "array(" + ", ".join(str(x) for x in QUERY) + ")"
    for where in ("", " WHERE category IN ('c1', 'c2', 'c9')"):
        sql = f"SELECT id, lake.l2_distance(embedding, {vector}) AS d FROM lake.db.items{where} ORDER BY d, id LIMIT 9"
        top = f"SELECT id, lake.l2_distance(embedding, {vector}) AS d FROM lake.db.items{where} ORDER BY d LIMIT 9"
        spark.conf.set("spark.hyperstream.vector.search.plan", "single")
        check("plan=single" in plan(spark, top), "the single plan:\n" + plan(spark, top))
        single, single_tasks = tasks_of(spark, top)
        spark.conf.set("spark.hyperstream.vector.search.plan", "distributed")
        shown = plan(spark, top)
        check("plan=distributed splits=4" in shown and "TakeOrderedAndProject" in shown, "the distributed plan:\n" + shown)
        spread, spread_tasks = tasks_of(spark, top)
        check(single_tasks == 1 and spread_tasks == 4, f"tasks: single {single_tasks}, distributed {spread_tasks}")
        check([r["id"] for r in spread] == [r["id"] for r in single], f"distributed {spread} vs single {single}")
        check([r["id"] for r in spread] == [r["id"] for r in spark.sql(sql).collect()], "the same rows as a full sort")
    spark.conf.unset("spark.hyperstream.vector.search.plan")


def similarity_join(spark):
    """A similarity join, its queries spread over tasks on both executors, answers each as its own top-k."""
    from pyspark.sql import DataFrame
    queries = spark.range(1, 41, 1, 4).selectExpr("id AS qid", "array(float(id) / 40, 0.5f, 0.25f, 1.0f) AS qvec")
    table = spark.table("lake.db.items").where("category <> 'c0'").select("id")
    jdf = spark._jvm.io.hyperstream.spark.VectorJoin.nearest(queries._jdf, "qvec", table._jdf, "embedding", 3, "l2")
    joined = DataFrame(jdf, spark).collect()
    check(len(joined) == 120, f"{len(joined)} rows, not 3 for each of 40 queries")
    got = {}
    for row in sorted(joined, key=lambda r: (r["qid"], r["_distance"], r["id"])):
        got.setdefault(row["qid"], []).append(row["id"])
    for q in (1, 17, 40):
        vector = f"array({q / 40}, 0.5, 0.25, 1.0)"
        alone = spark.sql(f"SELECT id FROM lake.db.items WHERE category <> 'c0' "
                          f"ORDER BY lake.l2_distance(embedding, {vector}), id LIMIT 3").collect()
        check(got[q] == [r["id"] for r in alone], f"query {q}: {got[q]} vs {alone}")


def deletes(spark):
    spark.sql("DELETE FROM lake.db.items WHERE id < 500")
    check(spark.sql("SELECT count(*) FROM lake.db.items").collect()[0][0] == ROWS - 500, "rows after DELETE")
    vector = "array(" + ", ".join(str(x) for x in QUERY) + ")"
    check_nearest(spark, f"SELECT id, lake.cosine_distance(embedding, {vector}) AS d FROM lake.db.items "
                         f"ORDER BY d LIMIT 7", 7)


def row_level_changes(spark):
    """UPDATE and MERGE with executors in their own JVMs: delta writers there, one commit here."""
    spark.sql("CREATE TABLE lake.db.changes (id BIGINT NOT NULL, v BIGINT) USING hyperstream "
              "TBLPROPERTIES ('format-version' = '3')")
    spark.sql("INSERT INTO lake.db.changes SELECT id, id FROM range(0, 1000, 1, 4)")
    row_id = spark.sql("SELECT _row_id FROM lake.db.changes WHERE id = 7").collect()[0][0]
    spark.sql("UPDATE lake.db.changes SET v = -v WHERE id % 7 = 0")
    spark.sql("MERGE INTO lake.db.changes t USING (SELECT id FROM range(990, 1010)) s ON t.id = s.id "
              "WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, 0)")
    expected = sum(-x if x % 7 == 0 else x for x in range(990))
    got = spark.sql("SELECT count(*), sum(v) FROM lake.db.changes").collect()[0]
    check((got[0], got[1]) == (1000, expected), f"rows after UPDATE and MERGE: {got}")
    check(spark.sql("SELECT _row_id FROM lake.db.changes WHERE id = 7").collect()[0][0] == row_id,
          "an updated row keeps its id")
    live = spark.sql("SELECT sum(CASE content WHEN 0 THEN record_count ELSE -record_count END) "
                     "FROM lake.db.changes.files").collect()[0][0]
    check(live == 1000, f"the files metadata table: {live} live rows")
    spark.sql("DROP TABLE lake.db.changes")


def arrays(spark, scratch):
    store = os.path.join(scratch, "store")
    rows = spark.range(0, 3000, 1, 3).selectExpr("array(float(id), float(id * 2), float(-id)) AS value")
    rows.write.format("hyperstream").option("array", "emb").mode("append").save(store)
    emb = spark.read.format("hyperstream").option("array", "emb").option("split.rows", 400).load(store)
    check(emb.rdd.getNumPartitions() == 8, f"3000 rows in splits of 400: {emb.rdd.getNumPartitions()}")
    check(emb.count() == 3000, "array rows")
    check(emb.where("value[0] != float(index) OR value[1] != float(index * 2)").count() == 0, "array values by row")


def a_failing_task_commits_nothing(spark, root):
    table = os.path.join(root, "db", "items")
    before = files_under(table)
    rows_before = spark.sql("SELECT count(*) FROM lake.db.items").collect()[0][0]
    failing = (f"INSERT INTO lake.db.items SELECT id, CASE WHEN id = {ROWS + 3999} THEN CAST(raise_error('injected task "
               f"failure') AS STRING) ELSE 'late' END, array(1.0, 2.0, 3.0, 4.0) FROM range({ROWS}, {ROWS + 4000}, 1, 4)")
    try:
        spark.sql(failing)
        raise AssertionError("the write with a failing task succeeded")
    except (Py4JJavaError, PySparkException) as e:
        check("injected task failure" in str(e), f"the task's failure is reported: {e}")
    check(spark.sql("SELECT count(*) FROM lake.db.items").collect()[0][0] == rows_before, "nothing of the write committed")
    check(spark.sql("SELECT count(*) FROM lake.db.items WHERE category = 'late'").collect()[0][0] == 0, "no late rows")
    left = files_under(table) - before
    check(not left, f"the aborted write left files behind: {sorted(left)}")


def main():
    root, scratch = sys.argv[1], sys.argv[2]
    spark = SparkSession.builder.appName("hyperstream-cluster-scenario").getOrCreate()
    await_executors(spark, 2)
    tables_writes_and_reads(spark, root)
    pushed_filter_and_top_k(spark)
    distributed_top_k(spark)
    similarity_join(spark)
    deletes(spark)
    row_level_changes(spark)
    arrays(spark, scratch)
    a_failing_task_commits_nothing(spark, root)
    spark.stop()
    print("SCENARIO PASSED")


if __name__ == "__main__":
    main()
