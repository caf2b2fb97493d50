/* json_text.c — JSON text as ringkeeper writes it: jansson's, with every real number in the
 * shortest form that reads back as the same double (0.08, not 0.080000000000000002), so that
 * people read the figure they set and programs still get it exactly. jansson prints reals with
 * "%.17g", which always reads back; this only drops the digits that are not needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

#define NUMBER_MAX 32 /* "%.17g" of any double, with its sign, exponent and NUL */

/* A decimal number: its sign, its significant digits d0 d1 ... (no leading or trailing zeros) and
 * the power of ten of d0, so that it is d0.d1... x 10^exp. */
typedef struct decimal {
    int negative;
    char digits[NUMBER_MAX];
    int n;
    int exp;
} decimal;

/* The JSON number text `num` ("-0.0125", "1.5e-7", "12000000000000000.0") as a decimal. */
static void parse_decimal(const char *num, decimal *out)
{
    const char *p = num + (out->negative = num[0] == '-');
    int before_point = 0, zeros_after_point = 0, in_fraction = 0;
    out->n = 0;
    for (; *p && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.')
            in_fraction = 1;
        else if (out->n || *p != '0')
            out->digits[out->n++] = *p;
        else if (in_fraction)
            zeros_after_point++;
        before_point += !in_fraction && out->n;
    }
    while (out->n > 1 && out->digits[out->n - 1] == '0')
        out->n--;
    out->digits[out->n] = '\0';
    out->exp = (before_point ? before_point - 1 : -1 - zeros_after_point) + (*p ? atoi(p + 1) : 0);
}

/* `d` rounded to its first `p` significant digits (half up, as printf rounds the decimal it is
 * given), trailing zeros dropped. */
static decimal round_to(const decimal *d, int p)
{
    decimal r = *d;
    if (r.n <= p)
        return r;
    int up = r.digits[p] >= '5';
    r.n = p;
    for (int i = p - 1; up && i >= 0; i--) {
        up = r.digits[i] == '9';
        r.digits[i] = up ? '0' : r.digits[i] + 1;
    }
    if (up) { /* 9.99... rounded up to 10 */
        r.digits[0] = '1';
        r.n = 1;
        r.exp++;
    }
    while (r.n > 1 && r.digits[r.n - 1] == '0')
        r.n--;
    r.digits[r.n] = '\0';
    return r;
}

/* `d` as "%.<p>g" writes it, with jansson's exponent ("1e16", "1e-5") and ".0" on a real that
 * would read as an integer. At most 25 bytes: a sign, 17 digits, "0.000" or a point, "e-324". */
static void format_decimal(const decimal *d, int p, char out[NUMBER_MAX])
{
    char *o = out;
    if (d->negative)
        *o++ = '-';
    if (d->exp < -4 || d->exp >= p) { /* d0.d1...e<exp> */
        *o++ = d->digits[0];
        if (d->n > 1)
            *o++ = '.';
        memcpy(o, d->digits + 1, (size_t)d->n - 1);
        snprintf(o + d->n - 1, NUMBER_MAX - (size_t)(o + d->n - 1 - out), "e%d", d->exp);
        return;
    }
    int point = d->exp >= 0 ? d->exp + 1 : 0; /* digits before the point */
    for (int i = 0; i < point; i++)
        *o++ = i < d->n ? d->digits[i] : '0';
    if (!point)
        *o++ = '0';
    *o++ = '.';
    for (int i = 0; i < -d->exp - 1; i++)
        *o++ = '0';
    for (int i = point; i < d->n; i++)
        *o++ = d->digits[i];
    if (o[-1] == '.')
        *o++ = '0';
    *o = '\0';
}

/* The shortest form of `num`, jansson's "%.17g" of a double x, into `best`: the first of its
 * roundings to 15 and 16 digits that reads back as x, else `num` itself. Rounding the digits
 * jansson printed is what "%.15g" and "%.16g" of x would print, without printf's cost: most reals
 * a program computes need all 17 digits, and a plan has hundreds of thousands of them. When x is
 * within half an ulp of a 15-digit decimal its 16th and 17th digits are noise near 00 or 99 (about
 * 1e-16 of x either way), so any other pair rules 15 digits out without a try. */
static void shortest(const char *num, char best[NUMBER_MAX])
{
    decimal d;
    parse_decimal(num, &d);
    if (d.n > 15) {
        double x = strtod(num, NULL);
        int tail = d.n == 17 ? (d.digits[15] - '0') * 10 + (d.digits[16] - '0') : 0;
        for (int p = tail >= 12 && tail <= 88 ? 16 : 15; p < d.n; p++) {
            decimal r = round_to(&d, p);
            char sci[2 * NUMBER_MAX]; /* a sign, 17 digits, a point, "e-324" */
            snprintf(sci, sizeof sci, "%s%c.%se%d", d.negative ? "-" : "", r.digits[0],
                     r.digits + 1, r.exp);
            if (strtod(sci, NULL) == x) {
                format_decimal(&r, p, best);
                return;
            }
        }
    }
    if (d.n <= 15) /* as "%.15g" writes it: 1.2e16 for jansson's 12000000000000000.0 */
        format_decimal(&d, 15, best);
    if (d.n > 15 || strlen(best) > strlen(num))
        snprintf(best, NUMBER_MAX, "%s", num);
}

/* The length of the number at `p` (a JSON number: sign, digits, fraction, exponent). */
static size_t number_len(const char *p)
{
    return strspn(p, "-+0123456789.eE");
}

/* The length of the string token at `p` (its opening quote), quotes included. */
static size_t string_len(const char *p)
{
    size_t n = 1;
    for (;;) {
        n += strcspn(p + n, "\"\\");
        if (p[n] != '\\' || !p[n + 1])
            return p[n] ? n + 1 : n;
        n += 2; /* an escaped character, an escaped quote among them */
    }
}

/* Rewrites, in place, each real of the JSON text `s` (a number with a fraction or an exponent,
 * outside strings) in its shortest form; never longer than jansson's "%.17g". */
static void shorten_reals(char *s)
{
    char *out = s;
    const char *p = s;
    while (*p) {
        size_t n = *p == '"'                               ? string_len(p)
                   : *p == '-' || (*p >= '0' && *p <= '9') ? number_len(p)
                                                           : 1;
        char num[NUMBER_MAX], best[NUMBER_MAX];
        if (*p != '"' && n > 1 && n < NUMBER_MAX && strcspn(p, ".eE") < n) {
            memcpy(num, p, n);
            num[n] = '\0';
            shortest(num, best);
            size_t m = strlen(best);
            if (m > n) /* never: no digit is added and the exponent is jansson's; stay safe */
                memcpy(best, num, (m = n) + 1);
            memcpy(out, best, m);
            out += m;
        } else {
            memmove(out, p, n);
            out += n;
        }
        p += n;
    }
    *out = '\0';
}

char *rk_json_dumps(const struct json_t *v, size_t flags)
{
    char *text = json_dumps(v, flags | JSON_REAL_PRECISION(17));
    if (text)
        shorten_reals(text);
    return text;
}
