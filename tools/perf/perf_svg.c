/* SPDX-License-Identifier: BSD-2-Clause */
/* rpcrdma perf --svg: the figures as a bar chart a browser opens. One row per operation,
 * size and depth; its bars (RDMA, libtirpc, raw provider) share the row's own scale, as
 * their units differ from row to row (calls/s for NULL, MB/s for data), and each RDMA bar
 * carries its ratios. Plain SVG 1.1, no script, no external resource. */
#include <stdio.h>
#include <string.h>

#include "perf_common.h"

#define W 980
#define LABEL_W 230
#define BAR_W 520
#define BAR_H 14
#define ROW_GAP 12
#define TOP 70

static const struct {
	const char *name, *colour;
} series[3] = { { "RPC-over-RDMA (librpcrdma)", "#1f77b4" },
		{ "ONC RPC over TCP (libtirpc)", "#ff7f0e" },
		{ "raw provider (bench_prov)", "#7f7f7f" } };

/* XML text: the labels are ours, but a provider name comes from the command line. */
static void text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

static void bar(FILE *f, int k, double v, double max, const char *unit, int y)
{
	int w = max > 0 ? (int)(BAR_W * v / max + 0.5) : 0;

	if (v <= 0)
		return;
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>\n", LABEL_W, y,
		w < 1 ? 1 : w, BAR_H - 2, series[k].colour);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">%.0f %s</text>\n", LABEL_W + w + 6,
		y + BAR_H - 4, v, unit);
}

int perf_svg_write(const char *path, const char *provider, const struct perf_svg_row *rows,
		   int n)
{
	int i, k, y, h = TOP + n * (3 * BAR_H + ROW_GAP) + 40;
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		W, h);
	fprintf(f, "<text x=\"10\" y=\"24\" font-size=\"16\" font-weight=\"bold\">rpcrdma perf: "
		"RPC-over-RDMA (");
	text(f, provider);
	fprintf(f, ") against ONC RPC over TCP; each row on its own scale</text>\n");
	for (k = 0; k < 3; k++)
		fprintf(f, "<rect x=\"%d\" y=\"38\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"49\" font-size=\"12\">%s</text>\n", 10 + k * 300,
			series[k].colour, 28 + k * 300, series[k].name);
	for (i = 0, y = TOP; i < n; i++, y += 3 * BAR_H + ROW_GAP) {
		const struct perf_svg_row *r = &rows[i];
		double max = r->rdma > r->tirpc ? r->rdma : r->tirpc;
		char ratio[96] = "";

		max = r->raw > max ? r->raw : max;
		if (r->tirpc > 0)
			snprintf(ratio, sizeof(ratio), "%.2fx libtirpc", r->rdma / r->tirpc);
		if (r->raw > 0)
			snprintf(ratio + strlen(ratio), sizeof(ratio) - strlen(ratio), "%s%.2fx raw",
				 ratio[0] ? ", " : "", r->rdma / r->raw);
		fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"12\">", y + BAR_H - 3);
		text(f, r->label);
		fprintf(f, "</text>\n");
		if (ratio[0])
			fprintf(f, "<text x=\"10\" y=\"%d\" font-size=\"11\" fill=\"#444\">%s</text>\n",
				y + 2 * BAR_H - 3, ratio);
		bar(f, 0, r->rdma, max, r->unit, y);
		bar(f, 1, r->tirpc, max, r->unit, y + BAR_H);
		bar(f, 2, r->raw, max, r->unit, y + 2 * BAR_H);
	}
	fprintf(f, "</svg>\n");
	return fclose(f) ? -1 : 0;
}
