package io.hyperstream.spark;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.Set;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.parser.ParserInterface;
import scala.Tuple2;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractFunction2;
import scala.runtime.BoxedUnit;

/**
 * HyperStream's Spark session extension ({@code spark.sql.extensions=
 * io.hyperstream.spark.HyperStreamSparkExtensions}): SQL text, and the expressions of {@code expr} /
 * {@code selectExpr}, may use pgvector's distance operators ({@link PgVectorOperators}), which become
 * calls of the HyperStream catalog's distance functions before Spark parses the text.
 *
 * <p>The functions are those of the catalog {@code spark.hyperstream.functions.catalog} names, else
 * the first catalog configured as {@link HyperStreamCatalog}, else {@code hyperstream}. The parser
 * Spark built is kept and called for everything; only the text changes. It is wrapped through an
 * interface proxy so that the one class serves Spark 3.5 and 4.x, whose parser interfaces differ.
 */
public final class HyperStreamSparkExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    /** The setting that names the catalog whose functions the operators call. */
    public static final String FUNCTIONS_CATALOG = "spark.hyperstream.functions.catalog";

    /** The parser methods whose first argument is SQL text that may hold operators. */
    private static final Set<String> TEXT_METHODS = Set.of("parsePlan", "parseQuery", "parseExpression", "parsePlanWithParameters");

    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectParser(new AbstractFunction2<SparkSession, ParserInterface, ParserInterface>() {
            @Override
            public ParserInterface apply(SparkSession session, ParserInterface parser) {
                return withOperators(session, parser);
            }
        });
        return BoxedUnit.UNIT;
    }

    static ParserInterface withOperators(SparkSession session, ParserInterface parser) {
        InvocationHandler handler = (proxy, method, args) -> {
            if (method.getDeclaringClass() == Object.class) {
                return switch (method.getName()) {
                    case "equals" -> proxy == args[0];
                    case "hashCode" -> System.identityHashCode(proxy);
                    default -> "HyperStream pgvector operators over " + parser;
                };
            }
            Object[] call = args;
            if (args != null && args.length > 0 && args[0] instanceof String sql && TEXT_METHODS.contains(method.getName())
                    && PgVectorOperators.mayHold(sql)) {
                call = args.clone();
                call[0] = PgVectorOperators.rewrite(sql, functionsCatalog(session));
            }
            try {
                return method.invoke(parser, call);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        };
        return (ParserInterface) Proxy.newProxyInstance(ParserInterface.class.getClassLoader(), new Class<?>[] {ParserInterface.class}, handler);
    }

    /** The catalog whose functions the operators call (see the class comment). */
    static String functionsCatalog(SparkSession session) {
        String named = session.conf().get(FUNCTIONS_CATALOG, null);
        if (named != null && !named.isBlank()) {
            return named.trim();
        }
        String prefix = "spark.sql.catalog.";
        for (Tuple2<String, String> setting : session.sparkContext().getConf().getAll()) {
            String key = setting._1();
            if (key.startsWith(prefix) && key.indexOf('.', prefix.length()) < 0
                    && HyperStreamCatalog.class.getName().equals(setting._2().trim())) {
                return key.substring(prefix.length());
            }
        }
        return "hyperstream";
    }
}
