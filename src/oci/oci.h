/* agentjail as an OCI runtime with runc's command line (the contract containerd's
 * io.containerd.runc.v2 shim and go-runc rely on):
 *
 *   agentjail [--root DIR] [--log FILE] [--log-format text|json] [--systemd-cgroup] VERB ...
 *   agentjail oci [global flags] VERB ...
 *
 * Verbs: create, start, state, kill, delete, exec, ps, pause, resume, features, events,
 * list, and report (agentjail's enforcement report of a container). Errors go to stderr and,
 * as JSON lines {"level":"error","msg":...,"time":...}, to the --log file, where the shim
 * looks for the last one; the exit status is then 1.
 */
#ifndef AJ_OCI_OCI_H
#define AJ_OCI_OCI_H

#include <stdbool.h>

#include "common/err.h"

#define AJ_OCI_DEFAULT_ROOT "/run/agentjail-oci"

/* The runtime's entry points for the command line (cli.c): `agentjail oci VERB`, and whether
 * agentjail was invoked with runc's global flags (then it goes straight to aj_cmd_oci). */
int aj_cmd_oci(int argc, char **argv);
bool aj_oci_invoked_as_runc(int argc, char **argv);

struct aj_oci_globals {
	const char *root;
	const char *log;
	bool log_json;
	bool systemd_cgroup;
	bool debug;
};

/* The verbs (verbs_life.c, verbs_proc.c); argv[0] is the verb. They return 0 or -1 with err
 * set, or an exit code >= 0 of their own (exec without --detach). */
int aj_oci_create_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_start_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_state_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_kill_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_delete_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_list_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_exec_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_ps_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_pause_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_resume_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_events_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_features_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);
int aj_oci_report_verb(const struct aj_oci_globals *g, int argc, char **argv, struct aj_err *err);

/* A warning line in the --log file (and on stderr with --debug). */
void aj_oci_log(const struct aj_oci_globals *g, const char *level, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Option parsing shared by the verbs: long options "--name value" / "--name=value" (and
 * go-style "-name"), booleans without a value, single-letter aliases. Parsing stops at the
 * first operand; *first gets its index. */
struct aj_oci_opt {
	const char *name;
	char alias;     /* 0: none */
	bool has_arg;
	const char **value; /* has_arg */
	bool *flag;         /* !has_arg */
};
int aj_oci_parse_opts(int argc, char **argv, const struct aj_oci_opt *opts, int *first,
		      struct aj_err *err);

#endif
