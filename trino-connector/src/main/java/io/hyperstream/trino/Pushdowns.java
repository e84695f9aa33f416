package io.hyperstream.trino;

import static io.hyperstream.trino.HyperStreamErrorCode.nativeCall;
import io.hyperstream.jni.NativeTable;
import io.trino.spi.connector.Assignment;
import io.trino.spi.connector.ColumnHandle;
import io.trino.spi.connector.ConnectorTableHandle;
import io.trino.spi.connector.Constraint;
import io.trino.spi.connector.ConstraintApplicationResult;
import io.trino.spi.connector.ProjectionApplicationResult;
import io.trino.spi.connector.SortItem;
import io.trino.spi.connector.SortOrder;
import io.trino.spi.connector.TopNApplicationResult;
import io.trino.spi.expression.Call;
import io.trino.spi.expression.ConnectorExpression;
import io.trino.spi.expression.Variable;
import io.trino.spi.predicate.Domain;
import io.trino.spi.predicate.TupleDomain;
import io.trino.spi.type.DoubleType;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What a stored-table scan takes over from Trino: filters, the distance projection and the top-k
 * over it, COUNT(*) from metadata, LIMIT, and a DELETE whose condition the scan evaluates.
 */
final class Pushdowns {
    private final String catalogName;

    Pushdowns(String catalogName) {
        this.catalogName = catalogName;
    }

