/* The egress proxy's API (egress.h): setting up from the plan, accepting connections from
 * the sandbox, limits, decisions and events. */
#include <errno.h>
#include <event2/dns.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/util.h"
#include "egress/internal.h"

static int load_private(struct aj_egress *eg, struct aj_err *err)
{
	const struct aj_strv *sv = &eg->plan->policy->net_allow_private;
	char why[256];

	eg->private_ok = aj_xcalloc(sv->n ? sv->n : 1, sizeof *eg->private_ok);
	for (size_t i = 0; i < sv->n; i++, eg->n_private_ok++)
		if (aj_egress_cidr_parse(sv->v[i], &eg->private_ok[i], why, sizeof why) < 0)
			return aj_err_set(err, AJ_LAYER_POLICY, 0, "network.allow_private[%zu]: %s",
					  i, why);
	return 0;
}

int aj_egress_ca_files(const struct aj_egress *eg, char **bundle, size_t *bundle_len, char **ca,
		       size_t *ca_len, struct aj_err *err)
{
	*bundle = *ca = NULL;
	*bundle_len = *ca_len = 0;
	if (!eg->tls)
		return 0;
	*bundle = aj_egress_tls_bundle(eg->tls, bundle_len, err);
	if (!*bundle)
		return -1;
	*ca = aj_egress_tls_ca_pem(eg->tls, ca_len);
	if (!*ca) {
		free(*bundle);
		*bundle = NULL;
		return aj_err_sys(err, AJ_LAYER_PROXY, "the sandbox's CA certificate");
	}
	return 0;
}

static void egress_freep(struct aj_egress **eg)
{
	aj_egress_free(*eg);
}

/* The names the proxy may terminate TLS for, fixed at start (the CA is constrained to them):
 * the credentials' hosts and those of https:// HTTP rules, allow and deny (not addresses). */
static void intercept_names(struct aj_egress *eg)
{
	for (size_t i = 0; i < eg->n_creds; i++)
		for (size_t j = 0; j < eg->creds[i].n_hosts; j++)
			if (!aj_strv_contains(&eg->intercept, eg->creds[i].hosts[j].host))
				aj_strv_push(&eg->intercept, eg->creds[i].hosts[j].host);
	for (size_t i = 0; i < eg->rules.n_allow + eg->rules.n_deny; i++) {
		const struct aj_egress_rule *r = i < eg->rules.n_allow
							 ? &eg->rules.allow[i]
							 : &eg->rules.deny[i - eg->rules.n_allow];
		if (r->path && r->tls && !r->any_host && !aj_egress_host_is_literal(r->host) &&
		    !aj_strv_contains(&eg->intercept, r->host))
			aj_strv_push(&eg->intercept, r->host);
	}
}

bool eg_can_intercept(const struct aj_egress *eg, const char *host)
{
	size_t hl = strlen(host);

	if (!eg->tls || aj_egress_host_is_literal(host))
		return false;
	for (size_t i = 0; i < eg->intercept.n; i++) {
		const char *n = eg->intercept.v[i];
		size_t nl = strlen(n);
		if (!strcmp(host, n) || (hl > nl + 1 && host[hl - nl - 1] == '.' &&
					 !strcmp(host + hl - nl, n)))
			return true;
	}
	return false;
}

int aj_egress_new(struct aj_plan *plan, struct aj_egress **out, struct aj_err *err)
{
	__attribute__((cleanup(egress_freep))) struct aj_egress *eg = aj_xcalloc(1, sizeof *eg);

	*out = NULL;
	eg->plan = plan;
	eg->listen_fd = -1;
	eg->spipe[0] = eg->spipe[1] = -1;
	if (aj_egress_rules_build(&eg->rules, &plan->policy->net_allow, &plan->policy->net_deny,
				  err) < 0 ||
	    load_private(eg, err) < 0 ||
	    aj_egress_creds_load(plan, &eg->creds, &eg->n_creds, err) < 0)
		return aj_err_prefix(err, "egress proxy");
	intercept_names(eg);
	if (eg->intercept.n && plan->egress.bundle_op != SIZE_MAX &&
	    aj_egress_tls_new(plan->id, &eg->intercept, &eg->tls, err) < 0)
		return aj_err_prefix(err, "egress proxy");
	*out = aj_steal_ptr(&eg);
	return 0;
}

