/* agentjail logs NAME [-f] [--since WHEN] [-n N] [-t]: what `docker logs` shows of a container,
 * for a persistent sandbox: the output of its spawned commands (the ones whose stdio the
 * supervisor holds: the HTTP API's, E2B's and MCP's; src/supervisor/procs.h keeps the last MiB
 * of each, with byte offsets and the time each piece was read) and its events (the state
 * store, as `agentjail events` reads them), merged in time order.
 *
 * Each spawned command is read over a connection of its own: attach from the first byte still
 * kept, read up to the offset the supervisor reported, then detach, or with --follow stay
 * attached. New commands are found by their "spawn" events while following.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/common.h"
#include "common/base64.h"
#include "common/units.h"
#include "common/util.h"
#include "control/client.h"
#include "control/proto.h"
#include "state/store.h"

#define CALL_MS 5000
#define POLL_MS 200
#define MAX_FOLLOW 64

struct logs_cli {
	bool follow, timestamps;
	const char *since;
	uint64_t tail;
	bool have_tail;
};

/* --tail N: a count, or "all" (docker's spelling) for everything. */
static int parse_tail(void *vctx, const struct aj_option *o, const char *v, struct aj_err *err)
{
	struct logs_cli *c = vctx;

	(void)o;
	if (strcmp(v, "all") == 0) {
		c->have_tail = false;
		return 0;
	}
	c->have_tail = true;
	return aj_policy_parse_count("--tail", v, &c->tail, err);
}

#define LG(field) .off = offsetof(struct logs_cli, field)
static const struct aj_option logs_options[] = {
	{AJ_OPT("follow", 'f', AJ_OPT_SWITCH), LG(follow),
	 .help = "keep printing new output and events until the sandbox stops"},
	{AJ_OPT("since", 0, AJ_OPT_STRING), LG(since), .metavar = "WHEN",
	 .help = "only what came after WHEN: a time (2026-01-02T15:04:05Z) or a duration ago (10m)"},
	{AJ_OPT("tail", 'n', AJ_OPT_FUNC), LG(tail), .metavar = "N", .parse = parse_tail,
	 .help = "only the last N lines (default: all)"},
	{AJ_OPT("timestamps", 't', AJ_OPT_SWITCH), LG(timestamps),
	 .help = "start every line of output with the time it was read"},
	AJ_OPT_END,
};
#undef LG

/* One event or one piece of output, in the order they are printed. */
struct item {
	uint64_t time_ms;
	bool output;
	int stream; /* output: 1 stdout (and a terminal), 2 stderr */
	uint64_t exec;
	char *text; /* output: the bytes; event: "TYPE DATA" */
	size_t len;
	size_t seq; /* arrival, to keep the order of equal times */
	/* Within one millisecond: events (a command's spawn) before output, exit events after
	 * it: a command's last lines, read as it exits, come before its end. */
	int rank;
};

struct logs {
	struct logs_cli *c;
	uint64_t since_ms;
	struct item *v;
	size_t n, cap;
	bool at_bol[3]; /* -t: whether stdout and stderr are at the start of a line */
	int64_t last_seq;
	struct {
		int fd;
		uint64_t exec;
	} att[MAX_FOLLOW];
	size_t natt;
};

static int push(struct logs *l, struct item it)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct item *v = realloc(l->v, cap * sizeof *v);
		if (!v) {
			free(it.text);
			return -1;
		}
		l->v = v;
		l->cap = cap;
	}
	it.seq = l->n;
	l->v[l->n++] = it;
	return 0;
}

static void drop_items(struct logs *l, size_t from)
{
	for (size_t i = from; i < l->n; i++)
		free(l->v[i].text);
	l->n = from;
}

/* ---- printing ------------------------------------------------------------------------------ */

static void stamp(uint64_t ms, char *buf, size_t len)
{
	aj_format_time_ms(ms, buf, len);
}

