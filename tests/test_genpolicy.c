/*
 * test_genpolicy.c - the merge policy the memory index and the graph
 * generations share (engine/log/genpolicy.h): what a file written on the
 * caller's time takes in, and what the merger merges, over row counts.
 *
 * The properties are checked on chains grown by the rule itself, as a
 * store grows them: many small files in a row, then sizes drawn at random.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "genpolicy.h"

#define MAX 12

/* The chain after a new file of `fresh` rows written by the rule. */
static size_t grow(uint64_t *rows, size_t n, uint64_t fresh, unsigned ratio, size_t keep)
{
    size_t j = cairn__gen_take_from(rows, n, fresh, ratio, MAX, keep);
    uint64_t sum = fresh;
    assert_true(j <= n);
    assert_true(j >= keep || j == n);
    for (size_t i = j; i < n; i++)
        sum += rows[i];
    rows[j] = sum;
    return j + 1;
}

static unsigned popcount(uint64_t v)
{
    unsigned c = 0;
    for (; v; v &= v - 1)
        c++;
    return c;
}

/* Ratio 1, files of one row: the chain is the binary number of the rows,
 * a file of each power of 2 set in it, largest first. */
static void ratio_one_is_a_binary_counter(void **state)
{
    uint64_t rows[MAX + 1];
    size_t n = 0;
    (void)state;
    for (uint64_t total = 1; total <= 3000; total++) {
        uint64_t left = total;
        n = grow(rows, n, 1, 1, 0);
        assert_int_equal(n, popcount(total));
        for (size_t i = 0; i < n; i++) {
            uint64_t top = (uint64_t)1 << (63 - __builtin_clzll(left));
            assert_int_equal(rows[i], top);
            left -= top;
        }
        assert_int_equal(left, 0);
    }
}

/* Ratio 2: until the chain first fills, each file holds more than twice
 * the next, so that the chain stays logarithmic; no row is lost; a file
 * below `keep` is never taken. */
static void each_file_outweighs_the_next(void **state)
{
    uint64_t rows[MAX + 1], seed = 42;
    (void)state;
    for (size_t keep = 0; keep <= 1; keep++) {
        size_t n = 0;
        uint64_t total = 0, base = 0;
        if (keep) { /* a whole file under the chain, as the graph's */
            rows[0] = base = 1u << 30;
            n = 1;
        }
        for (int step = 0; step < 5000; step++) {
            uint64_t fresh, sum = 0;
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            fresh = 1 + (seed >> 33) % 1000;
            total += fresh;
            n = grow(rows, n, fresh, 2, keep);
            assert_true(n <= MAX);
            for (size_t i = 0; i < n; i++)
                sum += rows[i];
            assert_int_equal(sum, total + base);
            if (keep)
                assert_int_equal(rows[0], base);
            for (size_t i = keep + 1; i < n; i++)
                assert_true(rows[i - 1] > 2 * rows[i]);
        }
    }
}

/* A full chain makes the new file take files the ratio alone would not. */
static void a_full_chain_takes_more(void **state)
{
    uint64_t rows[MAX];
    (void)state;
    for (size_t i = 0; i < MAX; i++)
        rows[i] = (uint64_t)1 << (40 - 3 * i); /* each 8 times the next */
    assert_int_equal(cairn__gen_take_from(rows, MAX, 1, 2, MAX, 0), MAX - 1);
    assert_int_equal(cairn__gen_take_from(rows, MAX - 1, 1, 2, MAX, 0), MAX - 1);
    assert_int_equal(cairn__gen_take_from(rows, MAX - 2, 1, 2, MAX, 0), MAX - 2);
    /* keep holds even then */
    assert_int_equal(cairn__gen_take_from(rows, 2, 1, 2, 2, 1), 1);
}

/* The merger: the newest run of at least fanin files within ratio of one
 * another, anywhere in the chain; the two newest when one more file would
 * fill it; else nothing. */
static void the_merger_takes_the_newest_run_of_one_size(void **state)
{
    size_t j = 99, k = 99;
    (void)state;
    {
        const uint64_t r[] = {1000, 100, 90, 80, 70, 10};
        assert_int_equal(cairn__gen_tiered_run(r, 6, 4, 2, MAX, &j, &k), 1);
        assert_int_equal(j, 1);
        assert_int_equal(k, 4);
    }
    {
        const uint64_t r[] = {100, 90, 80, 70, 20, 19, 18, 17};
        assert_int_equal(cairn__gen_tiered_run(r, 8, 4, 2, MAX, &j, &k), 1);
        assert_int_equal(j, 4); /* the newer run first */
        assert_int_equal(k, 7);
    }
    {
        const uint64_t r[] = {1000, 300, 100, 30, 10};
        j = k = 99;
        assert_int_equal(cairn__gen_tiered_run(r, 5, 4, 2, MAX, &j, &k), 0);
        assert_int_equal(j, 99);
    }
    {
        uint64_t r[MAX - 1];
        for (size_t i = 0; i < MAX - 1; i++)
            r[i] = (uint64_t)1 << (40 - 3 * i);
        assert_int_equal(cairn__gen_tiered_run(r, MAX - 1, 4, 2, MAX, &j, &k), 1);
        assert_int_equal(j, MAX - 3);
        assert_int_equal(k, MAX - 2);
        assert_int_equal(cairn__gen_tiered_run(r, MAX - 2, 4, 2, MAX, &j, &k), 0);
    }
    {
        const uint64_t r[] = {0, 0, 0, 0}; /* empty files are of one size */
        assert_int_equal(cairn__gen_tiered_run(r, 4, 4, 2, MAX, &j, &k), 1);
        assert_int_equal(j, 0);
        assert_int_equal(k, 3);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ratio_one_is_a_binary_counter),
        cmocka_unit_test(each_file_outweighs_the_next),
        cmocka_unit_test(a_full_chain_takes_more),
        cmocka_unit_test(the_merger_takes_the_newest_run_of_one_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
