/* The landlock tier's plan (src/policy/plan_tier.c) against simulated hosts: which layers it
 * marks absent, which grants become which Landlock rules, and which policies it refuses or
 * degrades, for a given Landlock ABI, uid and cgroup. Nothing is launched. */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/plan.h"
#include "rules/landlock.h"
#include "unit.h"

static char tmpdir[64], ws[128];
static struct aj_cgroup_env no_cgroup;

static void host(struct aj_features *f, uid_t uid, int abi)
{
	memset(f, 0, sizeof *f);
	f->uid = uid;
	f->gid = uid;
	f->privileged = uid == 0;
	f->landlock_abi = abi;
	f->seccomp = true;
	f->mount_api = true;
	f->userns = 0;
	f->cgroup = &no_cgroup;
}

/* Builds a landlock-tier plan for the policy text on top of the tier's defaults (no limits
 * that need a cgroup). Returns the build's result; the plan is freed unless kept. */
static int build(const char *text, const struct aj_features *f, struct aj_plan *plan,
		 struct aj_policy *pol, struct aj_err *err)
{
	char *argv[] = {"true", NULL};
	json_t *j = json_loads(text, 0, NULL);
	int r;

	aj_policy_init(pol);
	aj_err_clear(err);
	pol->tier = AJ_TIER_LANDLOCK;
	pol->limits.memory = pol->limits.pids = 0;
	free(pol->workspace);
	pol->workspace = strdup(ws);
	r = j ? aj_policy_apply_json(pol, j, err) : -1;
	json_decref(j);
	if (r == 0)
		r = aj_policy_validate(pol, err);
	if (r == 0)
		r = aj_plan_build(plan, pol, f, argv, err);
	return r;
}

static const struct aj_op *op_at(const struct aj_plan *p, const char *path)
{
	for (size_t i = 0; i < p->n_ops; i++)
		if (strcmp(p->ops[i].dst, path) == 0)
			return &p->ops[i];
	return NULL;
}

static void full_host(void)
{
	struct aj_features f;
	struct aj_policy pol;
	struct aj_plan p;
	struct aj_err err;
	const struct aj_op *op;
	char ro[160];

	host(&f, 1000, 7);
	snprintf(ro, sizeof ro, "%s/ro", tmpdir);
	mkdir(ro, 0755);
	CHECK(build("{\"filesystem\": {\"read_only\": [\"/usr/share\"]}}", &f, &p, &pol, &err) == 0,
	      "ABI 7, no cgroup, no limits: the tier builds");
	if (err.msg[0])
		printf("#   %s\n", err.msg);
	CHECK(p.clone_flags == 0 && p.tier == AJ_TIER_LANDLOCK, "no namespace is cloned");
	CHECK(p.layers[AJ_PL_PIDNS].state == AJ_LS_ABSENT &&
		      p.layers[AJ_PL_USERNS].state == AJ_LS_ABSENT &&
		      p.layers[AJ_PL_MOUNTNS].state == AJ_LS_ABSENT,
	      "the namespaces are absent");
	CHECK_STR(aj_plan_layer_state_name(AJ_LS_ABSENT), "absent", "the state prints as absent");
	CHECK(p.uid == 1000 && !p.privileged, "the sandbox runs as the caller");
	op = op_at(&p, ws);
	CHECK(op && op->kind == AJ_OP_ALLOW && (op->landlock & AJ_LL_RW) == AJ_LL_RW,
	      "the workspace is a read-write rule");
	op = op_at(&p, "/usr/share");
	CHECK(op && op->landlock == AJ_LL_RX, "a read-only grant is a read-exec rule");
	op = op_at(&p, "/proc");
	CHECK(op && op->landlock == AJ_LL_RO, "the host's /proc is read-only");
	CHECK(p.ll_net == (AJ_LL_NET_BIND_TCP | AJ_LL_NET_CONNECT_TCP) &&
		      p.ll_scope == (AJ_LL_SCOPE_ABSTRACT_UNIX | AJ_LL_SCOPE_SIGNAL),
	      "TCP and scopes are handled");
	CHECK(p.sc_owned && p.sc_len > 0, "the tier's seccomp program is compiled");
	CHECK(p.scratch && strncmp(p.scratch, "/", 1) == 0, "a scratch directory is planned");
	aj_plan_free(&p);
	aj_policy_free(&pol);
}

