#!/usr/bin/env bash
# The manual pages the build writes (make man: agentjail __man from the option tables and
# docs/cli.md): one per command and agentjail(1), each formatted by man -l without warnings,
# with the options --help lists and the command's section of docs/cli.md.
# Not in the rootless pass: the pages are the same whoever reads them.
# timeout: 120
. "$AJ_ROOT/tests/lib.sh"

T=$(mktmp)
aj_run __man "$T/man" "$AJ_ROOT/docs/cli.md"
expect_eq "__man: exit 0" "$RC" 0
expect_eq "a page for agentjail and for each command of --help" \
	"$(ls "$T/man" | sort | tr '\n' ' ')" \
	"$( (echo agentjail.1; "$AJ" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/agentjail-\1.1/p') | sort | tr '\n' ' ')"
if ! command -v man >/dev/null; then
	skip "man -l of the pages" "man (man-db) is not installed"
	exit 0
fi
render() { MANWIDTH=100 LC_ALL=C man -l "$1" 2>&1; }
bad=""
for p in "$T"/man/*.1; do
	w=$(MANWIDTH=100 LC_ALL=C.UTF-8 man --warnings -l "$p" 2>&1 >/dev/null)
	[ -z "$w" ] || bad="$bad $(basename "$p"): $w"
done
expect_eq "man --warnings -l: every page formats without a warning" "$bad" ""
RUN=$(render "$T/man/agentjail-run.1")
expect_contains "agentjail-run(1): its name line" "$RUN" "agentjail-run - run a command in a new sandbox"
expect_contains "agentjail-run(1): its synopsis" "$RUN" "agentjail run [OPTIONS] [--] CMD [ARGS...]"
missing=""
for o in $("$AJ" run --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
	case "$RUN" in *"$o"*) ;; *) missing="$missing $o" ;; esac
done
expect_eq "agentjail-run(1): every option of run --help" "$missing" ""
expect_contains "agentjail-run(1): the choices of an option (from the table)" "$RUN" "One of: review, apply, discard."
expect_contains "agentjail-run(1): docs/cli.md's section (the exit codes)" "$RUN" "The timeout expired; the sandbox was killed."
expect_contains "agentjail-run(1): a code block of the docs, verbatim" "$RUN" '$ agentjail run -v -- true'
expect_contains "agentjail-run(1): the shared options" "$RUN" "--log-level LEVEL"
SERVE=$(render "$T/man/agentjail-serve.1")
expect_contains "agentjail-serve(1): a range from the table" "$SERVE" "From 1 to 256."
LOGS=$(render "$T/man/agentjail-logs.1")
expect_contains "agentjail-logs(1): its section of the docs" "$LOGS" "What docker logs shows of a container"
PS=$(render "$T/man/agentjail-ps.1")
expect_contains "agentjail-ps(1): the section it shares with ls" "$PS" "ps is ls with docker's default"
MAIN=$(render "$T/man/agentjail.1")
expect_contains "agentjail(1): the commands" "$MAIN" "agentjail-logs(1)"
expect_contains "agentjail(1): the configuration file" "$MAIN" "registry_mirror"
expect_contains "agentjail(1): the exit codes" "$MAIN" "The memory limit: the OOM killer"
POL=$(render "$T/man/agentjail-policy.1")
expect_contains "agentjail-policy(1): its subcommand's options" "$POL" "--output OUT"
aj_run __man "$T/man2"
expect_eq "__man without its arguments: 125" "$RC" 125
if [ -d "$AJ_BUILD/man" ]; then
	expect_eq "the build's pages (make man) are these" "$(cd "$AJ_BUILD/man" && ls *.1 | sort | tr '\n' ' ')" \
		"$(cd "$T/man" && ls *.1 | sort | tr '\n' ' ')"
else
	skip "the build's pages (make man) are these" "$AJ_BUILD/man was not built (make man)"
fi