static void print_json(const struct item *it, size_t skip)
{
	char ts[40];
	json_t *j;

	stamp(it->time_ms, ts, sizeof ts);
	if (!it->output) {
		const char *sp = strchr(it->text, ' ');
		json_t *data = sp ? json_loads(sp + 1, JSON_DECODE_ANY, NULL) : NULL;
		j = json_pack("{s:s, s:s, s:s%, s:o}", "time", ts, "kind", "event", "event", it->text,
			      sp ? (size_t)(sp - it->text) : strlen(it->text), "data",
			      data ? data : json_null());
	} else {
		j = json_pack("{s:s, s:s, s:I, s:s}", "time", ts, "kind", "output", "exec",
			      (json_int_t)it->exec, "stream", it->stream == 2 ? "stderr" : "stdout");
		json_t *text = json_stringn(it->text + skip, it->len - skip);
		if (text) {
			json_object_set_new(j, "data", text);
		} else { /* not UTF-8 */
			char *b64 = malloc(aj_base64_len(it->len - skip) + 1);
			if (b64) {
				aj_base64_encode(it->text + skip, it->len - skip, b64);
				json_object_set_new(j, "data_base64", json_string(b64));
				free(b64);
			}
		}
	}
	char *line = json_dumps(j, JSON_COMPACT);
	if (line)
		printf("%s\n", line);
	free(line);
	json_decref(j);
}

/* Output goes to the stream it came from, as docker logs does; events to stdout. */
static void print_item(struct logs *l, const struct item *it, size_t skip)
{
	char ts[40];
	FILE *f = it->output && it->stream == 2 ? stderr : stdout;
	int s = it->output ? it->stream : 1;

	if (aj_cli.json) {
		print_json(it, skip);
		fflush(stdout);
		return;
	}
	stamp(it->time_ms, ts, sizeof ts);
	if (!it->output) {
		if (!l->at_bol[1])
			fputc('\n', stdout);
		fprintf(stdout, "%s [event] %s\n", ts, it->text);
		l->at_bol[1] = true;
		fflush(stdout);
		return;
	}
	for (size_t i = skip; i < it->len; i++) {
		if (l->c->timestamps && l->at_bol[s])
			fprintf(f, "%s ", ts);
		fputc(it->text[i], f);
		l->at_bol[s] = it->text[i] == '\n';
	}
	fflush(f);
}

static size_t lines_in(const struct item *it)
{
	size_t n = 0;

	if (!it->output)
		return 1;
	for (size_t i = 0; i < it->len; i++)
		n += it->text[i] == '\n';
	return n + (it->len && it->text[it->len - 1] != '\n');
}

static int by_time(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->time_ms != y->time_ms)
		return x->time_ms < y->time_ms ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A command's spawn event is stored when its supervisor hears it started, which can be a
 * millisecond after its first output was read: its output is placed no earlier. */
struct spawn_at {
	uint64_t exec, time_ms;
};

static int by_exec(const void *a, const void *b)
{
	const struct spawn_at *x = a, *y = b;

	if (x->exec != y->exec)
		return x->exec < y->exec ? -1 : 1;
	return x->time_ms < y->time_ms ? -1 : x->time_ms > y->time_ms;
}

static void after_spawns(struct logs *l)
{
	struct spawn_at *v = calloc(l->n ? l->n : 1, sizeof *v);
	size_t n = 0;

	if (!v)
		return; /* only the order of a tie is at stake */
	for (size_t i = 0; i < l->n; i++)
		if (!l->v[i].output && l->v[i].exec)
			v[n++] = (struct spawn_at){l->v[i].exec, l->v[i].time_ms};
	if (n) {
		qsort(v, n, sizeof *v, by_exec);
		for (size_t i = 0; i < l->n; i++) {
			struct item *it = &l->v[i];
			struct spawn_at *s = v;
			size_t lo = 0, hi = n;
			if (!it->output)
				continue;
			while (lo < hi) { /* the first spawn after this command's number */
				size_t mid = lo + (hi - lo) / 2;
				if (v[mid].exec <= it->exec)
					lo = mid + 1;
				else
					hi = mid;
			}
			/* the latest spawn of that number: this supervisor's */
			if (lo == 0 || (s = &v[lo - 1])->exec != it->exec)
				continue;
			if (it->time_ms < s->time_ms)
				it->time_ms = s->time_ms;
		}
	}
	free(v);
}