static void refusals(void)
{
	struct aj_features f;
	struct aj_policy pol;
	struct aj_plan p;
	struct aj_err err;
	char text[512];

	host(&f, 0, 7);
	CHECK(build("{}", &f, &p, &pol, &err) < 0, "root is refused");
	CHECK_CONTAINS(err.msg, "the sandbox would be host root", "and told why");
	aj_policy_free(&pol);

	host(&f, 1000, 5);
	CHECK(build("{}", &f, &p, &pol, &err) < 0, "ABI 5 (no scopes) is refused");
	CHECK_CONTAINS(err.msg, "the landlock-scope layer is needed", "naming landlock-scope");
	aj_policy_free(&pol);
	CHECK(build("{\"allow_degraded\": [\"landlock-scope\"]}", &f, &p, &pol, &err) == 0 &&
		      p.layers[AJ_PL_LANDLOCK_SCOPE].state == AJ_LS_DEGRADED,
	      "ABI 5 with allow_degraded landlock-scope: degraded");
	aj_plan_free(&p);
	aj_policy_free(&pol);

	host(&f, 1000, 3);
	CHECK(build("{\"allow_degraded\": [\"landlock-scope\"]}", &f, &p, &pol, &err) < 0,
	      "ABI 3 (no TCP rules) is refused");
	CHECK_CONTAINS(err.msg, "the landlock-net layer is needed", "naming landlock-net");
	aj_policy_free(&pol);

	host(&f, 1000, 0);
	snprintf(f.landlock_why, sizeof f.landlock_why, "simulated");
	CHECK(build("{\"allow_degraded\": [\"landlock\"]}", &f, &p, &pol, &err) < 0,
	      "no Landlock: refused even with allow_degraded landlock");
	aj_policy_free(&pol);

	host(&f, 1000, 7);
	snprintf(text, sizeof text, "{\"filesystem\": {\"mask\": [\"%s/secret\"]}}", ws);
	CHECK(build(text, &f, &p, &pol, &err) < 0, "a mask inside the workspace is refused");
	CHECK_CONTAINS(err.msg, "filesystem.mask[0]", "naming the field");
	aj_policy_free(&pol);
	CHECK(build("{\"filesystem\": {\"mask\": [\"/usr\"]}}", &f, &p, &pol, &err) < 0,
	      "a mask over a granted system directory is refused");
	aj_policy_free(&pol);
	CHECK(build("{\"hostname\": \"box\"}", &f, &p, &pol, &err) < 0, "a hostname is refused");
	CHECK_CONTAINS(err.msg, "uts-namespace", "naming uts-namespace");
	aj_policy_free(&pol);
	CHECK(build("{\"syscalls\": {\"allow\": [\"io_uring\"]}}", &f, &p, &pol, &err) < 0,
	      "relaxing io_uring is refused");
	aj_policy_free(&pol);
	CHECK(build("{\"syscalls\": {\"allow\": [\"unix-sockets\", \"host-ipc\"]}}", &f, &p, &pol,
		    &err) == 0,
	      "the tier's own groups can be relaxed");
	aj_plan_free(&p);
	aj_policy_free(&pol);
}

/* network.listen: bind rules on the named ports, and seccomp's listen() rule lifted (the
 * rest of the tier's network rules stay). */
static void listen_ports(void)
{
	struct aj_features f;
	struct aj_policy pol;
	struct aj_plan p;
	struct aj_err err;
	size_t closed;

	host(&f, 1000, 7);
	CHECK(build("{}", &f, &p, &pol, &err) == 0, "a plan without listen ports (%s)", err.msg);
	closed = p.sc_rules;
	aj_plan_free(&p);
	aj_policy_free(&pol);
	CHECK(build("{\"network\": {\"listen\": [8080, 9000, 8080]}}", &f, &p, &pol, &err) == 0,
	      "network.listen builds (%s)", err.msg);
	CHECK(pol.net_listen.n == 2 && pol.net_listen.v[0] == 8080 && pol.net_listen.v[1] == 9000,
	      "the ports, without the repeat");
	CHECK(p.ll_net == (AJ_LL_NET_BIND_TCP | AJ_LL_NET_CONNECT_TCP), "TCP still handled");
	CHECK_CONTAINS(p.layers[AJ_PL_LANDLOCK_NET].detail, "TCP bind denied but on ports 8080, 9000",
		       "the plan names the ports");
	CHECK(p.sc_rules == closed - 1, "one seccomp rule fewer: listen() (%zu, %zu)", p.sc_rules,
	      closed);
	CHECK(!strstr(p.layers[AJ_PL_SECCOMP].detail, "listen()"),
	      "the seccomp layer no longer says listen() is refused");
	aj_plan_free(&p);
	aj_policy_free(&pol);
	CHECK(build("{\"network\": {\"listen\": [0]}}", &f, &p, &pol, &err) < 0,
	      "port 0 is refused");
	CHECK_CONTAINS(err.msg, "network.listen[0]: expected a TCP port number (1-65535)",
		       "naming the element");
	aj_policy_free(&pol);
	CHECK(build("{\"network\": {\"listen\": [\"80\"]}}", &f, &p, &pol, &err) < 0,
	      "a string is refused");
	CHECK_CONTAINS(err.msg, "network.listen[0]: expected a TCP port number (1-65535), got a "
			       "string", "naming its type");
	aj_policy_free(&pol);
}

static void limits(void)
{
	struct aj_features f;
	struct aj_policy pol;
	struct aj_plan p;
	struct aj_err err;
	bool as = false;

	host(&f, 1000, 7);
	CHECK(build("{\"limits\": {\"memory\": \"64MiB\"}, \"allow_degraded\": [\"memory\"]}", &f,
		    &p, &pol, &err) == 0,
	      "a memory limit accepted as degraded builds");
	for (size_t i = 0; i < p.n_rlimits; i++)
		as = as || (p.rlimits[i].resource == RLIMIT_AS && p.rlimits[i].value == 64 << 20);
	CHECK(as && p.layers[AJ_PL_MEMORY].state == AJ_LS_DEGRADED,
	      "RLIMIT_AS stands in, and the layer says degraded");
	aj_plan_free(&p);
	aj_policy_free(&pol);
	CHECK(build("{\"limits\": {\"pids\": 100}}", &f, &p, &pol, &err) < 0,
	      "a pids limit without a pids cgroup is refused");
	aj_policy_free(&pol);
}

int main(void)
{
	char dir[] = "/tmp/ajunit-tier.XXXXXX";

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(tmpdir, sizeof tmpdir, "%s", dir);
	snprintf(ws, sizeof ws, "%s/ws", dir);
	mkdir(ws, 0755);
	no_cgroup.mode = AJ_CGROUP_NONE;
	for (int c = 0; c < AJ_CG__COUNT; c++)
		snprintf(no_cgroup.why[c], sizeof no_cgroup.why[c], "simulated: no cgroup");
	full_host();
	refusals();
	listen_ports();
	limits();
	rmdir(ws);
	snprintf(ws, sizeof ws, "%s/ro", dir);
	rmdir(ws);
	rmdir(dir);
	UNIT_EXIT();
}
