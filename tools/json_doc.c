/* SPDX-License-Identifier: BSD-2-Clause */
/* --json for ping, serve and perf: one JSON document, so that `python3 -m json.tool` and
 * `jq .` read it. The commands write one object per line as they go (what --json-lines
 * shows); here those lines are held and written at the end as one object: the run, the
 * results and the summary, each under its name. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static FILE *real_stdout;
static char *held;
static size_t held_len;

/* What each kind of line becomes, by its first key, in the document's order. unwrap: the
 * line is {"KEY":VALUE} and VALUE is what goes in; list: every such line, in an array. */
static const struct {
	const char *key, *name;
	int unwrap, list;
} kinds[] = {
	{ "run", "run", 1, 0 },               /* perf */
	{ "listening", "listening", 1, 0 },   /* serve */
	{ "seq", "results", 0, 1 },           /* ping */
	{ "transport", "results", 0, 1 },     /* perf */
	{ "ratio", "ratios", 0, 1 },          /* perf --compare */
	{ "interval", "intervals", 1, 1 },    /* perf -i */
	{ "idle", "idle", 1, 1 },             /* perf --idle */
	{ "statistics", "reports", 0, 1 },    /* serve: SIGUSR1, exit */
	{ "error", "errors", 0, 1 },
	{ "host", "summary", 0, 0 },          /* ping */
	{ "summary", "summary", 1, 0 },       /* perf */
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Lists the command documents as always there: written as [] when nothing went in them,
 * so that a script reads doc["ratios"] of any run, a failed one too. */
static const char *kept[8];
static int nkept;

void json_doc_keep(const char *name)
{
	if (nkept < (int)(sizeof(kept) / sizeof(kept[0])))
		kept[nkept++] = name;
}

static int is_kept(const char *name)
{
	int i;

	for (i = 0; i < nkept; i++)
		if (!strcmp(kept[i], name))
			return 1;
	return 0;
}

void json_doc_begin(void)
{
	FILE *m;

	fflush(stdout);
	m = open_memstream(&held, &held_len);
	if (!m)
		return;   /* then the lines go out as they come */
	real_stdout = stdout;
	stdout = m;
}

static int kind_of(const char *line)
{
	size_t i, n;

	for (i = 0; i < NKINDS; i++) {
		n = strlen(kinds[i].key);
		if (!strncmp(line, "{\"", 2) && !strncmp(line + 2, kinds[i].key, n) &&
		    !strncmp(line + 2 + n, "\":", 2))
			return (int)i;
	}
	return -1;
}

/* The line's value for its kind: the whole object, or what {"KEY":...} holds. */
static void put_value(FILE *f, const char *line, size_t len, int k)
{
	size_t skip = kinds[k].unwrap ? strlen(kinds[k].key) + 4 : 0;

	if (kinds[k].unwrap && len > skip && line[len - 1] == '}')
		fwrite(line + skip, 1, len - skip - 1, f);
	else
		fwrite(line, 1, len, f);
}

/* Every line of kind k (several kinds may share a name: ping's and perf's results). */
static int put_kind(FILE *f, char **lines, size_t *lens, int *kind, size_t n, const char *name,
		    int list, int first)
{
	size_t i;
	int any = 0;

	for (i = 0; i < n; i++) {
		if (kind[i] < 0 || strcmp(kinds[kind[i]].name, name))
			continue;
		if (!any)
			fprintf(f, "%s\"%s\":%s", first ? "" : ",", name, list ? "[" : "");
		else if (list)
			fputc(',', f);
		else
			continue;   /* one value only: the first */
		put_value(f, lines[i], lens[i], kind[i]);
		any = 1;
	}
	if (any && list)
		fputc(']', f);
	return any;
}

/* Objects of a kind not in the table: kept, never dropped. */
static void put_others(FILE *f, char **lines, size_t *lens, int *kind, size_t n, int first)
{
	size_t i;
	int any = 0;

	for (i = 0; i < n; i++) {
		if (kind[i] >= 0 || lines[i][0] != '{')
			continue;
		fprintf(f, "%s%.*s", any ? "," : first ? "\"other\":[" : ",\"other\":[",
			(int)lens[i], lines[i]);
		any = 1;
	}
	if (any)
		fputc(']', f);
}

static void write_document(FILE *f, char *text)
{
	size_t n = 0, cap = 0, i, k;
	char **lines = NULL, *p, *nl;
	size_t *lens = NULL;
	int *kind = NULL, first = 1, json = 0;

	for (p = text; p && *p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (n == cap) {
			cap = cap * 2 + 16;
			lines = realloc(lines, cap * sizeof(*lines));
			lens = realloc(lens, cap * sizeof(*lens));
			kind = realloc(kind, cap * sizeof(*kind));
			if (!lines || !lens || !kind)
				abort();
		}
		lines[n] = p;
		lens[n] = nl ? (size_t)(nl - p) : strlen(p);
		kind[n] = kind_of(p);
		json += p[0] == '{';
		if (p[0] != '{' && lens[n])   /* text (--help): as it is, before the document */
			fprintf(f, "%.*s\n", (int)lens[n], p);
		n++;
	}
	if (json == 1 && n && kind[0] >= 0 && !strcmp(kinds[kind[0]].key, "error")) {
		fprintf(f, "%.*s\n", (int)lens[0], lines[0]);   /* a failure alone: that object */
	} else if (json) {
		fputc('{', f);
		for (k = 0; k < NKINDS; k++) {
			for (i = 0; i < k && strcmp(kinds[i].name, kinds[k].name); i++)
				;
			if (i < k)
				continue;   /* a name already written */
			if (put_kind(f, lines, lens, kind, n, kinds[k].name, kinds[k].list, first))
				first = 0;
			else if (kinds[k].list && is_kept(kinds[k].name))
				first = !fprintf(f, "%s\"%s\":[]", first ? "" : ",", kinds[k].name);
		}
		put_others(f, lines, lens, kind, n, first);
		fputs("}\n", f);
	}
	free(lines);
	free(lens);
	free(kind);
}

void json_doc_end(void)
{
	FILE *m = stdout;

	if (!real_stdout)
		return;
	fclose(m);
	stdout = real_stdout;
	real_stdout = NULL;
	write_document(stdout, held);
	fflush(stdout);
	free(held);
	held = NULL;
}

/* --json-lines is --json to the command, without the document around it. */
int json_doc_args(int argc, char **argv)
{
	static char json[] = "--json";
	int i, doc = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json-lines"))
			argv[i] = json;
		else if (!strcmp(argv[i], "--json"))
			doc = 1;
	}
	return doc;
}
