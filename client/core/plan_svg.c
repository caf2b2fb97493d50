/* plan_svg.c — renders a plan as one self-contained SVG picture: the two rings, the moving arcs and
 * per-node share bars, for change tickets, runbooks and the console (server/ui/).
 *
 * The picture is bounded whatever the ring: each of its three circles (before, moving, after) draws
 * at most RKI_LAYER_MAX arcs (picture.c), and at most MAX_BARS nodes get bars. A layer of more
 * stretches is drawn from BINS equal bins instead, each bin in the colour of its longest stretch:
 * stretches below a pixel merge into their neighbours, and the SVG says so in a comment. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define BINS      1440 /* a quarter of a degree: about a pixel on the drawn rings */
#define MAX_BARS  32   /* nodes with share bars; on bigger rings, the most changed ones */
#define PI        3.14159265358979323846
#define MIN_SWEEP (0.25 / 360) /* a moving arc is never drawn thinner than this, or it vanishes */

#define CX     300.0 /* centre of the rings */
#define CY     330.0
#define R_OUT  250.0 /* the ring before */
#define R_MOVE 214.0 /* the moving arcs, between the two */
#define R_IN   178.0 /* the ring after */

/* A node's colour from its id alone, so that it is the same in every picture, every version and the
 * console (server/ui/ringdraw.js computes it the same way; tests/console checks the two agree):
 * FNV-1a of the id's bytes into Paul Tol's "muted" palette, made to stay distinct for colour-blind
 * readers, and one orange. Two nodes may share a colour: ids label every bar, and the console's
 * hover names each arc's owner. */
static const char *node_colour(const char *id)
{
    static const char *const palette[] = {"#cc6677", "#332288", "#ddcc77", "#117733", "#88ccee",
                                          "#882255", "#44aa99", "#999933", "#aa4499", "#ee7733"};
    uint32_t h = 2166136261u;
    for (const unsigned char *s = (const unsigned char *)id; *s; s++)
        h = (h ^ *s) * 16777619u;
    return palette[h % (sizeof palette / sizeof *palette)];
}

/* Text for XML content and attribute values; control characters (only a file name can hold
 * them) become '?', which XML 1.0 could not carry. */
static void put_escaped(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '&')
            fputs("&amp;", f);
        else if (ch == '<')
            fputs("&lt;", f);
        else if (ch == '>')
            fputs("&gt;", f);
        else if (ch == '"')
            fputs("&quot;", f);
        else
            fputc(ch < 0x20 || ch == 0x7f ? '?' : ch, f);
    }
}

/* An arc of the circle of radius r from fraction f0 to f1 of the hash space (clockwise from the
 * top), stroked in `colour`. */
static void put_arc(FILE *f, const char *cls, double r, double width, double f0, double f1,
                    const char *colour)
{
    if (f1 - f0 >= 1 - 1e-9) {
        fprintf(f, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" stroke=\"%s\"/>\n", cls,
                CX, CY, r, colour);
        return;
    }
    double a0 = 2 * PI * f0 - PI / 2, a1 = 2 * PI * f1 - PI / 2;
    fprintf(f,
            "<path class=\"%s\" stroke=\"%s\" stroke-width=\"%.0f\" d=\"M%.2f %.2f A%.1f %.1f 0 "
            "%d 1 %.2f %.2f\"/>\n",
            cls, colour, width, CX + r * cos(a0), CY + r * sin(a0), r, r, f1 - f0 > 0.5,
            CX + r * cos(a1), CY + r * sin(a1));
}

/* Draws a layer: its stretches when they fit, else runs of bins of one node (of `nodes`). */
static void put_layer(FILE *f, const rki_layer *l, const rk_plan_node *nodes, const char *cls,
                      double r, double width, double min_sweep)
{
    if (l->stretches <= RKI_LAYER_MAX) {
        for (size_t k = 0; k < l->n; k++) {
            double f0 = (double)l->exact[k].first / l->space;
            double f1 = ((double)l->exact[k].last + 1.0) / l->space, pad = 0;
            if (f1 - f0 < min_sweep)
                pad = (min_sweep - (f1 - f0)) / 2;
            put_arc(f, cls, r, width, f0 - pad, f1 + pad, node_colour(nodes[l->exact[k].node].id));
        }
        return;
    }
    fprintf(f,
            "<!-- %s: %zu arcs, over the cap of %d: drawn from %d bins, each in the colour of "
            "its longest arc -->\n",
            cls, l->stretches, RKI_LAYER_MAX, BINS);
    for (size_t b = 0; b < BINS;) {
        size_t e = b + 1;
        while (e < BINS && l->best_of[e] == l->best_of[b])
            e++;
        if (l->best_of[b] != RK_NO_NODE)
            put_arc(f, cls, r, width, (double)b / BINS, (double)e / BINS,
                    node_colour(nodes[l->best_of[b]].id));
        b = e;
    }
}

