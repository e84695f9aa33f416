package io.hyperstream.trino;

import static java.util.Objects.requireNonNull;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.hyperstream.jni.Catalog;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.SchemaTableName;
import io.trino.spi.predicate.TupleDomain;
import java.util.ArrayList;
import java.util.List;

/**
 * A table of the catalog: a stored table ({@code location} and the snapshot read, -1 for an empty
 * table; {@code travel} when that snapshot was asked for with {@code FOR VERSION AS OF}, and so is read
 * under its own schema) or, when {@code location} is null, the generated sample table and its parameters. A stored
 * table's handle also carries what was pushed into its scan: the {@code constraint} the native scan
 * enforces, and beside it the {@code expressions} (native filters, all of which a row must pass) it
 * enforces for what a constraint cannot say (an OR across columns, a NOT), the {@code distance} it computes (null for none) and, when {@code topK} is positive, that
 * only the {@code topK} rows nearest by that distance are read, by one split or, under a {@code searchPlan}
 * other than single, by {@code searchSplits} splits each returning its own top k (Trino keeps its TopN
 * over them), {@code searchIndex} saying how many files it walks the HNSW graph of and how many it
 * compares exactly; when {@code limit} is positive, a
 * pushed LIMIT: each split stops after that many rows (and, without a filter, only the files that
 * hold the first {@code limit} rows are planned); when {@code countStar}, the scan is a pushed
 * {@code COUNT(*)}: one row, the snapshot's row count from metadata.
 */