/* The history: in time order, from --since, the last --tail lines. */
static void print_history(struct logs *l)
{
	size_t first = 0, skip = 0, lines = 0;

	after_spawns(l);
	if (l->n) /* qsort of no array is undefined */
		qsort(l->v, l->n, sizeof *l->v, by_time);
	if (l->c->have_tail) {
		first = l->n;
		while (first > 0 && lines + lines_in(&l->v[first - 1]) <= l->c->tail)
			lines += lines_in(&l->v[--first]);
		if (first > 0 && lines < l->c->tail) { /* part of an output item */
			const struct item *it = &l->v[first - 1];
			size_t want = l->c->tail - lines, i = it->len;
			if (it->output) {
				if (i && it->text[i - 1] == '\n')
					i--;
				while (i > 0 && want > 0)
					if (it->text[--i] == '\n')
						want--;
				skip = want == 0 ? i + 1 : 0;
				first--;
			}
		}
	}
	for (size_t i = first; i < l->n; i++)
		print_item(l, &l->v[i], i == first ? skip : 0);
}

/* ---- reading --------------------------------------------------------------------------------- */

static int take_event(void *arg, int64_t seq, int64_t time_ms, const char *sandbox,
		      const char *type, const char *data)
{
	struct logs *l = arg;
	struct item it = {.time_ms = (uint64_t)time_ms};

	(void)sandbox;
	l->last_seq = seq;
	if ((uint64_t)time_ms < l->since_ms)
		return 0;
	if (asprintf(&it.text, "%s %s", type, data) < 0)
		return -1;
	it.len = strlen(it.text);
	it.rank = !strcmp(type, "exit") ? 2 : 0;
	if (!strcmp(type, "spawn")) {
		json_t *d = json_loads(data, 0, NULL);
		it.exec = (uint64_t)json_integer_value(json_object_get(d, "exec"));
		json_decref(d);
	}
	return push(l, it);
}

/* An output event of the supervisor as an item; 1 if it was one. */
static int take_output(struct logs *l, json_t *m, struct item *it)
{
	const char *ev = json_string_value(json_object_get(m, "event"));
	const char *data = json_string_value(json_object_get(m, "data"));
	const char *stream = json_string_value(json_object_get(m, "stream"));
	long n = 0;

	if (!ev || strcmp(ev, "output") || !data)
		return 0;
	memset(it, 0, sizeof *it);
	it->output = true;
	it->rank = 1;
	it->stream = stream && !strcmp(stream, "stderr") ? 2 : 1;
	it->exec = (uint64_t)json_integer_value(json_object_get(m, "exec"));
	it->time_ms = (uint64_t)json_integer_value(json_object_get(m, "time_ms"));
	it->text = malloc(strlen(data) * 3 / 4 + 4);
	if (!it->text || (n = aj_base64_decode(data, strlen(data), (unsigned char *)it->text)) < 0) {
		free(it->text);
		return 0;
	}
	it->len = (size_t)n;
	return 1;
}

/* Attaches to one spawned command and keeps what it still holds; with follow, stays
 * attached to a running one (its connection kept in l->att). */
