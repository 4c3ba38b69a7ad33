/* `agentjail port` (a running sandbox's published ports, as bound) and `agentjail
 * port-forward` (a host port relayed to a port inside for as long as the command runs, like
 * kubectl port-forward). port-forward asks the sandbox's supervisor for each socket inside
 * (the control socket's "socket" operation), connects it to the sandbox's loopback and relays
 * with the same code as published ports (src/ports/). */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "common/cleanup.h"
#include "common/evbase.h"
#include "common/exitcode.h"
#include "control/client.h"
#include "manager/manager.h"
#include "ports/publish.h"
#include "server/frontend.h"

/* The sandbox's control connection, in m (opened here; the caller closes both). */
static int connect_sandbox(struct aj_mgr *m, const char *name, struct aj_err *err)
{
	struct aj_sandbox_rec rec;
	int ctl;

	if (aj_cli_open(m, err) < 0 || (ctl = aj_mgr_connect(m, name, &rec, err)) < 0)
		return -1;
	aj_sandbox_rec_free(&rec);
	return ctl;
}

/* ---- port ------------------------------------------------------------------------------ */

/* Prints the ports of the reply (only `want` unless 0); how many were printed. */
static size_t print_ports(json_t *ports, long want)
{
	json_t *p;
	size_t i, shown = 0;

	if (aj_cli.json) {
		json_t *out = json_array();
		json_array_foreach(ports, i, p)
			if (!want || json_integer_value(json_object_get(p, "port")) == want)
				json_array_append(out, p);
		shown = json_array_size(out);
		if (shown || !want)
			aj_cli_print_json(out);
		else
			json_decref(out);
		return shown;
	}
	json_array_foreach(ports, i, p) {
		struct aj_publish pub = {0};
		char host[64];
		json_int_t port = json_integer_value(json_object_get(p, "port"));
		if (want && port != want)
			continue;
		snprintf(pub.host_ip, sizeof pub.host_ip, "%s",
			 json_string_value(json_object_get(p, "host_ip")) ?: "");
		pub.host_port = (uint16_t)json_integer_value(json_object_get(p, "host_port"));
		aj_publish_host(&pub, host, sizeof host);
		if (want)
			printf("%s\n", host);
		else
			printf("%lld/tcp -> %s\n", (long long)port, host);
		shown++;
	}
	return shown;
}

/* The ports of sandbox `name` (m opened here, closed by the caller). */
static int list_ports(struct aj_mgr *m, const char *name, long want, struct aj_err *err)
{
	_cleanup_close_ int ctl = connect_sandbox(m, name, err);
	_cleanup_json_ json_t *reply = NULL;

	if (ctl < 0 || aj_ctl_call(ctl, json_pack("{s:s}", "op", "ports"), NULL, 0, &reply, NULL,
				   NULL, 5000, err) < 0)
		return -1;
	if (!print_ports(json_object_get(reply, "ports"), want) && want)
		return aj_err_set(err, AJ_LAYER_USAGE, ENOENT,
				  "port: the sandbox \"%s\" publishes no port %ld", name, want);
	return 0;
}

/* The preview URL of PORT (`serve --preview-listen`, preview.json in the state directory),
 * with the port's preview token. */
static int preview_url(struct aj_mgr *m, const char *name, long port, struct aj_err *err)
{
	_cleanup_sandbox_rec_ struct aj_sandbox_rec rec = {0};
	_cleanup_json_ json_t *info = NULL;
	unsigned char key[AJ_PREVIEW_KEY_LEN];
	char path[4200], token[AJ_PREVIEW_TOKEN_LEN + 1], url[1024];
	const char *listen, *domain, *colon;

	if (aj_cli_open(m, err) < 0 || aj_mgr_get(m, name, &rec, err) < 0)
		return -1;
	snprintf(path, sizeof path, "%s/preview.json", m->state);
	info = json_load_file(path, 0, NULL);
	listen = json_string_value(json_object_get(info, "listen"));
	domain = json_string_value(json_object_get(info, "domain"));
	if (!listen || !domain)
		return aj_err_set(err, AJ_LAYER_USAGE, ENOENT,
				  "port --url: no daemon serves preview URLs for this state "
				  "directory"),
		       aj_err_hint(err, "agentjail serve --preview-listen 127.0.0.1:8080 "
					"--preview-domain localhost");
	if (aj_srv_preview_key(m->state, key, err) < 0)
		return -1;
	aj_srv_preview_token(key, rec.id, (unsigned)port, token);
	colon = strrchr(listen, ':');
	snprintf(url, sizeof url, "http://%ld-%s.%s%s%s/?aj_token=%s", port, rec.id, domain,
		 colon && strcmp(colon, ":80") ? ":" : "", colon && strcmp(colon, ":80") ? colon + 1 : "",
		 token);
	if (aj_cli.json)
		aj_cli_print_json(json_pack("{s:s, s:s, s:i}", "url", url, "token", token, "port",
					    (int)port));
	else
		printf("%s\n", url);
	return 0;
}

struct port_cli {
	bool url;
};