static void on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
		      int salen, void *arg)
{
	struct aj_egress *eg = arg;
	struct pconn *pc;

	(void)l;
	(void)sa;
	(void)salen;
	if (eg->stopping) {
		close(fd);
		return;
	}
	pc = pc_new(eg, fd); /* takes fd, also when it fails */
	if (!pc)
		return;
	eg->stats.connections++;
	if (eg->n_conns > eg->stats.peak_connections)
		eg->stats.peak_connections = eg->n_conns;
	/* Over the limit the connection is still read: the refusal is told in the client's
	 * own protocol, with the reason. */
	uint64_t max = eg->plan->policy->net_max_connections;
	pc->over_limit = max && eg->n_conns > max;
	if (pc->over_limit && !eg->conn_limit_told) {
		eg->conn_limit_told = true;
		eg_emit(eg, "limit", json_pack("{s:s, s:I}", "limit", "network.max_connections",
					       "max", (json_int_t)max));
	}
}

/* Out of descriptors (EMFILE): libevent would report the same error in a loop. The
 * listener pauses for a moment; connections already accepted go on. */
static void resume_listening(evutil_socket_t fd, short what, void *arg)
{
	struct aj_egress *eg = arg;

	(void)fd;
	(void)what;
	if (eg->listener)
		evconnlistener_enable(eg->listener);
}

static void on_listen_error(struct evconnlistener *l, void *arg)
{
	struct aj_egress *eg = arg;
	struct timeval tv = {0, 100 * 1000};

	evconnlistener_disable(l);
	if (!eg->resume)
		eg->resume = evtimer_new(eg->base, resume_listening, eg);
	if (eg->resume)
		evtimer_add(eg->resume, &tv);
}

static int setup_dns(struct aj_egress *eg, struct aj_err *err)
{
	const char *conf = getenv("AGENTJAIL_EGRESS_RESOLV_CONF");
	const char *hosts = getenv("AGENTJAIL_EGRESS_HOSTS");
	int r;

	/* Resolution happens here, outside the sandbox, so that the address checked is the
	 * address connected to. No nameserver configured means names fail to resolve, never
	 * a silent fallback to 127.0.0.1. */
	eg->dns = evdns_base_new(eg->base, 0);
	if (!eg->dns)
		return aj_err_set(err, AJ_LAYER_PROXY, ENOMEM, "resolver");
	evdns_base_set_option(eg->dns, "timeout:", "5");
	evdns_base_set_option(eg->dns, "attempts:", "2");
	r = evdns_base_resolv_conf_parse(eg->dns,
					 DNS_OPTION_NAMESERVERS | DNS_OPTION_SEARCH |
						 DNS_OPTION_MISC | DNS_OPTION_NAMESERVERS_NO_DEFAULT,
					 conf ? conf : "/etc/resolv.conf");
	if (r != 0 && r != 6 /* no nameservers: resolution then fails per request */ && conf)
		return aj_err_set(err, AJ_LAYER_PROXY, 0,
				  "AGENTJAIL_EGRESS_RESOLV_CONF \"%s\" could not be read (evdns "
				  "error %d)",
				  conf, r);
	/* No search domains: the name checked by the rules is the name resolved. */
	evdns_base_search_clear(eg->dns);
	if (evdns_base_load_hosts(eg->dns, hosts ? hosts : "/etc/hosts") != 0 && hosts)
		return aj_err_set(err, AJ_LAYER_PROXY, 0,
				  "AGENTJAIL_EGRESS_HOSTS \"%s\" could not be read", hosts);
	return 0;
}