public record HyperStreamTableHandle(
        @JsonProperty("schemaName") String schemaName,
        @JsonProperty("tableName") String tableName,
        @JsonProperty("rows") long rows,
        @JsonProperty("dimension") int dimension,
        @JsonProperty("seed") long seed,
        @JsonProperty("location") String location,
        @JsonProperty("storage") java.util.Map<String, String> storage,
        @JsonProperty("snapshotId") long snapshotId,
        @JsonProperty("travel") boolean travel,
        @JsonProperty("constraint") TupleDomain<HyperStreamColumnHandle> constraint,
        @JsonProperty("expressions") List<String> expressions,
        @JsonProperty("distance") VectorDistance distance,
        @JsonProperty("topK") long topK,
        @JsonProperty("nullsFirst") boolean nullsFirst,
        @JsonProperty("searchPlan") io.hyperstream.jni.SearchPlan searchPlan,
        @JsonProperty("searchSplits") int searchSplits,
        @JsonProperty("searchIndex") String searchIndex,
        @JsonProperty("limit") long limit,
        @JsonProperty("countStar") boolean countStar,
        @JsonProperty("pruning") String pruning)
        implements ConnectorTableHandle {
    @JsonCreator
    public HyperStreamTableHandle {
        requireNonNull(schemaName, "schemaName is null");
        requireNonNull(tableName, "tableName is null");
        constraint = constraint == null ? TupleDomain.all() : constraint;
        expressions = expressions == null ? List.of() : List.copyOf(expressions);
        searchPlan = searchPlan == null ? io.hyperstream.jni.SearchPlan.SINGLE : searchPlan;
        storage = storage == null ? java.util.Map.of() : java.util.Map.copyOf(storage);
        if (topK > 0 && distance == null) {
            throw new IllegalArgumentException("a top-k needs a distance");
        }
    }

    static HyperStreamTableHandle stored(SchemaTableName name, Catalog.TableRef table, long snapshotId, boolean travel) {
        return new HyperStreamTableHandle(name.getSchemaName(), name.getTableName(), 0, 0, 0, table.location(), table.options(),
                snapshotId, travel,
                TupleDomain.all(), List.of(), null, 0, false, null, 0, null, 0, false, null);
    }

    static HyperStreamTableHandle sample(String schema, String table, long rows, int dimension, long seed) {
        return new HyperStreamTableHandle(schema, table, rows, dimension, seed, null, null, -1, false, TupleDomain.all(), List.of(), null, 0, false, null, 0, null, 0, false, null);
    }

    HyperStreamTableHandle withConstraint(TupleDomain<HyperStreamColumnHandle> newConstraint, List<String> newExpressions) {
        return new HyperStreamTableHandle(schemaName, tableName, rows, dimension, seed, location, storage, snapshotId, travel,
                newConstraint, newExpressions, distance, topK, nullsFirst, searchPlan, searchSplits, searchIndex, limit, countStar, null);
    }

    HyperStreamTableHandle withDistance(VectorDistance newDistance) {
        return new HyperStreamTableHandle(schemaName, tableName, rows, dimension, seed, location, storage, snapshotId, travel,
                constraint, expressions, newDistance, topK, nullsFirst, searchPlan, searchSplits, searchIndex, limit, countStar, pruning);
    }

    /** The same reading only the {@code k} rows nearest by the distance, those without one first or last, in one split. */
    HyperStreamTableHandle withTopK(long k, boolean first) {
        return withTopK(k, first, io.hyperstream.jni.SearchPlan.SINGLE, 1, null);
    }

    /**
     * The same reading the {@code k} nearest rows (those without a vector first or last) of each of
     * the {@code splits} splits {@code plan} divides the search into; {@code index} is how the search
     * goes through the files, as EXPLAIN shows it (null: not shown).
     */
    HyperStreamTableHandle withTopK(long k, boolean first, io.hyperstream.jni.SearchPlan plan, int splits, String index) {
        return new HyperStreamTableHandle(schemaName, tableName, rows, dimension, seed, location, storage, snapshotId, travel,
                constraint, expressions, distance, k, first, plan, splits, index, limit, countStar, pruning);
    }

    HyperStreamTableHandle withLimit(long rows) {
        return new HyperStreamTableHandle(schemaName, tableName, this.rows, dimension, seed, location, storage, snapshotId, travel,
                constraint, expressions, distance, topK, nullsFirst, searchPlan, searchSplits, searchIndex, rows, countStar, pruning);
    }

    HyperStreamTableHandle withCountStar() {
        return new HyperStreamTableHandle(schemaName, tableName, rows, dimension, seed, location, storage, snapshotId, travel,
                constraint, expressions, distance, topK, nullsFirst, searchPlan, searchSplits, searchIndex, limit, true, pruning);
    }

    /** The same with what the native explain says of the filtered read (EXPLAIN shows it). */
    HyperStreamTableHandle withPruning(String newPruning) {
        return new HyperStreamTableHandle(schemaName, tableName, rows, dimension, seed, location, storage, snapshotId, travel,
                constraint, expressions, distance, topK, nullsFirst, searchPlan, searchSplits, searchIndex, limit, countStar, newPruning);
    }

    /** The native filter of everything pushed: the constraint and the expression; null for none. */
    public String filter() {
        List<String> all = new ArrayList<>();
        String domains = TrinoFilters.toFilter(constraint);
        if (domains != null) {
            all.add(domains);
        }
        all.addAll(expressions);
        return all.isEmpty() ? null : all.size() == 1 ? all.get(0) : io.hyperstream.jni.Filters.and(all);
    }

    /** Whether a filter was pushed (a LIMIT then cannot tell which files hold its rows). */
    public boolean isFiltered() {
        return !constraint.isAll() || !expressions.isEmpty();
    }

    public boolean isStored() {
        return location != null;
    }

    /** The snapshot this handle reads: its snapshot id, or the current one of a table without data. */
    io.hyperstream.jni.TableVersion version() {
        return snapshotId < 0 ? io.hyperstream.jni.TableVersion.CURRENT : io.hyperstream.jni.TableVersion.snapshot(snapshotId);
    }

    /** The stored table: where it is and the storage options (a REST catalog's among them) that open it. */
    Catalog.TableRef table() {
        return new Catalog.TableRef(location, storage);
    }

    /** The stored table as this handle reads it: at its snapshot's schema when it travelled, else the latest. */
    io.hyperstream.jni.NativeTable openRead() {
        return travel ? table().open(io.hyperstream.jni.TableVersion.snapshot(snapshotId)) : table().open();
    }

    public SchemaTableName toSchemaTableName() {
        return new SchemaTableName(schemaName, tableName);
    }

    /** What EXPLAIN shows: the table, its snapshot and everything pushed into the scan. */
    @Override
    public String toString() {
        if (!isStored()) {
            return schemaName + "." + tableName + " (sample, " + rows + " rows)";
        }
        List<String> parts = new ArrayList<>();
        parts.add(schemaName + "." + tableName + "@" + snapshotId);
        if (isFiltered()) {
            parts.add("filter=" + filter());
        }
        if (pruning != null) {
            parts.add("pruning=[" + pruning + "]");
        }
        if (distance != null) {
            parts.add("distance=" + distance);
        }
        if (topK > 0) {
            parts.add("nativeTopK=" + topK + " nearest by " + distance.function() + (nullsFirst ? " nulls first" : "")
                    + (searchPlan == io.hyperstream.jni.SearchPlan.SINGLE ? " plan=single" : " plan=distributed splits=" + searchSplits)
                    + (searchIndex == null ? "" : " " + searchIndex));
        }
        if (limit > 0) {
            parts.add("limit=" + limit);
        }
        if (countStar) {
            parts.add("count(*) from metadata");
        }
        return String.join(" ", parts);
    }
}