static int cmd_port(const struct aj_verb *v, int argc, char **argv)
{
	struct port_cli c = {0};
	struct aj_mgr m = {0};
	struct aj_err err;
	char **args;
	int nargs, rc;
	long want = 0;

	aj_err_clear(&err);
	if ((rc = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs < 1 || nargs > 2) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0,
			   nargs ? "port: unexpected argument \"%s\"" : "port: missing the sandbox name%s",
			   nargs ? args[2] : "");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (nargs == 2) {
		char *end;
		errno = 0;
		want = strtol(args[1], &end, 10);
		if (errno || *end || want < 1 || want > 65535) {
			aj_err_set(&err, AJ_LAYER_USAGE, 0,
				   "port: PORT must be a port number from 1 to 65535, got \"%s\"",
				   args[1]);
			return aj_cli_fail(aj_cli.json, &err);
		}
	}
	if (c.url && !want) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0, "port --url: name the PORT inside");
		return aj_cli_fail(aj_cli.json, &err);
	}
	rc = (c.url ? preview_url(&m, args[0], want, &err) : list_ports(&m, args[0], want, &err)) < 0
		     ? aj_cli_fail(aj_cli.json, &err)
		     : 0;
	aj_mgr_close(&m);
	return rc;
}

static const struct aj_arg port_args[] = {
	AJ_ARG("NAME", AJ_COMP_SANDBOX),
	AJ_ARG("PORT", AJ_COMP_NONE),
	AJ_ARG_END,
};
#define PC(field) .to = AJ_TO_CTX, .off = offsetof(struct port_cli, field)
static const struct aj_option port_options[] = {
	{AJ_OPT("url", 0, AJ_OPT_SWITCH), PC(url),
	 .help = "print PORT's preview URL (serve --preview-listen), with its preview token"},
	AJ_OPT_END,
};
#undef PC
const struct aj_verb aj_verb_port = {
	.name = "port",
	.fn = cmd_port,
	.summary = "list a running sandbox's published ports",
	.synopsis = "port [OPTIONS] NAME [PORT]",
	.help = "The ports a running sandbox publishes (create -p, network.publish) with the host "
		"address and port each is bound to at this start (an ephemeral one is chosen again "
		"at every start); with PORT, only that port's host side. With --url, PORT's preview "
		"URL through the daemon's preview listener, carrying the token that opens it.",
	.options = port_options,
	.args = port_args,
};

/* ---- port-forward ---------------------------------------------------------------------- */

struct forward {
	const char *address;
	int ctl;
	struct event_base *base;
	bool gone; /* the supervisor closed the control connection: the sandbox stopped */
};

static int forward_socket(void *arg, int family, struct aj_err *err)
{
	struct forward *f = arg;
	int fd = -1;
	size_t n = 0;

	if (aj_ctl_call(f->ctl, json_pack("{s:s, s:i}", "op", "socket", "family",
					  family == AF_INET6 ? 6 : 4),
			NULL, 0, NULL, &fd, &n, 5000, err) < 0)
		return -1;
	if (n != 1 || fd < 0)
		return aj_err_set(err, AJ_LAYER_NET, EPROTO,
				  "the supervisor sent no socket for the connection");
	return fd;
}

static void on_ctl(evutil_socket_t fd, short what, void *arg)
{
	struct forward *f = arg;
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);

	(void)what;
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		f->gone = true;
		event_base_loopbreak(f->base);
	}
}

static void on_signal(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	event_base_loopbreak(arg);
}

static void on_event(void *arg, const char *event, json_t *fields)
{
	(void)arg;
	if (aj_cli.verbose) {
		char *text = json_dumps(fields, JSON_COMPACT);
		fprintf(stderr, "agentjail: %s %s\n", event, text ? text : "");
		free(text);
	}
	json_decref(fields);
}

/* "[LOCALPORT:]PORT" on --address: the spec the ports module binds. */
static int forward_spec(const char *arg, const char *address, struct aj_strv *specs,
			struct aj_err *err)
{
	struct aj_publish pub, addr;
	char why[160], text[96], probe[80];

	if (strchr(arg, '[') || strchr(arg, '/') || strchr(arg, ':') != strrchr(arg, ':'))
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "port-forward: \"%s\": expected [LOCALPORT:]PORT (the address is "
				  "--address)",
				  arg);
	if (aj_publish_parse(arg, &pub, why, sizeof why) < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "port-forward: \"%s\": %s (expected [LOCALPORT:]PORT)", arg, why);
	snprintf(probe, sizeof probe, strchr(address, ':') ? "[%s]:0:1" : "%s:0:1", address);
	if (aj_publish_parse(probe, &addr, why, sizeof why) < 0)
		return aj_err_set(err, AJ_LAYER_USAGE, 0,
				  "port-forward: --address \"%s\": %s", address, why);
	memcpy(pub.host_ip, addr.host_ip, sizeof pub.host_ip);
	aj_publish_format(&pub, text, sizeof text);
	aj_strv_push(specs, text);
	return 0;
}

struct pf_cli {
	const char *address;
};