int aj_egress_start(struct aj_egress *eg, struct event_base *base, int listen_fd,
		    aj_egress_emit_fn emit, void *arg, struct aj_err *err)
{
	eg->base = base;
	eg->emit = emit;
	eg->emit_arg = arg;
	eg->listen_fd = listen_fd;
	if (listen_fd < 0)
		return aj_err_set(err, AJ_LAYER_PROXY, EBADF,
				  "the sandbox did not pass the proxy's listening socket");
	/* Every proxied connection costs two descriptors (the sandbox's own limit is set by
	 * the plan, not inherited from here). */
	aj_nofile_raise();
	if (setup_dns(eg, err) < 0)
		return -1;
	aj_egress_spipe_open(eg); /* failing, tunnels are relayed through bufferevents */
	eg->listener = evconnlistener_new(base, on_accept, eg,
					  LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0,
					  listen_fd);
	if (!eg->listener)
		return aj_err_sys(err, AJ_LAYER_PROXY, "listen for the sandbox's connections");
	eg->listen_fd = -1;
	evconnlistener_set_error_cb(eg->listener, on_listen_error);
	return 0;
}

void eg_emit(struct aj_egress *eg, const char *event, json_t *fields)
{
	if (eg->emit)
		eg->emit(eg->emit_arg, event, fields);
	else
		json_decref(fields);
}

bool eg_count(struct aj_egress *eg, uint64_t up, uint64_t down)
{
	uint64_t max = eg->plan->policy->net_max_bytes;

	eg->stats.bytes_up += up;
	eg->stats.bytes_down += down;
	if (!max || eg->stats.bytes_up + eg->stats.bytes_down <= max)
		return true;
	if (!eg->bytes_exhausted) {
		eg->bytes_exhausted = true;
		eg_emit(eg, "limit", json_pack("{s:s, s:I}", "limit", "network.max_bytes", "max",
					       (json_int_t)max));
	}
	return false;
}

static bool decide(struct pconn *pc, const char *path)
{
	struct aj_egress *eg = pc->eg;
	struct aj_egress_verdict v;

	if (path) /* the event's: also when a limit denies the request */
		snprintf(pc->path, sizeof pc->path, "%.*s", (int)strcspn(path, "?#"), path);
	if (eg->bytes_exhausted) {
		snprintf(pc->rule, sizeof pc->rule, "network.max_bytes");
		snprintf(v.why, sizeof v.why, "the sandbox's egress byte limit (network.max_bytes) "
					      "is used up");
		v.allowed = false;
	} else if (pc->over_limit) {
		snprintf(pc->rule, sizeof pc->rule, "network.max_connections");
		snprintf(v.why, sizeof v.why, "too many connections through the proxy at once "
					      "(network.max_connections = %lu)",
			 (unsigned long)eg->plan->policy->net_max_connections);
		v.allowed = false;
	} else {
		aj_egress_rules_decide(&eg->rules, pc->host, pc->port, &v);
		pc->inspect = v.inspect;
		pc->inspect_tls = v.inspect_tls;
		if (path) {
			struct aj_egress_verdict conn = v;
			aj_egress_rules_decide_request(&eg->rules, pc->host, pc->port,
						       pc->intercepted, pc->method, path, &conn, &v);
		}
		if (v.rule)
			snprintf(pc->rule, sizeof pc->rule, "%s \"%s\"", v.rule->field, v.rule->text);
		else
			snprintf(pc->rule, sizeof pc->rule, "network.allow (no match)");
	}
	pc->t0_us = aj_now_monotonic_us();
	if (v.allowed) {
		pc->decided = true;
		return true;
	}
	pc_upstream_failed(pc, eg->bytes_exhausted || pc->over_limit ? EF_LIMIT : EF_DENIED,
			   v.why);
	return false;
}

bool pc_decide(struct pconn *pc)
{
	pc->path[0] = '\0';
	return decide(pc, NULL);
}

bool pc_decide_request(struct pconn *pc, const char *path)
{
	return decide(pc, path);
}