typedef struct ranked {
    double change; /* gained + lost */
    size_t node;   /* plan node index */
} ranked;

/* Most changed first, then in id order. */
static int by_change(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->change != y->change)
        return x->change < y->change ? 1 : -1;
    return x->node < y->node ? -1 : x->node > y->node;
}

static int by_node(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    return x->node < y->node ? -1 : x->node > y->node;
}

/* The nodes that get bars, in id order: all, or the MAX_BARS most changed. */
static size_t bar_nodes(const rk_plan_node *nodes, size_t nn, ranked **out)
{
    ranked *r = malloc((nn ? nn : 1) * sizeof *r);
    if (!r)
        return 0;
    for (size_t k = 0; k < nn; k++)
        r[k] = (ranked){nodes[k].gained + nodes[k].lost, k};
    if (nn > MAX_BARS)
        qsort(r, nn, sizeof *r, by_change);
    size_t n = nn > MAX_BARS ? MAX_BARS : nn;
    qsort(r, n, sizeof *r, by_node);
    *out = r;
    return n;
}

static void put_bar(FILE *f, const char *cls, double y, double share, double scale,
                    const char *colour)
{
    fprintf(
        f, "<rect class=\"%s\" x=\"700\" y=\"%.1f\" width=\"%.2f\" height=\"5\" fill=\"%s\"%s/>\n",
        cls, y, share * scale, colour, strcmp(cls, "bar-after") ? " fill-opacity=\"0.45\"" : "");
}

/* Legend and bars: per shown node its colour, id, and share before (pale), after (full) and the
 * ideal after (a black tick). */
static int put_bars(FILE *f, const rk_plan *p, double *bottom)
{
    size_t nn;
    ranked *idx = NULL;
    const rk_plan_node *nodes = rk_plan_nodes(p, &nn);
    size_t n = bar_nodes(nodes, nn, &idx);
    if (!idx)
        return RK_ENOMEM;
    double top = 0;
    for (size_t k = 0; k < n; k++) {
        const rk_plan_node *x = &nodes[idx[k].node];
        top = fmax(top, fmax(x->ideal_after, fmax(x->share_before, x->share_after)));
    }
    double scale = top > 0 ? 240 / top : 0, y = 96;
    fprintf(f, "<text x=\"590\" y=\"80\" class=\"h\">share before (pale) / after, | ideal");
    if (n < nn)
        fprintf(f, ": the %zu most changed of %zu nodes", n, nn);
    fprintf(f, "</text>\n");
    for (size_t k = 0; k < n; k++, y += 18) {
        const rk_plan_node *x = &nodes[idx[k].node];
        const char *colour = node_colour(x->id);
        fprintf(f,
                "<rect class=\"swatch\" x=\"590\" y=\"%.1f\" width=\"10\" height=\"10\" "
                "fill=\"%s\"/><text x=\"604\" y=\"%.1f\" class=\"id\">",
                y, colour, y + 9);
        put_escaped(f, x->id);
        fprintf(f, "</text>\n");
        put_bar(f, "bar-before", y, x->share_before, scale, colour);
        put_bar(f, "bar-after", y + 6, x->share_after, scale, colour);
        fprintf(f, "<rect class=\"ideal\" x=\"%.2f\" y=\"%.1f\" width=\"1.5\" height=\"13\"/>\n",
                700 + x->ideal_after * scale - 0.75, y - 1);
    }
    free(idx);
    *bottom = y;
    return RK_OK;
}

static void put_side(FILE *f, const rk_plan *p, const rk_plan_meta *meta, int after)
{
    int64_t v = meta ? (after ? meta->to_version : meta->from_version) : 0;
    const char *label = meta ? (after ? meta->to_label : meta->from_label) : NULL;
    if (v > 0)
        fprintf(f, "v%lld", (long long)v);
    else if (label)
        put_escaped(f, label);
    fprintf(f, " (%s)", rki_plan_fingerprint(p, after));
}

