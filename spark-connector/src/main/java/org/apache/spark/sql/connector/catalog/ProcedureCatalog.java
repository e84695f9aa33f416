package org.apache.spark.sql.connector.catalog;

import org.apache.spark.sql.connector.catalog.procedures.UnboundProcedure;

/**
 * Spark 4's ProcedureCatalog, with the same members, so that the one HyperStream JAR's catalog
 * (which implements it for {@code CALL lake.system.<name>(...)}) also loads on Spark 3.5, which
 * has neither the interface nor CALL. On Spark 4 the class loader finds Spark's own first; on
 * 3.5 nothing calls these methods.
 */
public interface ProcedureCatalog extends CatalogPlugin {
    UnboundProcedure loadProcedure(Identifier ident);

    Identifier[] listProcedures(String[] namespace);
}
