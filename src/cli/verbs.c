/* The verbs in the order `agentjail --help` lists them, and the OCI runtime's entry (its
 * command line is runc's, parsed in src/oci/). */
#include "cli/commands.h"
#include "oci/oci.h"

static int cmd_oci(const struct aj_verb *v, int argc, char **argv)
{
	(void)v;
	return aj_cmd_oci(argc, argv);
}

const struct aj_verb aj_verb_oci = {
	.name = "oci",
	.fn = cmd_oci,
	.summary = "the OCI runtime (runc's verbs) for containerd and Kubernetes",
	.synopsis = "oci [--root DIR] [--log FILE] [--log-format text|json] [--systemd-cgroup] "
		    "VERB ...",
	.help = "The OCI runtime with runc's command line (docs/cli.md, docs/kubernetes.md).",
	.flags = AJ_VERB_OWN_ARGS | AJ_VERB_NO_CONFIG,
};

const struct aj_verb *const aj_verbs[] = {
	&aj_verb_run,       &aj_verb_create,    &aj_verb_exec,       &aj_verb_ls,
	&aj_verb_ps,        &aj_verb_inspect,   &aj_verb_logs,       &aj_verb_top,       &aj_verb_stats,
	&aj_verb_port,      &aj_verb_port_forward,
	&aj_verb_start,     &aj_verb_stop,      &aj_verb_pause,      &aj_verb_resume,
	&aj_verb_snapshot,  &aj_verb_snapshots, &aj_verb_restore,    &aj_verb_fork,
	&aj_verb_update,    &aj_verb_diff,      &aj_verb_cp,        &aj_verb_rm,         &aj_verb_events,
	&aj_verb_gc,        &aj_verb_changes,   &aj_verb_mcp,        &aj_verb_serve,
	&aj_verb_image,     &aj_verb_build,     &aj_verb_secret,     &aj_verb_storage,    &aj_verb_volume,     &aj_verb_config,    &aj_verb_oci,
	&aj_verb_policy,
	&aj_verb_features,  &aj_verb_version,   &aj_verb_completion, &aj_verb_help,
	&aj_verb_supervise, &aj_verb_zygote, &aj_verb_gvinit, &aj_verb_build_job, &aj_verb_complete,  &aj_verb_man,        NULL,
};