static int read_command(struct logs *l, const char *socket, uint64_t exec, struct aj_err *err)
{
	json_t *reply = NULL, *m = NULL;
	uint64_t until, at = 0;
	bool running;
	int fd = aj_ctl_connect(socket, err);

	if (fd < 0)
		return -1;
	if (aj_ctl_call(fd, json_pack("{s:s, s:I, s:i}", "op", "attach", "exec", (json_int_t)exec,
				      "from", 0),
			NULL, 0, &reply, NULL, NULL, CALL_MS, err) < 0) {
		close(fd);
		return err->errnum == ESRCH ? 0 : -1; /* ended and dropped meanwhile */
	}
	until = (uint64_t)json_integer_value(json_object_get(reply, "offset"));
	at = (uint64_t)json_integer_value(json_object_get(reply, "retained_from"));
	running = json_is_true(json_object_get(reply, "running"));
	json_decref(reply);
	while (at < until && aj_ctl_recv(fd, &m, NULL, NULL, CALL_MS) == 0) {
		struct item it;
		if (take_output(l, m, &it) == 1) {
			at = (uint64_t)json_integer_value(json_object_get(m, "offset")) + it.len;
			if (it.time_ms >= l->since_ms)
				push(l, it);
			else
				free(it.text);
		}
		json_decref(m);
	}
	if (l->c->follow && running && l->natt < MAX_FOLLOW) {
		l->att[l->natt].fd = fd;
		l->att[l->natt++].exec = exec;
		return 0;
	}
	close(fd);
	return 0;
}

static int read_commands(struct logs *l, const char *socket, struct aj_err *err)
{
	json_t *reply = NULL, *procs;
	size_t i;
	json_t *p;
	int fd = aj_ctl_connect(socket, err), r = 0;

	if (fd < 0)
		return -1;
	if (aj_ctl_call(fd, json_pack("{s:s}", "op", "procs"), NULL, 0, &reply, NULL, NULL, CALL_MS,
			err) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	procs = json_object_get(reply, "procs");
	json_array_foreach(procs, i, p)
	{
		if (r == 0)
			r = read_command(l, socket, (uint64_t)json_integer_value(json_object_get(p, "exec")),
					 err);
	}
	json_decref(reply);
	return r;
}

/* ---- following ------------------------------------------------------------------------------ */

/* New events; a "spawn" among them is a command to attach to. */
static int follow_events(struct logs *l, struct aj_mgr *m, const char *id, const char *socket,
			 struct aj_err *err)
{
	size_t from = l->n, end;

	if (aj_store_events(m->store, id, l->last_seq, take_event, l, err) < 0)
		return -1;
	end = l->n;
	for (size_t i = from; i < end; i++) {
		print_item(l, &l->v[i], 0);
		if (socket && !strncmp(l->v[i].text, "spawn ", 6)) {
			json_t *d = json_loads(l->v[i].text + 6, 0, NULL);
			uint64_t exec = (uint64_t)json_integer_value(json_object_get(d, "exec"));
			json_decref(d);
			size_t before = l->n;
			if (exec && read_command(l, socket, exec, err) == 0)
				for (size_t k = before; k < l->n; k++)
					print_item(l, &l->v[k], 0);
		}
	}
	drop_items(l, from); /* printed: following keeps nothing */
	return 0;
}

/* Until the sandbox stops (every connection closed and its state no longer running). */
static int follow(struct logs *l, struct aj_mgr *m, const struct aj_sandbox_rec *r,
		  struct aj_err *err)
{
	for (;;) {
		struct pollfd pfd[MAX_FOLLOW];
		struct aj_sandbox_rec now;
		bool live;

		for (size_t i = 0; i < l->natt; i++)
			pfd[i] = (struct pollfd){.fd = l->att[i].fd, .events = POLLIN};
		if (poll(pfd, l->natt, POLL_MS) < 0 && errno != EINTR)
			return aj_err_sys(err, AJ_LAYER_IO, "logs: poll");
		for (size_t i = 0; i < l->natt; i++) {
			json_t *msg = NULL;
			struct item it;
			const char *ev;
			bool done;
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			done = aj_ctl_recv(l->att[i].fd, &msg, NULL, NULL, 0) < 0;
			if (!done && take_output(l, msg, &it) == 1) {
				print_item(l, &it, 0);
				free(it.text);
			}
			ev = json_string_value(json_object_get(msg, "event"));
			done = done || (ev && !strcmp(ev, "exit"));
			json_decref(msg);
			if (done) { /* the command ended, or the supervisor did */
				close(l->att[i].fd);
				l->att[i] = l->att[--l->natt];
				pfd[i] = pfd[l->natt];
				i--;
			}
		}
		if (follow_events(l, m, r->id, r->socket[0] ? r->socket : NULL, err) < 0)
			return -1;
		if (aj_mgr_get(m, r->id, &now, err) < 0)
			return -1;
		live = now.state == AJ_ST_RUNNING || now.state == AJ_ST_PAUSED;
		aj_sandbox_rec_free(&now);
		if (!live && l->natt == 0)
			return follow_events(l, m, r->id, NULL, err);
	}
}

/* --since: a time as the API prints them, or a duration back from now. */
static int parse_since(const char *s, uint64_t *out, struct aj_err *err)
{
	struct tm tm = {0};
	uint64_t ms;
	unsigned frac = 0;
	const char *rest;

	if (!s) {
		*out = 0;
		return 0;
	}
	if (aj_parse_duration_ms(s, &ms) == 0) {
		uint64_t now = aj_now_realtime_ms();
		*out = ms < now ? now - ms : 0;
		return 0;
	}
	rest = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (rest && *rest == '.')
		for (int d = 0, scale = 100; isdigit((unsigned char)*++rest); d++, scale /= 10)
			frac += d < 3 ? (unsigned)(*rest - '0') * (unsigned)scale : 0;
	if (!rest || (strcmp(rest, "Z") && strcmp(rest, "")))
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "--since: expected a time such as 2026-01-02T15:04:05Z or a "
				  "duration such as 10m, got \"%s\"",
				  s);
	*out = (uint64_t)timegm(&tm) * 1000 + frac;
	return 0;
}

