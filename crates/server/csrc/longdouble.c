/* Long double arithmetic for INCRBYFLOAT and HINCRBYFLOAT, exactly as Redis does it:
 * parse both operands with strtold (Redis's string2ld rules), add, reject NaN/Infinity,
 * and print with "%.17Lf" with trailing zeroes removed (Redis's ld2string, LD_STR_HUMAN).
 * Rust has no long double, hence this small C file. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LONG_DOUBLE_CHARS (5 * 1024)

static int parse_ld(const char *s, size_t len, long double *out) {
    char buf[MAX_LONG_DOUBLE_CHARS];
    char *end;
    long double v;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtold(buf, &end);
    /* end must reach the full length: "1\0" + "2" is not a number (Redis 7.0.15). */
    if (isspace((unsigned char)buf[0]) || end != buf + len ||
        (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO)) ||
        errno == EINVAL || isnan(v))
        return 0;
    *out = v;
    return 1;
}

/* Returns the length written to out, or -1 (base is not a float), -2 (increment is not a
 * float), -3 (the result is NaN or infinite), -4 (out too small). */
int skerry_ld_add(const char *base, size_t base_len, const char *incr, size_t incr_len,
                  char *out, size_t out_len) {
    long double a = 0, b, r;
    int n;
    if (base != NULL && !parse_ld(base, base_len, &a)) return -1;
    if (!parse_ld(incr, incr_len, &b)) return -2;
    r = a + b;
    if (isnan(r) || isinf(r)) return -3;
    n = snprintf(out, out_len, "%.17Lf", r);
    if (n < 0 || (size_t)n + 1 > out_len) return -4;
    if (strchr(out, '.') != NULL) {
        char *p = out + n - 1;
        while (*p == '0') { p--; n--; }
        if (*p == '.') n--;
    }
    /* "-0" prints as "0" in Redis, since -0.0 + x never yields it except for -0 itself. */
    if (n == 2 && out[0] == '-' && out[1] == '0') { out[0] = '0'; n = 1; }
    out[n] = '\0';
    return n;
}
