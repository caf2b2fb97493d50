/* text.c — what text an id or addr may hold: valid UTF-8 without a character that a terminal hides
 * or applies instead of showing (ringkeeper.h, rk_text_hidden). Unicode's own properties decide,
 * through libunistring, rather than a hand list that misses marks (U+00AD, U+034F, U+061C ...). */
#include <unictype.h>

#include "ringkeeper.h"

size_t rk_utf8_next(const char *s, size_t left, uint32_t *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    unsigned c = left ? p[0] : 0;
    size_t len = c < 0x80                 ? 1
                 : c >= 0xC2 && c <= 0xDF ? 2
                 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4
                                          : 0;
    if (len == 0 || len > left)
        return 0;
    uint32_t v = len == 1 ? c : c & (0x7Fu >> len);
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xC0) != 0x80)
            return 0;
        v = (v << 6) | (p[k] & 0x3Fu);
    }
    /* overlong (a shorter form exists), a surrogate, or past U+10FFFF */
    if ((len == 3 && v < 0x800) || (len == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    *cp = v;
    return len;
}

int rk_text_hidden(uint32_t cp)
{
    /* U+2800 BRAILLE PATTERN BLANK prints as a blank and belongs to no property that says so */
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) ||
           uc_is_property_default_ignorable_code_point(cp) || uc_is_property_bidi_control(cp) ||
           uc_is_general_category(cp, UC_LINE_SEPARATOR) ||
           uc_is_general_category(cp, UC_PARAGRAPH_SEPARATOR) || cp == 0x2800;
}
