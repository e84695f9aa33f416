#!/usr/bin/env bash
# Builds libhyperstream and every JAR with the library inside, and runs the demo, tests and benchmarks.
#
#   ./build-connectors.sh [--cuda] [build|test|demo|bench [bench options]]
#
#   build   (default) native library in release mode, then the JNI binding, the shaded Spark JAR and
#           the Trino plugin (trino-connector/target/hyperstream-trino-plugin-*.zip), tests skipped
#   test    every test: Rust (cargo), the GPU backends compiled, JNI, Spark and Trino (Maven Surefire), and
#           the deployment tiers: Spark executors in their own JVMs (spark-submit to local-cluster), the
#           Trino plugin zip in real server processes (one node, then a coordinator and a worker)
#   demo    build, then query native rows through a local Spark and an in-process Trino
#   bench   build, then the bridge benchmark (options: --rows N --dim D --batch-rows B --pool P --repeat R),
#           or with "scan [rows] [runs]" the full-scan benchmark against Spark's Parquet reader,
#           with "index [rows] [runs]" the index-pruned scan benchmark against Spark's Parquet reader,
#           with "merge [rows]" MERGE INTO against Iceberg's Spark runtime (Spark 3.5),
#           with "scale [rows] [dim] [queries] [files] [ef_construction]" vector search natively, through Spark on two executors
#           and through a Trino coordinator with two workers, on one stored table,
#           or with "topk [rows] [queries]" the exact top-10 through Spark and Trino against the native call,
#           or with "oracles [seeds] [queries] [first seed]" the long runs of the query oracles (the tests run 2 or 3 seeds)
#           and of the differential tiers against Iceberg's Spark runtime (the tests run 3) and Trino's Iceberg
#           connector (the tests run 2)
#   --cuda  compile the CUDA backend into the library (kernels are compiled at run time; no CUDA
#           toolkit is needed to build)
#
# JDKs are found in /usr/lib/jvm or named by HYPERSTREAM_JAVA17_HOME and HYPERSTREAM_JAVA25_HOME.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$root"

features=()
command=build
while [ $# -gt 0 ]; do
  case "$1" in
    --cuda) features+=(cuda); shift ;;
    build|test|demo|bench) command=$1; shift; break ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-connectors.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[ "${1:-}" = "--cuda" ] && { features+=(cuda); shift; }

die() { echo "build-connectors.sh: $*" >&2; exit 1; }
step() { printf '\n==> %s\n' "$*"; }