    /**
     * Takes every domain, and every conjunct of the expression, that {@link TrinoFilters} translates
     * exactly; the native scan enforces them, so Trino keeps only the rest. Nothing is taken once a
     * top-k was pushed (the filter would then apply after it).
     */
    Optional<ConstraintApplicationResult<ConnectorTableHandle>> filter(ConnectorTableHandle table, Constraint constraint) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.topK() > 0) {
            return Optional.empty();
        }
        if (constraint.getSummary().isNone()) {
            if (handle.constraint().isNone()) {
                return Optional.empty();
            }
            return Optional.of(new ConstraintApplicationResult<>(handle.withConstraint(TupleDomain.none(), handle.expressions()),
                    TupleDomain.all(), constraint.getExpression(), false));
        }
        Map<HyperStreamColumnHandle, Domain> taken = new LinkedHashMap<>();
        Map<ColumnHandle, Domain> remaining = new LinkedHashMap<>();
        for (Map.Entry<ColumnHandle, Domain> entry : constraint.getSummary().getDomains().orElseThrow().entrySet()) {
            HyperStreamColumnHandle column = (HyperStreamColumnHandle) entry.getKey();
            if (TrinoFilters.supports(column, entry.getValue())) {
                taken.put(column, entry.getValue());
                if (TrinoFilters.isFloat(column.type())) {
                    // Pruned by natively, checked again by Trino: the native scan orders NaN above every
                    // number, where Trino's comparisons follow IEEE (NaN compares false), so it passes a
                    // superset of the rows Trino's domain holds.
                    remaining.put(entry.getKey(), entry.getValue());
                }
            } else {
                remaining.put(entry.getKey(), entry.getValue());
            }
        }
        TupleDomain<HyperStreamColumnHandle> combined = handle.constraint().intersect(TupleDomain.withColumnDomains(taken));
        // The expression's conjuncts: the translated ones join the handle's (one it enforces already is dropped).
        List<String> expressions = new ArrayList<>(handle.expressions());
        List<ConnectorExpression> kept = new ArrayList<>();
        for (ConnectorExpression conjunct : TrinoFilters.conjuncts(constraint.getExpression())) {
            String filter = TrinoFilters.toFilter(conjunct, constraint.getAssignments());
            if (filter == null) {
                kept.add(conjunct);
                continue;
            }
            if (TrinoFilters.rechecked(conjunct, constraint.getAssignments())) {
                kept.add(conjunct);
            }
            if (!expressions.contains(filter)) {
                expressions.add(filter);
            }
        }
        if (combined.equals(handle.constraint()) && expressions.equals(handle.expressions())) {
            return Optional.empty();
        }
        HyperStreamTableHandle filtered = handle.withConstraint(combined, expressions);
        return Optional.of(new ConstraintApplicationResult<>(filtered.withPruning(pruning(filtered)),
                TupleDomain.withColumnDomains(remaining), TrinoFilters.and(kept), false));
    }

    /**
     * What each pruning level leaves out of a filtered read of a stored table (file bounds, row-group
     * statistics, scalar indexes, deletes), from the native explain: footers and indexes are read, no
     * data page.
     */
    private static String pruning(HyperStreamTableHandle handle) {
        String filter = handle.filter();
        if (filter == null) {
            return null;
        }
        return nativeCall(() -> {
            try (NativeTable table = handle.openRead()) {
                return table.explain(table.dataFiles(handle.version()), filter).toString();
            }
        });
    }

    /**
     * Replaces a distance between a vector column and a constant vector ({@link VectorDistance})
     * with a column the native scan computes, so that a TopN over it can be pushed next.
     */
    Optional<ProjectionApplicationResult<ConnectorTableHandle>> projection(ConnectorTableHandle table,
            List<ConnectorExpression> projections, Map<String, ColumnHandle> assignments) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.topK() > 0) {
            return Optional.empty();
        }
        VectorDistance[] chosen = {handle.distance()};
        boolean[] replaced = {false};
        List<ConnectorExpression> rewritten = new ArrayList<>();
        for (ConnectorExpression projection : projections) {
            rewritten.add(replaceDistances(projection, assignments, catalogName, chosen, replaced));
        }
        if (!replaced[0]) {
            return Optional.empty();
        }
        HyperStreamColumnHandle distanceColumn = chosen[0].columnHandle();
        Map<String, Assignment> used = new LinkedHashMap<>();
        for (ConnectorExpression expression : rewritten) {
            collectVariables(expression, variable -> {
                ColumnHandle column = variable.getName().equals(distanceColumn.name())
                        ? distanceColumn : assignments.get(variable.getName());
                used.putIfAbsent(variable.getName(), new Assignment(variable.getName(), column, variable.getType()));
            });
        }
        return Optional.of(new ProjectionApplicationResult<>(handle.withDistance(chosen[0]), rewritten,
                List.copyOf(used.values()), false));
    }

    /** {@code expression} with every call computing the (one) pushed distance replaced by its column. */
    private static ConnectorExpression replaceDistances(ConnectorExpression expression, Map<String, ColumnHandle> assignments,
            String catalog, VectorDistance[] chosen, boolean[] replaced) {
        Optional<VectorDistance> distance = VectorDistance.match(expression, assignments, catalog);
        if (distance.isPresent() && (chosen[0] == null || chosen[0].equals(distance.get()))) {
            chosen[0] = distance.get();
            replaced[0] = true;
            return new Variable(distance.get().columnHandle().name(), DoubleType.DOUBLE);
        }
        if (expression instanceof Call call) {
            List<ConnectorExpression> args = new ArrayList<>();
            for (ConnectorExpression arg : call.getArguments()) {
                args.add(replaceDistances(arg, assignments, catalog, chosen, replaced));
            }
            return new Call(call.getType(), call.getFunctionName(), args);
        }
        return expression;
    }

    private static void collectVariables(ConnectorExpression expression, java.util.function.Consumer<Variable> out) {
        if (expression instanceof Variable variable) {
            out.accept(variable);
        }
        for (ConnectorExpression child : expression.getChildren()) {
            collectVariables(child, out);
        }
    }

    /**
     * Pushes {@code ORDER BY <distance> LIMIT k} as a native top-k: nearest first is ascending for
     * the distances and descending for {@code dot_product}, nulls first or last as the order says.
     * Where {@code plan} keeps it in one split, the scan returns exactly the top k and Trino drops its
     * TopN; where it divides the search among splits, each returns its own top k and Trino keeps its
     * TopN (partial on each worker, then final) over their rows. {@code efSearch} is the session's
     * use of the HNSW index, for EXPLAIN's account of which files the search walks the graph of.
     */
    static Optional<TopNApplicationResult<ConnectorTableHandle>> topN(ConnectorTableHandle table, long topNCount,
            List<SortItem> sortItems, Map<String, ColumnHandle> assignments, io.hyperstream.jni.SearchPlan plan, long efSearch) {
        if (!(table instanceof HyperStreamTableHandle handle)) {
            return Optional.empty();
        }
        VectorDistance distance = handle.distance();
        if (distance == null || sortItems.size() != 1 || topNCount <= 0 || topNCount > io.hyperstream.jni.Limits.maxTopK()) {
            return Optional.empty();
        }
        SortItem item = sortItems.get(0);
        // Rows without a vector have a null distance: the native search puts them first or last, as the order says.
        SortOrder order = item.getSortOrder();
        if (!distance.columnHandle().equals(assignments.get(item.getName())) || order.isAscending() == distance.negated()) {
            return Optional.empty();
        }
        if (handle.topK() > 0 && handle.topK() <= topNCount) {
            return Optional.empty();
        }
        // How many splits search, and how the search goes through the files (EXPLAIN shows both).
        record Planned(int splits, String index) {}
        Planned planned = !handle.isStored() ? new Planned(1, null) : nativeCall(() -> {
            try (NativeTable stored = handle.openRead()) {
                String index = stored.explainSearch(stored.dataFiles(handle.version()), handle.filter(),
                        distance.search(topNCount).withEfSearch(efSearch)).searchChoice();
                return new Planned(plan == io.hyperstream.jni.SearchPlan.SINGLE ? 1
                        : plan.splits(stored.dataFiles(handle.version(), handle.filter())).length, index);
            }
        });
        boolean single = planned.splits() <= 1;
        return Optional.of(new TopNApplicationResult<>(handle.withTopK(topNCount, order.isNullsFirst(),
                single ? io.hyperstream.jni.SearchPlan.SINGLE : plan, planned.splits(), planned.index()), single, false));
    }

    /** DELETE with its whole condition pushed into the scan ({@link #filter}) runs natively. */
    static Optional<ConnectorTableHandle> delete(ConnectorTableHandle table) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.distance() != null
                || handle.topK() > 0 || handle.limit() > 0) {
            return Optional.empty();
        }
        return Optional.of(handle);
    }

    /** The column a pushed COUNT(*) scan returns. */
    static final HyperStreamColumnHandle COUNT_STAR = new HyperStreamColumnHandle("_count", io.trino.spi.type.BigintType.BIGINT, -3, false);

    /**
     * A lone {@code COUNT(*)} over a stored table without a pushed filter is answered from metadata:
     * the manifests less the rows the delete files delete, no data file read.
     */
    static Optional<io.trino.spi.connector.AggregationApplicationResult<ConnectorTableHandle>> aggregation(
            ConnectorTableHandle table, List<io.trino.spi.connector.AggregateFunction> aggregates,
            List<List<ColumnHandle>> groupingSets) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.isFiltered()
                || handle.topK() > 0 || handle.distance() != null || handle.limit() > 0 || handle.countStar()
                || !groupingSets.equals(List.of(List.of())) || aggregates.size() != 1) {
            return Optional.empty();
        }
        io.trino.spi.connector.AggregateFunction count = aggregates.get(0);
        if (!count.getFunctionName().equals("count") || !count.getArguments().isEmpty() || count.isDistinct()
                || count.getFilter().isPresent() || !count.getSortItems().isEmpty()) {
            return Optional.empty();
        }
        return Optional.of(new io.trino.spi.connector.AggregationApplicationResult<>(handle.withCountStar(),
                List.of(new Variable(COUNT_STAR.name(), COUNT_STAR.type())),
                List.of(new io.trino.spi.connector.Assignment(COUNT_STAR.name(), COUNT_STAR, COUNT_STAR.type())), Map.of(), false));
    }

    /**
     * Pushes LIMIT into stored-table scans: each split stops after the limit, and without a filter
     * only the files holding the first rows are planned. Trino keeps its own limit over the splits.
     */
    static Optional<io.trino.spi.connector.LimitApplicationResult<ConnectorTableHandle>> limit(ConnectorTableHandle table,
            long limit) {
        if (!(table instanceof HyperStreamTableHandle handle) || !handle.isStored() || handle.topK() > 0
                || (handle.limit() > 0 && handle.limit() <= limit) || limit > Integer.MAX_VALUE) {
            return Optional.empty();
        }
        return Optional.of(new io.trino.spi.connector.LimitApplicationResult<>(handle.withLimit(limit), false, false));
    }
}