/* The loop's own events, freed with it. */
static int add_events(struct forward *f, struct event **ev, struct aj_err *err)
{
	ev[0] = event_new(f->base, f->ctl, EV_READ | EV_PERSIST, on_ctl, f);
	ev[1] = evsignal_new(f->base, SIGINT, on_signal, f->base);
	ev[2] = evsignal_new(f->base, SIGTERM, on_signal, f->base);
	for (int i = 0; i < 3; i++)
		if (!ev[i] || event_add(ev[i], NULL) < 0)
			return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "event loop");
	return 0;
}

/* Forwards until interrupted or the sandbox stops; f->base and ports are the caller's. */
static int forward(struct forward *f, const char *name, struct aj_ports *ports,
		   const struct aj_strv *specs, struct aj_err *err)
{
	struct event *ev[3] = {NULL};
	char host[64];
	int r = -1;

	if (add_events(f, ev, err) == 0 && aj_ports_bind(ports, specs, err) == 0 &&
	    aj_ports_start(ports, f->base, forward_socket, f, on_event, f, err) == 0) {
		aj_publish_host(aj_ports_at(ports, 0), host, sizeof host);
		if (aj_cli.json)
			aj_cli_print_json(json_pack("{s:o}", "ports", aj_ports_json(ports)));
		else
			printf("Forwarding from %s -> %u\n", host, (unsigned)aj_ports_at(ports, 0)->port);
		fflush(stdout);
		event_base_dispatch(f->base);
		r = 0;
		if (f->gone) {
			aj_err_set(err, AJ_LAYER_STATE, ECONNRESET,
				   "port-forward: the sandbox \"%s\" stopped", name);
			err->cls = AJ_ERRC_WRONG_STATE;
			r = -1;
		}
	} else if (err->layer != AJ_LAYER_INTERNAL) {
		aj_err_prefix(err, "port-forward");
	}
	for (int i = 0; i < 3; i++)
		if (ev[i])
			event_free(ev[i]);
	return r;
}

static int cmd_port_forward(const struct aj_verb *v, int argc, char **argv)
{
	struct pf_cli c = {.address = "127.0.0.1"};
	struct aj_mgr m = {0};
	struct aj_err err;
	_cleanup_strv_ struct aj_strv specs = {0};
	struct forward f = {.ctl = -1};
	struct aj_ports *ports;
	char **args;
	int nargs, rc;

	aj_err_clear(&err);
	if ((rc = aj_verb_parse(v, &c, argc, argv, &args, &nargs, &err)) != 0)
		return rc > 0 ? 0 : aj_cli_fail(aj_cli.json, &err);
	if (nargs != 2) {
		aj_err_set(&err, AJ_LAYER_USAGE, 0,
			   nargs > 2 ? "port-forward: unexpected argument \"%s\""
				     : "port-forward: expected NAME [LOCALPORT:]PORT%s",
			   nargs > 2 ? args[2] : "");
		return aj_cli_fail(aj_cli.json, &err);
	}
	if (forward_spec(args[1], c.address, &specs, &err) < 0)
		return aj_cli_fail(aj_cli.json, &err);
	f.address = c.address;
	signal(SIGPIPE, SIG_IGN);
	f.ctl = connect_sandbox(&m, args[0], &err);
	f.base = f.ctl >= 0 ? aj_event_base_new() : NULL;
	if (f.ctl >= 0 && !f.base)
		aj_err_set(&err, AJ_LAYER_INTERNAL, ENOMEM, "event loop");
	ports = f.base ? aj_ports_new() : NULL;
	rc = ports && forward(&f, args[0], ports, &specs, &err) == 0 ? 0
								      : aj_cli_fail(aj_cli.json, &err);
	aj_ports_free(ports); /* its events first: they belong to the loop */
	if (f.base)
		event_base_free(f.base);
	aj_close_fd(&f.ctl);
	aj_mgr_close(&m);
	return rc;
}

#define PF(field) .to = AJ_TO_CTX, .off = offsetof(struct pf_cli, field)
static const struct aj_option port_forward_options[] = {
	{AJ_OPT("address", 0, AJ_OPT_STRING), PF(address), .metavar = "ADDR",
	 .help = "the host address to listen on (default 127.0.0.1; 0.0.0.0 or :: for every "
		 "address)"},
	AJ_OPT_END,
};
#undef PF
static const struct aj_arg port_forward_args[] = {
	AJ_ARG("NAME", AJ_COMP_SANDBOX),
	AJ_ARG("[LOCALPORT:]PORT", AJ_COMP_NONE),
	AJ_ARG_END,
};
const struct aj_verb aj_verb_port_forward = {
	.name = "port-forward",
	.fn = cmd_port_forward,
	.summary = "relay a host port to a port inside a running sandbox while it runs",
	.synopsis = "port-forward [OPTIONS] NAME [LOCALPORT:]PORT",
	.help = "Listens on LOCALPORT of the host (127.0.0.1 unless --address; an ephemeral port "
		"when omitted or 0, printed) and relays each connection to PORT on the sandbox's "
		"loopback, until interrupted (exit 0) or the sandbox stops (exit 3). Inbound only: the "
		"sandbox gets no way out. -v prints each connection as it ends.",
	.options = port_forward_options,
	.args = port_forward_args,
};
