package io.hyperstream.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

/** The text rewrite of pgvector's operators, case by case (Spark runs the results in {@link SparkVectorTest}). */
class PgVectorOperatorsTest {
    private static String rewrite(String sql) {
        return PgVectorOperators.rewrite(sql, "hs");
    }

    @Test
    void eachOperatorBecomesItsFunction() {
        assertEquals("SELECT hs.l2_distance(a, b)", rewrite("SELECT a <-> b"));
        assertEquals("SELECT hs.negative_inner_product(a, b)", rewrite("SELECT a <#> b"));
        assertEquals("SELECT hs.l1_distance(a, b)", rewrite("SELECT a<+>b"));
        assertEquals("SELECT hs.hamming_distance(bits, X'0F')", rewrite("SELECT bits <~> X'0F'"));
        assertEquals("SELECT hs.jaccard_distance(bits, X'0F')", rewrite("SELECT bits <%> X'0F'"));
        assertEquals("SELECT hs.cosine_distance(e, array(1, 2))", rewrite("SELECT e <=> array(1, 2)"));
        assertEquals("x", PgVectorOperators.rewrite("x", "hs"));
    }

    @Test
    void operandsArePrimaries() {
        assertEquals("ORDER BY hs.l2_distance(t.embedding, array(0.1, -0.2)) LIMIT 5",
                rewrite("ORDER BY t.embedding <-> array(0.1, -0.2) LIMIT 5"));
        assertEquals("WHERE hs.l2_distance(`my col`, array (1,2)) < 0.5 AND x = 1",
                rewrite("WHERE `my col` <-> array (1,2) < 0.5 AND x = 1"));
        assertEquals("SELECT hs.l1_distance(cat.db.f(x, g(y)), (a + b)) AS d",
                rewrite("SELECT cat.db.f(x, g(y)) <+> (a + b) AS d"));
        assertEquals("SELECT hs.l2_distance(v[0], w.items[1])", rewrite("SELECT v[0] <-> w.items[1]"));
        assertEquals("ORDER BY hs.l2_distance(e, array(1,2)), id", rewrite("ORDER BY e <-> '[1,2]', id"));
        assertEquals("SELECT hs.l2_distance(hs.l2_distance(a, b), c)", rewrite("SELECT a <-> b <-> c"),
                "left to right");
        assertEquals("SELECT f(hs.l2_distance(a, b), hs.l1_distance(c, d))", rewrite("SELECT f(a <-> b, c <+> d)"));
    }

    @Test
    void nullSafeEqualityKeepsItsMeaningWithoutAVectorConstant() {
        assertEquals("SELECT a <=> b, 1 <=> NULL", rewrite("SELECT a <=> b, 1 <=> NULL"));
        assertEquals("SELECT a <=> b, hs.cosine_distance(array(1.5, 2), e)", rewrite("SELECT a <=> b, array(1.5, 2) <=> e"));
        assertEquals("SELECT hs.cosine_distance(e, array(1, 2.5))", rewrite("SELECT e <=> '[1, 2.5]'"));
    }

    @Test
    void pgvectorTextFormsBecomeSparkValues() {
        assertEquals("ORDER BY hs.l2_distance(terms, named_struct('indices', array(0, 2), 'values', array(0.5, -2))) LIMIT 3",
                rewrite("ORDER BY terms <-> '{1:0.5,3:-2}/5' LIMIT 3"));
        assertEquals("SELECT hs.cosine_distance(named_struct('indices', array(4), 'values', array(1e3)), t)",
                rewrite("SELECT '{ 5 : 1e3 }/ 9' <=> t"), "a sparse constant makes <=> cosine distance");
        assertEquals("SELECT hs.l2_distance(t, named_struct('indices', cast(array() AS array<int>), 'values', "
                + "cast(array() AS array<float>)))", rewrite("SELECT t <-> '{}/3'"));
        assertEquals("SELECT hs.hamming_distance(bits, X'50')", rewrite("SELECT bits <~> B'0101'"));
        assertEquals("SELECT hs.jaccard_distance(b'111100001', bits)".replace("b'111100001'", "X'F080'"),
                rewrite("SELECT b'111100001' <%> bits"));
        assertEquals("SELECT B'01', '{1:1}/2'", rewrite("SELECT B'01', '{1:1}/2'"), "only operands are rewritten");
        for (String bad : List.of("'{0:1}/5'", "'{6:1}/5'", "'{1}/5'", "'{x:1}/5'")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> rewrite("SELECT t <-> " + bad));
            assertTrue(e.getMessage().contains("is not position:value with a position from 1 to 5"), e.getMessage());
        }
    }

    @Test
    void quotedTextAndCommentsAreLeftAlone() {
        String sql = "SELECT 'a <-> b', `c <-> d`, \"e <#> f\" -- g <-> h\n /* i <+> j */ FROM t";
        assertEquals(sql, rewrite(sql));
        assertEquals("SELECT 'it''s', hs.l2_distance(a, b)", rewrite("SELECT 'it''s', a <-> b"));
    }

    @Test
    void operatorsWithoutOperandsAreLeftForSparkToRefuse() {
        assertEquals("SELECT <-> b", rewrite("SELECT <-> b"));
        assertEquals("SELECT a <->", rewrite("SELECT a <->"));
        assertEquals("SELECT a, <-> b", rewrite("SELECT a, <-> b"));
    }

    @Test
    void catalogNamesThatNeedQuotesAreQuoted() {
        assertEquals("`my-cat`.l2_distance(a, b)", PgVectorOperators.rewrite("a <-> b", "my-cat"));
    }
}