/* What a logs call holds: the attached commands' descriptors and the kept items. */
static void logs_free(struct logs *l)
{
	for (size_t i = 0; i < l->natt; i++)
		close(l->att[i].fd);
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].text);
	free(l->v);
}

/* The history, then (with --follow) what comes; m and r are the caller's. */
static int show_logs(struct logs *l, struct aj_mgr *m, struct aj_sandbox_rec *r,
		     struct aj_err *err)
{
	bool live;

	if (aj_store_events(m->store, r->id, 0, take_event, l, err) < 0)
		return -1;
	live = r->state == AJ_ST_RUNNING || r->state == AJ_ST_PAUSED;
	if (live && r->socket[0] && read_commands(l, r->socket, err) < 0)
		return -1;
	if (!live)
		aj_cli_log(AJ_LOG_WARN, "logs: sandbox \"%s\" is %s: its commands' output went with "
					"its supervisor; its events remain",
			   r->name, aj_sandbox_state_name(r->state));
	print_history(l);
	drop_items(l, 0);
	if (l->c->follow && live && follow(l, m, r, err) < 0)
		return -1;
	return 0;
}

static int cmd_logs(const struct aj_verb *v, int argc, char **argv)
{
	struct logs_cli c = {0};
	__attribute__((cleanup(logs_free))) struct logs l = {.c = &c, .at_bol = {true, true, true}};
	_cleanup_mgr_ struct aj_mgr m = {0};
	_cleanup_sandbox_rec_ struct aj_sandbox_rec r = {0};
	struct aj_err err;
	char **args;
	int nargs, rc = 0;

	aj_err_clear(&err);
	if ((rc = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs != 1) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0,
			   nargs ? "logs: unexpected argument \"%s\"" : "logs: missing the sandbox name%s",
			   nargs ? args[1] : "");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (parse_since(c.since, &l.since_ms, &err) < 0 || aj_cli_open(&m, &err) < 0 ||
	    aj_mgr_get(&m, args[0], &r, &err) < 0 || show_logs(&l, &m, &r, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	return rc;
}

static const struct aj_arg logs_args[] = {
	AJ_ARG("NAME", AJ_COMP_SANDBOX),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_logs = {
	.name = "logs",
	.fn = cmd_logs,
	.summary = "show a sandbox's command output and events",
	.synopsis = "logs [OPTIONS] NAME",
	.help = "The output of the sandbox's spawned commands (the last MiB of each that its "
		"supervisor keeps) and its events, in time order; stdout and stderr as they came.",
	.options = logs_options,
	.args = logs_args,
};
