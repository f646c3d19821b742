/* SPDX-License-Identifier: BSD-2-Clause */
/* The JSON shape of one RPC-over-RDMA message, as `rpcrdma decode --json` prints it
 * and `rpcrdma encode --json` reads it (docs/CLI.md). Printing is plain stdio; parsing
 * uses json-c. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"

static void seg_json(FILE *f, const struct rpcrdma_segment *s)
{
	fprintf(f, "\"handle\":\"0x%08" PRIx32 "\",\"length\":%" PRIu32
		   ",\"offset\":\"0x%016" PRIx64 "\"",
		s->handle, s->length, s->offset);
}

static void chunk_json(FILE *f, const struct rpcrdma_write_chunk *c)
{
	uint32_t i;

	fputc('[', f);
	for (i = 0; i < c->nsegs; i++) {
		fputs(i ? ",{" : "{", f);
		seg_json(f, &c->segs[i]);
		fputc('}', f);
	}
	fputc(']', f);
}

static void lists_json(FILE *f, const struct rpcrdma_msg *m)
{
	uint32_t i;

	fputs(",\"reads\":[", f);
	for (i = 0; i < m->nreads; i++) {
		fprintf(f, "%s{\"position\":%" PRIu32 ",", i ? "," : "", m->reads[i].position);
		seg_json(f, &m->reads[i].seg);
		fputc('}', f);
	}
	fputs("],\"writes\":[", f);
	for (i = 0; i < m->nwrites; i++) {
		if (i)
			fputc(',', f);
		chunk_json(f, &m->writes[i]);
	}
	fputs("],\"reply\":", f);
	if (m->has_reply)
		chunk_json(f, &m->reply);
	else
		fputs("null", f);
}

static void error_json(FILE *f, const struct rpcrdma_msg *m)
{
	fputs(",\"error\":", f);
	if (m->proc != RPCRDMA_ERROR)
		fputs("null", f);
	else if (m->err == RPCRDMA_WIRE_ERR_VERS)
		fprintf(f, "{\"code\":\"ERR_VERS\",\"vers_low\":%" PRIu32 ",\"vers_high\":%" PRIu32 "}",
			m->vers_low, m->vers_high);
	else if (m->err == RPCRDMA_WIRE_ERR_CHUNK)
		fputs("{\"code\":\"ERR_CHUNK\"}", f);
	else
		fprintf(f, "{\"code\":%" PRIu32 "}", m->err);
}

/* An RPC body shorter than a call header still shows its XID and direction. */
static void rpc_json(FILE *f, const struct rpcrdma_msg *m)
{
	struct rpcrdma_rpc_info ri;

	fputs(",\"rpc\":", f);
	if (m->proc == RPCRDMA_ERROR || !m->body || m->body_len < RPCRDMA_MIN_RPC_LEN) {
		fputs("null", f);
		return;
	}
	(void)rpcrdma_rpc_peek(m->body, m->body_len, &ri);
	fprintf(f, "{\"xid\":\"0x%08" PRIx32 "\",\"direction\":\"%s\"", ri.xid,
		ri.msg_type == RPCRDMA_RPC_CALL ? "call" :
		ri.msg_type == RPCRDMA_RPC_REPLY ? "reply" : "unknown");
	if (ri.msg_type == RPCRDMA_RPC_CALL && m->body_len >= 24)
		fprintf(f, ",\"prog\":%" PRIu32 ",\"vers\":%" PRIu32 ",\"proc\":%" PRIu32,
			ri.prog, ri.vers, ri.proc);
	fputc('}', f);
}

void msg_json_fields(FILE *f, const struct rpcrdma_msg *m, int with_body)
{
	const char *name = rpcrdma_proc_name(m->proc);

	fprintf(f, "\"xid\":\"0x%08" PRIx32 "\",\"vers\":%" PRIu32 ",\"credits\":%" PRIu32
		   ",\"proc\":\"%s\"",
		m->xid, m->vers, m->credits, name ? name : "unknown");
	if (m->proc == RPCRDMA_MSGP)
		fprintf(f, ",\"align\":%" PRIu32 ",\"thresh\":%" PRIu32, m->align, m->thresh);
	lists_json(f, m);
	error_json(f, m);
	fprintf(f, ",\"header_len\":%" PRIu32, m->hdr_len);
	rpc_json(f, m);
	if (with_body) {
		fputs(",\"body\":\"", f);
		hex_print(f, m->body ? m->body : (const unsigned char *)"", m->body ? m->body_len : 0);
		fputc('"', f);
	}
}

