/*
 * genpolicy.c - see genpolicy.h.
 */
#include "genpolicy.h"

size_t cairn__gen_take_from(const uint64_t *rows, size_t n, uint64_t fresh, unsigned ratio,
                            size_t max, size_t keep)
{
    size_t j = n;
    uint64_t acc = fresh;
    /* Taking files j..n-1 leaves j of them under the new one: j + 1 in all. */
    while (j > keep && (rows[j - 1] <= (uint64_t)ratio * acc || j + 1 > max)) {
        acc += rows[j - 1];
        j--;
    }
    return j;
}

int cairn__gen_tiered_run(const uint64_t *rows, size_t n, size_t fanin, unsigned ratio,
                          size_t max, size_t *j_out, size_t *k_out)
{
    size_t e = n;
    while (e-- > 0) {
        size_t j = e;
        uint64_t lo = rows[e], hi = lo;
        while (j > 0 && rows[j - 1] <= (uint64_t)ratio * (hi ? hi : 1) &&
               rows[j - 1] * ratio >= lo) {
            j--;
            hi = rows[j] > hi ? rows[j] : hi;
            lo = rows[j] < lo ? rows[j] : lo;
        }
        if (e - j + 1 >= fanin) {
            *j_out = j;
            *k_out = e;
            return 1;
        }
        e = j;
    }
    if (n >= 2 && n + 2 > max) {
        *j_out = n - 2;
        *k_out = n - 1;
        return 1;
    }
    return 0;
}
