/* SPDX-License-Identifier: BSD-2-Clause */
/* Internal to the rpcrdma tool. */
#ifndef RPCRDMA_TOOLS_CLI_H
#define RPCRDMA_TOOLS_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "rpcrdma/rpcrdma.h"

/* Exit statuses of every subcommand. */
enum { EXIT_OK = 0, EXIT_FAIL = 1, EXIT_USAGE = 2 };

int cmd_decode(int argc, char **argv);
int cmd_encode(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_ping(int argc, char **argv);
int cmd_perf(int argc, char **argv);

/* Checked option values (args.c): 0, or -1 after a message naming cmd, opt and s. */
/* A word the command does not take: says so, returns EXIT_USAGE (print usage after). */
int arg_unknown(const char *cmd, const char *arg);
/* "Try 'rpcrdma CMD --help' ...": the line that follows a usage error's message. */
void cli_try_help(const char *cmd);
int arg_uint(const char *cmd, const char *opt, const char *s, uint64_t min, uint64_t max,
	     uint64_t *out);
int arg_double(const char *cmd, const char *opt, const char *s, double min, double max,
	       double *out);
int arg_size(const char *cmd, const char *opt, const char *s, uint64_t max, uint64_t *out);

/* Install fn for SIGINT and SIGTERM (and SIGUSR1 when usr1) with sigaction: it stays for
 * every signal, not the first only. restart 0: a wait in progress returns at once. */
void cli_catch(void (*fn)(int), int usr1, int restart);

/* The library's log through the tool (args.c): lines as the library writes them; and
 * whether its last error line was text (then the command need not print it again). */
void cli_log_install(void);
int cli_log_said(const char *text);

/* With --json, a failure is also one object on standard output:
 * {"error":"TEXT","command":"CMD"}, the text JSON-escaped. */
void cli_json_error(const char *cmd, const char *text);

/* --json of ping, serve and perf (json_doc.c): json_doc_args turns --json-lines into the
 * command's --json and says whether --json asked for one document; between
 * json_doc_begin and json_doc_end, standard output is held and then written as one
 * object ({"run":...,"results":[...],"summary":...}). json_doc_end is safe to call
 * when nothing was begun. */
int json_doc_args(int argc, char **argv);
void json_doc_begin(void);
/* A list of the document (e.g. "ratios") that is written, as [], even when empty. */
void json_doc_keep(const char *name);
void json_doc_end(void);

/* Hex: whitespace, ':' and a leading "0x" are ignored. Returns bytes or -1. */
long hex_parse(const char *s, unsigned char *out, size_t cap);
void hex_print(FILE *f, const unsigned char *p, size_t n);

/* JSON for one decoded message; body included when with_body. */
void msg_json_print(FILE *f, const struct rpcrdma_msg *m, int with_body);
void msg_json_invalid(FILE *f, const struct rpcrdma_decode_status *st);
/* The same objects' members without the braces, to embed them in another object */
void msg_json_fields(FILE *f, const struct rpcrdma_msg *m, int with_body);
void msg_json_invalid_fields(FILE *f, const struct rpcrdma_decode_status *st);
int cmd_decode_pcap(const char *path, int json, int fields, int body);
void msg_text_print(FILE *f, const struct rpcrdma_msg *m);
void msg_text_invalid(FILE *f, const struct rpcrdma_decode_status *st);

/* Build m from one JSON object (the shape msg_json_print writes). Body bytes, if any,
 * go to body/body_len (caller's buffer of body_cap). Returns 0 or -1 with *err set. */
struct msg_build {
	struct rpcrdma_msg m;
	struct rpcrdma_read_segment reads[256];
	struct rpcrdma_write_chunk writes[64];
	struct rpcrdma_segment segs[1024];
	unsigned char body[65536];
	size_t body_len;
};
int msg_json_parse(const char *text, struct msg_build *b, const char **err);

#endif