void msg_json_print(FILE *f, const struct rpcrdma_msg *m, int with_body)
{
	fputc('{', f);
	msg_json_fields(f, m, with_body);
	fputs("}\n", f);
}

void msg_json_invalid(FILE *f, const struct rpcrdma_decode_status *st)
{
	fputc('{', f);
	msg_json_invalid_fields(f, st);
	fputs("}\n", f);
}

void msg_json_invalid_fields(FILE *f, const struct rpcrdma_decode_status *st)
{
	fprintf(f, "\"invalid\":\"%s\",\"answer\":\"%s\",\"offset\":%" PRIu32,
		rpcrdma_reason_name(st->reason), rpcrdma_wire_err_name(st->answer), st->offset);
}

static void seg_text(FILE *f, const char *indent, const struct rpcrdma_segment *s)
{
	fprintf(f, "%shandle 0x%08" PRIx32 " length %" PRIu32 " offset 0x%016" PRIx64 "\n",
		indent, s->handle, s->length, s->offset);
}

static void lists_text(FILE *f, const struct rpcrdma_msg *m)
{
	uint32_t i, k;

	fputs(m->nreads ? "  read list:\n" : "  read list: empty\n", f);
	for (i = 0; i < m->nreads; i++) {
		fprintf(f, "    position %" PRIu32 ": ", m->reads[i].position);
		seg_text(f, "", &m->reads[i].seg);
	}
	fputs(m->nwrites ? "  write list:\n" : "  write list: empty\n", f);
	for (i = 0; i < m->nwrites; i++) {
		fprintf(f, "    chunk %" PRIu32 ": %" PRIu32 " segment(s), %" PRIu64 " bytes\n", i,
			m->writes[i].nsegs, rpcrdma_write_chunk_len(&m->writes[i]));
		for (k = 0; k < m->writes[i].nsegs; k++)
			seg_text(f, "      ", &m->writes[i].segs[k]);
	}
	if (!m->has_reply) {
		fputs("  reply chunk: absent\n", f);
		return;
	}
	fprintf(f, "  reply chunk: %" PRIu32 " segment(s), %" PRIu64 " bytes\n", m->reply.nsegs,
		rpcrdma_write_chunk_len(&m->reply));
	for (k = 0; k < m->reply.nsegs; k++)
		seg_text(f, "      ", &m->reply.segs[k]);
}

static void rpc_text(FILE *f, const struct rpcrdma_msg *m)
{
	struct rpcrdma_rpc_info ri;
	int rc;

	if (m->proc == RPCRDMA_ERROR || !m->body || m->body_len < RPCRDMA_MIN_RPC_LEN)
		return;
	rc = rpcrdma_rpc_peek(m->body, m->body_len, &ri);
	if (ri.msg_type == RPCRDMA_RPC_CALL)
		fprintf(f, "  RPC call xid 0x%08" PRIx32 " prog %" PRIu32 " vers %" PRIu32
			   " proc %" PRIu32 ", %" PRIu32 " bytes inline%s\n",
			ri.xid, ri.prog, ri.vers, ri.proc, m->body_len, rc ? " (header truncated)" : "");
	else
		fprintf(f, "  RPC reply xid 0x%08" PRIx32 " %s stat %" PRIu32 ", %" PRIu32
			   " bytes inline%s\n",
			ri.xid, ri.reply_stat ? "denied" : "accepted",
			ri.reply_stat ? ri.reject_stat : ri.accept_stat, m->body_len,
			rc ? " (header truncated)" : "");
}

void msg_text_invalid(FILE *f, const struct rpcrdma_decode_status *st)
{
	fprintf(f, "invalid: %s (%s) at offset %u; answer %s\n", rpcrdma_reason_str(st->reason),
		rpcrdma_reason_name(st->reason), st->offset, rpcrdma_wire_err_name(st->answer));
}