find_jdk() { # $1 = major version, $2 = override variable's value
  local want=$1 given=$2 home
  for home in $given /usr/lib/jvm/*; do
    [ -x "$home/bin/javac" ] || continue
    if "$home/bin/java" -version 2>&1 | head -1 | grep -Eq "version \"$want(\.|\")"; then
      echo "$home"; return 0
    fi
  done
  return 1
}

check_prerequisites() {
  command -v cargo >/dev/null || die "cargo not found: install Rust 1.89 or newer (rustup), then re-run"
  local rust
  rust=$(rustc --version | awk '{print $2}')
  if [ "$(printf '%s\n1.89.0\n' "$rust" | sort -V | head -1)" != "1.89.0" ]; then
    die "Rust $rust is too old: the native library needs 1.89 or newer (rustup update)"
  fi
  command -v cc >/dev/null || die "no C compiler (cc) found: the native library's TLS and compression crates need one (apt-get install build-essential)"
  JAVA17_HOME=$(find_jdk 17 "${HYPERSTREAM_JAVA17_HOME:-}") \
    || die "no JDK 17 found in /usr/lib/jvm: Spark runs on it (apt-get install openjdk-17-jdk-headless, or set HYPERSTREAM_JAVA17_HOME)"
  JAVA25_HOME=$(find_jdk 25 "${HYPERSTREAM_JAVA25_HOME:-}") \
    || die "no JDK 25 found in /usr/lib/jvm: Trino and the build need it (install a Temurin 25 JDK, or set HYPERSTREAM_JAVA25_HOME)"
  command -v mvn >/dev/null || die "Maven not found: install Maven 3.8 or newer (apt-get install maven)"
  if [ "$command" = test ]; then
    python3 -c 'import venv' 2>/dev/null \
      || die "python3 with its venv module not found: the HNSW recall test generates its vectors with it (apt-get install python3-venv)"
  fi
  export JAVA_HOME=$JAVA25_HOME
  # Maven's own libraries call sun.misc.Unsafe, which JDK 25 warns about on every run.
  export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
}

cargo_features() {
  if [ ${#features[@]} -gt 0 ]; then
    local IFS=,
    echo "--features=${features[*]}"
  fi
}

maven() {
  mvn -B -ntp -Dstyle.color=never -Dhyperstream.java17.home="$JAVA17_HOME" "$@"
}

build_native() {
  step "native library (cargo build --release $(cargo_features))"
  cargo build --release $(cargo_features)
}

build_jars() {
  step "JNI binding, Spark JAR, Trino plugin (mvn install, tests skipped)"
  maven -q install -DskipTests
}

# The runnable classpath of a module: its test classes, its (shaded) JAR, its dependencies.
module_classpath() {
  local module=$1 jar
  jar=$(ls "$module"/target/hyperstream-*.jar | grep -v -e '/original-' -e '-tests.jar' | head -1)
  echo "$module/target/test-classes:$jar:$(cat "$module/target/run.classpath")"
}

run_main() { # $1 = java home, $2 = module, $3 = main class, rest = arguments
  local java_home=$1 module=$2 main=$3
  shift 3
  # shellcheck disable=SC2046
  "$java_home/bin/java" $(cat "$module/target/run/jvm.args") -Djava.library.path=/nonexistent \
    -cp "$(module_classpath "$module")" "$main" "$@"
}

# Runs a command with its log (stderr) in <module>/target/demo.log, shown only if the command fails.
run_quietly() {
  local module=$1 log
  shift
  log="$module/target/demo.log"
  if ! "$@" 2>"$log"; then
    echo "--- last lines of $log:" >&2
    tail -40 "$log" >&2
    return 1
  fi
}

# A Vulkan driver for the wgpu tests: where none is installed, Mesa's software one (lavapipe, Debian
# mesa-vulkan-drivers) when this user may install packages; otherwise the wgpu test says it skips.
software_vulkan() {
  if ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    { apt-get install -y -q mesa-vulkan-drivers || { apt-get update -q && apt-get install -y -q mesa-vulkan-drivers; }; } >/dev/null 2>&1 \
      || echo "note: mesa-vulkan-drivers could not be installed; the wgpu test will skip" >&2
  else
    echo "note: no Vulkan driver (install mesa-vulkan-drivers); the wgpu test will skip" >&2
  fi
}

# target/test-venv: the tests' Python (and the Spark distribution, pyspark's, that spark-submit runs from).
test_venv() {
  if ! target/test-venv/bin/python -c "import numpy, pyiceberg, pyarrow, moto.server, pyspark" 2>/dev/null; then
    python3 -m venv target/test-venv
    target/test-venv/bin/pip install -q numpy "pyiceberg[pyarrow]==0.12.0" "moto[server]==5.2.5" "pyspark==4.1.1"
  fi
}

check_prerequisites
case "$command" in
  build)
    build_native
    build_jars
    step "built"
    ls -1 target/release/libhyperstream.so spark-connector/target/hyperstream-spark-*.jar \
      trino-connector/target/hyperstream-trino-plugin-*.zip | grep -v original-
    ;;
  test)
    step "test Python: numpy (the clustered vectors of the HNSW recall test), pyiceberg (interop), moto (the S3 server of the object-store tests) and pyspark (the spark-submit of the Spark cluster tier) in target/test-venv"
    test_venv
    target/test-venv/bin/python tests/gen_clustered.py "$root/target/clustered"
    export HYPERSTREAM_CLUSTERED_DIR="$root/target/clustered"
    export HYPERSTREAM_TEST_PYTHON="$root/target/test-venv/bin/python"
    step "Rust formatting and lints (cargo fmt --check; cargo clippy --all-targets -D warnings)"
    if cargo fmt --version >/dev/null 2>&1 && cargo clippy --version >/dev/null 2>&1; then
      cargo fmt --check
      cargo clippy --all-targets $(cargo_features) -- -D warnings
    else
      echo "warning: rustfmt or clippy is not installed (rustup component add rustfmt clippy): formatting and lints not checked" >&2
    fi
    step "Rust tests (cargo test --release $(cargo_features))"
    cargo test --release $(cargo_features)
    step "GPU backends (--features cuda,wgpu): wgpu searches (batches, array store, table files) checked against the CPU (on Mesa's software Vulkan driver where no GPU is); CUDA tests (they skip, saying why, without a device)"
    software_vulkan
    cargo test --release --features cuda,wgpu --lib -- --nocapture vector::gpu vector::wgpu_backend on_gpu_backends
    cargo test --release --features cuda,wgpu --test gpu_cuda -- --nocapture
    build_native
    step "JNI, Spark and Trino tests (mvn install)"
    maven install -Dhyperstream.test.python="$root/target/test-venv/bin/python"
    ;;
  demo)
    build_native
    build_jars
    step "Spark (local[2], JDK 17) reading libhyperstream through spark-connector's shaded JAR"
    lake="$root/target/demo-lake"
    rm -rf "$lake" && mkdir -p "$lake"
    run_quietly spark-connector run_main "$JAVA17_HOME" spark-connector io.hyperstream.spark.SparkDemo "$lake"
    step "Trino (in-process query runner, JDK 25) reading libhyperstream and the table Spark stored, through the plugin JAR"
    run_quietly trino-connector run_main "$JAVA25_HOME" trino-connector io.hyperstream.trino.TrinoDemo "$lake"
    ;;
  bench)
    build_native
    build_jars
    if [ "${1:-}" = scan ]; then
      shift
      step "scan benchmark: a HyperStream table vs Spark's Parquet reader, full scans into Spark"
      run_main "$JAVA17_HOME" spark-connector io.hyperstream.spark.ScanBenchmark "$@"
    elif [ "${1:-}" = index ]; then
      shift
      step "index benchmark: index-pruned scans of a HyperStream table vs Spark's Parquet reader, through Spark"
      run_main "$JAVA17_HOME" spark-connector io.hyperstream.spark.IndexBenchmark "$@"
    elif [ "${1:-}" = topk ]; then
      shift
      step "top-k benchmark: exact top-10 through Spark SQL vs the native call"
      run_main "$JAVA17_HOME" spark-connector io.hyperstream.spark.TopKBenchmark "$@"
      step "top-k benchmark: exact top-10 through Trino vs the native call"
      run_main "$JAVA25_HOME" trino-connector io.hyperstream.trino.TopKBenchmark "$@"
    elif [ "${1:-}" = merge ]; then
      shift
      step "MERGE benchmark: a HyperStream table vs Iceberg's Spark runtime (merge-on-read), same rows, Spark 3.5"
      maven -q -pl tests/spark-3.5 package -DskipTests
      # shellcheck disable=SC2046
      "$JAVA17_HOME/bin/java" $(cat spark-connector/target/run/jvm.args) -Xmx6g -Djava.library.path=/nonexistent \
        -cp "tests/spark-3.5/target/test-classes:$(cat tests/spark-3.5/target/run.classpath)" \
        io.hyperstream.spark.MergeBenchmark "$@"
    elif [ "${1:-}" = oracles ]; then
      shift
      seeds=${1:-50} queries=${2:-200} first=${3:-1000}
      fuzz=(-Dhyperstream.fuzz.seeds="$seeds" -Dhyperstream.fuzz.queries="$queries" -Dhyperstream.fuzz.seed="$first" -Dsurefire.failIfNoSpecifiedTests=false)
      step "query oracles, long run: $seeds seeds from $first, $queries queries each, in Spark (vs its Parquet reader) and Trino (vs its memory connector)"
      maven -pl spark-connector verify -Dtest=SparkQueryOracleTest "${fuzz[@]}"
      maven -pl trino-connector verify -Dtest=TestQueryOracles "${fuzz[@]}"
      step "tables shared with Iceberg's Spark runtime, long run: $seeds seeds from $first against the model (Spark 3.5 line)"
      maven -pl tests/spark-3.5 verify -Dtest=IcebergDifferentialTest -Dhyperstream.differential.seeds="$seeds" \
        -Dhyperstream.differential.seed="$first" -Dsurefire.failIfNoSpecifiedTests=false
      step "tables shared with Trino's Iceberg connector in a real Trino server, long run: $seeds seeds from $first"
      maven -pl tests/trino-server verify -Dtest=TrinoIcebergCompanyTest -Dhyperstream.company.seeds="$seeds" \
        -Dhyperstream.company.seed="$first" -Dsurefire.failIfNoSpecifiedTests=false
    elif [ "${1:-}" = scale ]; then
      shift
      rows=${1:-100000} dim=${2:-768} queries=${3:-50} files=${4:-4} efc=${5:-200}
      lake="$root/target/bench-data/scale-lake"
      step "scale benchmark, natively: $rows x $dim f32 in $files data files, top-10 of $queries queries, exact and HNSW (M=16, ef_construction=$efc, ef 64)"
      cargo run --release --example scale_bench -- "$rows" "$dim" "$queries" 64 "$efc" --files "$files" --keep "$lake"
      test_venv
      step "the same table and queries through Spark SQL: spark-submit, local-cluster[2,1,3072] (two executors in JVMs of their own)"
      spark_home=$(target/test-venv/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
      jar=$(ls spark-connector/target/hyperstream-spark-*.jar | grep -v -e '/original-' -e '-tests.jar' | head -1)
      SPARK_HOME=$spark_home JAVA_HOME=$JAVA17_HOME PYSPARK_PYTHON="$root/target/test-venv/bin/python" SPARK_LOCAL_IP=127.0.0.1 \
        "$spark_home/bin/spark-submit" --master "local-cluster[2,1,3072]" --jars "$jar" \
        --conf spark.executor.memory=2g --conf spark.driver.host=127.0.0.1 --conf spark.ui.enabled=false \
        --conf spark.sql.catalog.lake=io.hyperstream.spark.HyperStreamCatalog --conf spark.sql.catalog.lake.root="$lake" \
        bench/scale_spark.py "$lake" 2>"$root/target/bench-data/scale-spark.log" \
        || { tail -40 "$root/target/bench-data/scale-spark.log" >&2; exit 1; }
      step "the same table and queries through Trino: a coordinator and two workers started from the plugin zip"
      HYPERSTREAM_SCALE_LAKE=$lake maven -q -pl tests/trino-server test -Dtest=ScaleBenchmark -Dsurefire.failIfNoSpecifiedTests=false
    else
      step "bridge benchmark: native stream into Java vectors vs memcpy"
      run_main "$JAVA17_HOME" native/java io.hyperstream.jni.BridgeBenchmark "$@"
    fi
    ;;
esac