static void put_title(FILE *f, const rk_plan *p, const rk_plan_meta *meta)
{
    fprintf(f, "plan ");
    if (meta && meta->cluster)
        put_escaped(f, meta->cluster), fputc(' ', f);
    put_side(f, p, meta, 0);
    fprintf(f, " \xe2\x86\x92 ");
    put_side(f, p, meta, 1);
    fprintf(f, ": moved %.4f%% (minimal %.4f%%)", 100 * rk_plan_moved_fraction(p),
            100 * rk_plan_minimal_fraction(p));
}

/* One circle of the picture, drawn from `ring` (that side's, or NULL: rebuilt); RK_OK or an
 * error code. */
static int put_circle(FILE *f, const rk_plan *p, rk_plan_circle circle, const rk_ring *ring,
                      rki_layer *l)
{
    static const struct {
        const char *cls;
        double radius, width, min_sweep;
    } look[] = {{"before", R_OUT, 30, 0}, {"move", R_MOVE, 14, MIN_SWEEP}, {"after", R_IN, 30, 0}};
    rk_error err = {0};
    const rk_topology *t = rki_plan_topology(p, 0);
    int rc = rki_layer_init(l, rki_topology_scheme(t)->bits(t), BINS);
    rc = rc ? rc : rki_plan_layer(l, p, circle, ring, &err);
    size_t nn;
    if (rc == RK_OK)
        put_layer(f, l, rk_plan_nodes(p, &nn), look[circle].cls, look[circle].radius,
                  look[circle].width, look[circle].min_sweep);
    rki_layer_deinit(l);
    return rc;
}

static int put_rings(FILE *f, const rk_plan *p, const rk_ring *before, const rk_ring *after,
                     rki_layer *l)
{
    size_t na;
    int rc = put_circle(f, p, RK_PLAN_BEFORE, before, l);
    if (rc == RK_OK && rk_plan_arcs(p, &na) && na > 0)
        rc = put_circle(f, p, RK_PLAN_MOVING, NULL, l);
    return rc ? rc : put_circle(f, p, RK_PLAN_AFTER, after, l);
}

static int put_svg(FILE *f, const rk_plan *p, const rk_plan_meta *meta, const rk_ring *before,
                   const rk_ring *after, rki_layer *l)
{
    char *bars = NULL;
    size_t size = 0;
    double bottom = 0;
    FILE *b = open_memstream(&bars, &size);
    int rc = b ? put_bars(b, p, &bottom) : RK_ENOMEM;
    if (b && fclose(b) && rc == RK_OK)
        rc = RK_ENOMEM;
    double height = fmax(640, bottom + 24);
    if (rc == RK_OK) {
        fprintf(f,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"960\" height=\"%.0f\" "
                "viewBox=\"0 0 960 %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n<title>",
                height, height);
        put_title(f, p, meta);
        fprintf(f,
                "</title>\n<style>path,circle{fill:none}circle{stroke-width:30}"
                "circle.move{stroke-width:14}.ideal{fill:#000}.h{font-weight:bold}</style>\n"
                "<rect width=\"960\" height=\"%.0f\" fill=\"#fff\"/>\n"
                "<text x=\"20\" y=\"30\" class=\"h\" font-size=\"15\">",
                height);
        put_title(f, p, meta);
        fprintf(f, "</text>\n<text x=\"20\" y=\"50\">outer ring: before; inner ring: after; "
                   "middle: the moving arcs, in the colour of the node they move to</text>\n");
        rc = put_rings(f, p, before, after, l);
        fputs(bars, f);
        fprintf(f, "</svg>\n");
    }
    free(bars);
    return rc;
}

char *rk_plan_to_svg(const rk_plan *p, const rk_plan_meta *meta)
{
    return rk_plan_to_svg_rings(p, meta, NULL, NULL);
}

char *rk_plan_to_svg_rings(const rk_plan *p, const rk_plan_meta *meta, const rk_ring *before,
                           const rk_ring *after)
{
    char *buf = NULL;
    size_t size = 0;
    rki_layer *l = malloc(sizeof *l);
    FILE *f = l ? open_memstream(&buf, &size) : NULL;
    if (!f) {
        free(l);
        return NULL;
    }
    int rc = put_svg(f, p, meta, before, after, l);
    free(l);
    if (fclose(f) || rc != RK_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}