void msg_text_print(FILE *f, const struct rpcrdma_msg *m)
{
	const char *name = rpcrdma_proc_name(m->proc);

	fprintf(f, "%s xid 0x%08" PRIx32 " vers %" PRIu32 " credits %" PRIu32 ", header %" PRIu32
		   " bytes\n",
		name, m->xid, m->vers, m->credits, m->hdr_len);
	if (m->proc == RPCRDMA_MSGP)
		fprintf(f, "  align %" PRIu32 " thresh %" PRIu32 "\n", m->align, m->thresh);
	if (m->proc <= RPCRDMA_MSGP)
		lists_text(f, m);
	if (m->proc == RPCRDMA_ERROR) {
		const char *e = rpcrdma_wire_err_name(m->err);

		fprintf(f, "  error %s (%" PRIu32 ")", e ? e : "unknown", m->err);
		if (m->err == RPCRDMA_WIRE_ERR_VERS)
			fprintf(f, ": versions %" PRIu32 "..%" PRIu32, m->vers_low, m->vers_high);
		fputc('\n', f);
	}
	rpc_text(f, m);
}

/* ---- parsing ---- */

/* A JSON number, or a string in C notation ("0x2a"), no larger than max, not negative. */
static int parse_uint(json_object *v, uint64_t max, uint64_t *out)
{
	const char *str;
	char *end;

	if (json_object_is_type(v, json_type_int)) {
		int64_t i = json_object_get_int64(v);

		if (i < 0 || (uint64_t)i > max)
			return -1;
		*out = (uint64_t)i;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return -1;
	str = json_object_get_string(v);
	errno = 0;
	*out = strtoull(str, &end, 0);
	return errno || *end || end == str || *str == '-' || *out > max ? -1 : 0;
}

static int get_u32(json_object *o, const char *key, int required, uint32_t dflt, uint32_t *out,
		   const char **err)
{
	json_object *v;
	uint64_t n;

	if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
		*out = dflt;
		if (!required)
			return 0;
	} else if (parse_uint(v, UINT32_MAX, &n) == 0) {
		*out = (uint32_t)n;
		return 0;
	}
	*err = key;
	return -1;
}

static int get_u64(json_object *o, const char *key, uint64_t *out, const char **err)
{
	json_object *v;

	if (json_object_object_get_ex(o, key, &v) && parse_uint(v, UINT64_MAX, out) == 0)
		return 0;
	*err = key;
	return -1;
}

static int parse_seg(json_object *o, struct rpcrdma_segment *s, const char **err)
{
	if (!json_object_is_type(o, json_type_object)) {
		*err = "segment";
		return -1;
	}
	if (get_u32(o, "handle", 1, 0, &s->handle, err) ||
	    get_u32(o, "length", 1, 0, &s->length, err) ||
	    get_u64(o, "offset", &s->offset, err))
		return -1;
	return 0;
}

static int parse_chunk(json_object *a, struct msg_build *b, struct rpcrdma_write_chunk *c,
		       size_t *used, const char **err)
{
	size_t i, n;

	if (!json_object_is_type(a, json_type_array)) {
		*err = "chunk";
		return -1;
	}
	n = json_object_array_length(a);
	if (n > sizeof(b->segs) / sizeof(b->segs[0]) - *used) {
		*err = "too many segments";
		return -1;
	}
	c->segs = &b->segs[*used];
	c->nsegs = (uint32_t)n;
	for (i = 0; i < n; i++)
		if (parse_seg(json_object_array_get_idx(a, i), &c->segs[i], err))
			return -1;
	*used += n;
	return 0;
}

static int parse_reads(json_object *o, struct msg_build *b, const char **err)
{
	json_object *a;
	size_t i, n;

	if (!json_object_object_get_ex(o, "reads", &a))
		return 0;
	if (!json_object_is_type(a, json_type_array) ||
	    json_object_array_length(a) > sizeof(b->reads) / sizeof(b->reads[0])) {
		*err = "reads";
		return -1;
	}
	n = json_object_array_length(a);
	for (i = 0; i < n; i++) {
		json_object *e = json_object_array_get_idx(a, i);

		if (get_u32(e, "position", 1, 0, &b->reads[i].position, err) ||
		    parse_seg(e, &b->reads[i].seg, err))
			return -1;
	}
	b->m.nreads = (uint32_t)n;
	return 0;
}