bool pc_by_request_ok(struct pconn *pc, bool *intercept)
{
	char why[600];

	if (!pc->inspect || *intercept)
		return true;
	if (pc->inspect_tls && eg_can_intercept(pc->eg, pc->host)) {
		*intercept = true;
		return true;
	}
	snprintf(why, sizeof why,
		 "%s:%u: HTTP rules name this host (%s), and the proxy cannot see requests in a "
		 "tunnel to it (it terminates TLS only for the hosts of credentials and "
		 "https:// rules of the sandbox's start; http:// rules are for plain requests "
		 "through the proxy)",
		 pc->host, pc->port, pc->rule);
	pc_upstream_failed(pc, EF_DENIED, why);
	return false;
}

int aj_egress_update(struct aj_egress *eg, unsigned *closed, struct aj_err *err)
{
	struct aj_egress_rules nr;
	struct pconn *pc, *next;

	*closed = 0;
	if (aj_egress_rules_build(&nr, &eg->plan->policy->net_allow, &eg->plan->policy->net_deny,
				  err) < 0)
		return aj_err_prefix(err, "egress proxy");
	aj_egress_rules_free(&eg->rules);
	eg->rules = nr;
	for (pc = eg->conns; pc; pc = next) {
		struct aj_egress_verdict v;
		const char *host = pc->up && pc->up_host[0] ? pc->up_host : pc->host;
		uint16_t port = pc->up && pc->up_host[0] ? pc->up_port : pc->port;

		next = pc->next;
		if (pc->closed || !host[0] || (pc->state < PS_UPSTREAM && !pc->up && !pc->intercepted))
			continue;
		aj_egress_rules_decide(&eg->rules, host, port, &v);
		/* A tunnel carries requests nobody checks: where HTTP rules name the host it
		 * does not stay. */
		if (v.allowed && (!v.inspect || pc->intercepted || pc->kind == PK_HTTP))
			continue;
		if (pc->decided)
			pc_event(pc, "allowed", NULL, 0); /* what it carried until now */
		eg_emit(eg, "egress",
			json_pack("{s:s, s:i, s:s, s:s, s:s}", "host", host, "port", port, "decision",
				  "closed", "rule", v.rule ? v.rule->text : "network.allow (no match)",
				  "reason", "the sandbox's network policy changed and no longer "
					    "allows this host"));
		pc_close(pc);
		(*closed)++;
	}
	return 0;
}

void aj_egress_get_stats(const struct aj_egress *eg, struct aj_egress_stats *out)
{
	if (eg)
		*out = eg->stats;
	else
		memset(out, 0, sizeof *out);
}

json_t *aj_egress_stats_json(const struct aj_egress_stats *s)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "connections",
			 (json_int_t)s->connections, "allowed", (json_int_t)s->allowed, "denied",
			 (json_int_t)s->denied, "failed", (json_int_t)s->failed, "bytes_up",
			 (json_int_t)s->bytes_up, "bytes_down", (json_int_t)s->bytes_down,
			 "credentials_injected", (json_int_t)s->credentials, "tls_intercepted",
			 (json_int_t)s->intercepted, "peak_connections",
			 (json_int_t)s->peak_connections);
}

void aj_egress_stop(struct aj_egress *eg)
{
	if (!eg || !eg->base)
		return;
	eg->stopping = true;
	while (eg->conns)
		pc_close(eg->conns);
	if (eg->listener)
		evconnlistener_free(eg->listener);
	eg->listener = NULL;
	if (eg->resume)
		event_free(eg->resume);
	eg->resume = NULL;
	if (eg->dns)
		evdns_base_free(eg->dns, 1);
	eg->dns = NULL;
	/* Cancelled resolutions report back through deferred callbacks, which free the last
	 * closed connections: let them run (only the proxy has work pending by now). */
	for (int i = 0; i < 10 && eg->n_pending; i++)
		event_base_loop(eg->base, EVLOOP_NONBLOCK);
}

void aj_egress_free(struct aj_egress *eg)
{
	if (!eg)
		return;
	aj_egress_stop(eg);
	aj_close_fd(&eg->listen_fd);
	aj_egress_spipe_close(eg);
	aj_egress_rules_free(&eg->rules);
	aj_strv_free(&eg->intercept);
	free(eg->private_ok);
	aj_egress_creds_free(eg->creds, eg->n_creds);
	aj_egress_tls_free(eg->tls);
	free(eg);
}
