/*
 * jpath.c - paths into JSON documents and the comparison of what they
 * find (jpath.h).
 */
#include "jpath.h"

#include <cjson/cJSON.h>
#include <string.h>

const cJSON *cairn__jpath_get(const cJSON *o, const char *p, size_t n)
{
    size_t i = 0;
    while (o != NULL && i < n) {
        size_t k = i;
        char name[4096];
        while (k < n && p[k] != '.' && p[k] != '[')
            k++;
        if (k == i && (k == n || p[k] == '.'))
            return NULL; /* an empty name: no member has it */
        if (k > i) {
            if (k - i >= sizeof name || !cJSON_IsObject(o))
                return NULL;
            memcpy(name, p + i, k - i);
            name[k - i] = 0;
            o = cJSON_GetObjectItemCaseSensitive(o, name);
        }
        while (o != NULL && k < n && p[k] == '[') {
            size_t e = k + 1;
            long idx = 0;
            while (e < n && p[e] >= '0' && p[e] <= '9' && idx < 100000000)
                idx = idx * 10 + (p[e++] - '0');
            if (e == k + 1 || e >= n || p[e] != ']' || !cJSON_IsArray(o))
                return NULL;
            o = cJSON_GetArrayItem(o, (int)idx);
            k = e + 1;
        }
        if (k < n && p[k] != '.')
            return NULL;
        i = k + 1;
    }
    return o;
}

static int test_one(const cJSON *v, int op, const cJSON *want, const char *want_text)
{
    if (op == CAIRN__JPATH_EQ)
        return want != NULL ? cJSON_Compare(v, want, 1)
                            : cJSON_IsString(v) && strcmp(v->valuestring, want_text) == 0;
    if (!cJSON_IsNumber(v) || !cJSON_IsNumber(want))
        return 0;
    return op == CAIRN__JPATH_GE ? v->valuedouble >= want->valuedouble
                                 : v->valuedouble <= want->valuedouble;
}

int cairn__jpath_test(const cJSON *v, int op, const cJSON *want, const char *want_text,
                      int in_array)
{
    const cJSON *e;
    if (v == NULL)
        return 0;
    if (test_one(v, op, want, want_text))
        return 1;
    if (!in_array || op != CAIRN__JPATH_EQ || !cJSON_IsArray(v))
        return 0;
    cJSON_ArrayForEach(e, v)
        if (test_one(e, op, want, want_text))
            return 1;
    return 0;
}