static int parse_writes_reply(json_object *o, struct msg_build *b, const char **err)
{
	json_object *a;
	size_t i, n, used = 0;

	if (json_object_object_get_ex(o, "writes", &a)) {
		if (!json_object_is_type(a, json_type_array) ||
		    json_object_array_length(a) > sizeof(b->writes) / sizeof(b->writes[0])) {
			*err = "writes";
			return -1;
		}
		n = json_object_array_length(a);
		for (i = 0; i < n; i++)
			if (parse_chunk(json_object_array_get_idx(a, i), b, &b->writes[i], &used, err))
				return -1;
		b->m.nwrites = (uint32_t)n;
	}
	if (json_object_object_get_ex(o, "reply", &a) && !json_object_is_type(a, json_type_null)) {
		b->m.has_reply = 1;
		return parse_chunk(a, b, &b->m.reply, &used, err);
	}
	return 0;
}

static int parse_proc(json_object *o, uint32_t *proc, const char **err)
{
	json_object *v;
	uint32_t p;

	if (json_object_object_get_ex(o, "proc", &v) && json_object_is_type(v, json_type_string)) {
		for (p = 0; rpcrdma_proc_name(p); p++) {
			if (!strcmp(json_object_get_string(v), rpcrdma_proc_name(p))) {
				*proc = p;
				return 0;
			}
		}
	}
	return get_u32(o, "proc", 1, 0, proc, err);
}

static int parse_error(json_object *o, struct msg_build *b, const char **err)
{
	json_object *e, *code;

	if (!json_object_object_get_ex(o, "error", &e) || json_object_is_type(e, json_type_null))
		return 0;
	if (!json_object_object_get_ex(e, "code", &code)) {
		*err = "error.code";
		return -1;
	}
	if (json_object_is_type(code, json_type_string) &&
	    !strcmp(json_object_get_string(code), "ERR_VERS")) {
		b->m.err = RPCRDMA_WIRE_ERR_VERS;
		return get_u32(e, "vers_low", 1, 0, &b->m.vers_low, err) ||
		       get_u32(e, "vers_high", 1, 0, &b->m.vers_high, err) ? -1 : 0;
	}
	if (json_object_is_type(code, json_type_string) &&
	    !strcmp(json_object_get_string(code), "ERR_CHUNK")) {
		b->m.err = RPCRDMA_WIRE_ERR_CHUNK;
		return 0;
	}
	return get_u32(e, "code", 1, 0, &b->m.err, err);
}

static int parse_body(json_object *o, struct msg_build *b, const char **err)
{
	json_object *v;
	long n;

	b->body_len = 0;
	if (!json_object_object_get_ex(o, "body", &v))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		goto bad;
	n = hex_parse(json_object_get_string(v), b->body, sizeof(b->body));
	if (n < 0)
		goto bad;
	b->body_len = (size_t)n;
	return 0;
bad:
	*err = "body";
	return -1;
}

int msg_json_parse(const char *text, struct msg_build *b, const char **err)
{
	enum json_tokener_error jerr;
	json_object *o = json_tokener_parse_verbose(text, &jerr);
	struct rpcrdma_msg *m = &b->m;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	m->reads = b->reads;
	m->writes = b->writes;
	if (!o || !json_object_is_type(o, json_type_object)) {
		*err = o ? "not a JSON object" : json_tokener_error_desc(jerr);
		goto out_put;
	}
	if (get_u32(o, "xid", 1, 0, &m->xid, err) ||
	    get_u32(o, "vers", 0, RPCRDMA_VERSION, &m->vers, err) ||
	    get_u32(o, "credits", 0, 0, &m->credits, err) || parse_proc(o, &m->proc, err) ||
	    get_u32(o, "align", 0, 0, &m->align, err) ||
	    get_u32(o, "thresh", 0, 0, &m->thresh, err) || parse_reads(o, b, err) ||
	    parse_writes_reply(o, b, err) || parse_error(o, b, err) || parse_body(o, b, err))
		goto out_put;
	rc = 0;
out_put:
	json_object_put(o);
	return rc;
}
