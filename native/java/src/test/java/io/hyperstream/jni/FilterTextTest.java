package io.hyperstream.jni;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Filters written as WHERE-clause text become the predicates {@link Filters} builds for them. */
class FilterTextTest {
    @Test
    void whereClauseTextBecomesTheNativeFilter() {
        assertEquals(Filters.eq("category", "c3"), FilterText.parse("category = 'c3'"));
        assertEquals(Filters.and(Filters.in("category", List.of("c3", "it's")), Filters.ge("id", 300L)),
                FilterText.parse(" category IN ('c3', 'it''s') and id >= 300 "));
        assertEquals(Filters.or(Filters.ne("x", 1.5), Filters.not(Filters.and(Filters.ge("id", -2L), Filters.le("id", 7L)))),
                FilterText.parse("x != 1.5 OR id NOT BETWEEN -2 AND 7"));
        assertEquals(Filters.and(Filters.notNull("Name"), Filters.not(Filters.isNull("b"))),
                FilterText.parse("\"Name\" IS NOT NULL AND NOT (b IS NULL)"));
        assertEquals(Filters.and(Filters.startsWith("name", "ab"), Filters.not(Filters.in("k", List.of(true, false)))),
                FilterText.parse("name LIKE 'ab%' AND k NOT IN (TRUE, FALSE)"));
        assertEquals(Filters.lt("v", 1e-3), FilterText.parse("v < 1e-3"));
    }

    @Test
    void whatItCannotReadIsRefusedWithItsPlace() {
        for (String[] bad : new String[][] {
            {"", "position 1: expected a column name"},
            {"id =", "position 5: expected a number, a 'string', TRUE or FALSE"},
            {"id = 3 AND", "position 11: expected a column name"},
            {"id + 1 = 3", "position 4: expected a comparison, IN, BETWEEN, LIKE or IS after column id"},
            {"name LIKE '%x'", "position 11: LIKE takes a 'prefix%' pattern only"},
            {"name = 'open", "unterminated string"},
            {"(id = 1", "expected ')'"},
            {"id = 1 garbage", "position 8: unexpected 'garbage'"},
        }) {
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, () -> FilterText.parse(bad[0]), bad[0]);
            assertEquals(true, e.getMessage().contains(bad[1]), e.getMessage());
        }
    }
}
