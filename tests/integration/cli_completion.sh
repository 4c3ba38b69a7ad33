#!/usr/bin/env bash
# Shell completions (`agentjail completion bash|zsh|fish`), printed from the option tables:
# loaded into a real bash (complete -p, then completion queries through the function bash
# calls), zsh (parsed, registered with compinit) and fish (queries with complete -C). They
# offer what the parser accepts: every verb, every option --help lists, the values of choice
# options, and the names of sandboxes and snapshots of the state directory on the line.
# Not in the rootless pass: completions are the same whoever asks.
# timeout: 120
. "$AJ_ROOT/tests/lib.sh"
. "$AJ_ROOT/tests/persist.bash"
pj_setup
export AGENTJAIL_CONFIG=none

T=$(mktmp)
BIN=$T/bin
mkdir -p "$BIN"
ln -s "$AJ" "$BIN/agentjail" # the scripts call agentjail by name, from PATH
pj_create compl-one --stopped
aj_run snapshot compl-one --name compl-snap
[ "$RC" = 0 ] || pj_bail "snapshot compl-one"
OTHER=$T/other-state
AGENTJAIL_STATE_DIR=$OTHER "$AJ" create --name elsewhere --stopped $PJ_FLAGS >/dev/null 2>&1
PJ_EXTRA_STATES+=("$OTHER")

aj_run completion bash
expect_eq "completion bash: exit 0" "$RC" 0
printf '%s\n' "$OUT" >"$T/agentjail.bash"
aj_run completion tcsh
expect_eq "completion of an unknown shell: 125" "$RC" 125
expect_contains "... names the shells" "$ERR" "expected bash, zsh or fish"

# ---- bash ------------------------------------------------------------------------------------

# bq WORDS...: what bash's completion function offers for the last word (empty: a new one).
bq() {
	PATH=$BIN:$PATH bash --norc --noprofile -c '
. "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=()
_agentjail
[ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' _ "$T/agentjail.bash" "$@"
}

expect_eq "bash: complete -p registers the function" \
	"$(bash --norc --noprofile -c ". '$T/agentjail.bash'; complete -p agentjail")" "complete -F _agentjail agentjail"
expect_eq "bash: verbs by prefix" "$(bq agentjail sn)" "snapshot snapshots "
expect_eq "bash: verbs by prefix, ps and port-forward among them" "$(bq agentjail p)" "pause policy port port-forward ps "
missing=""
for v in $("$AJ" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p'); do
	case " $(bq agentjail "") " in *" $v "*) ;; *) missing="$missing $v" ;; esac
done
expect_eq "bash: every verb of --help is offered" "$missing" ""
missing=""
for o in $("$AJ" run --help | grep -oE -- '--[a-z][a-z-]+' | sort -u); do
	case " $(bq agentjail run -) " in *" $o "*) ;; *) missing="$missing $o" ;; esac
done
expect_eq "bash: every option of run --help is offered" "$missing" ""
expect_eq "bash: short options too" "$(bq agentjail exec -i | tr ' ' '\n' | grep -c -- '^-i$')" 1
expect_eq "bash: an option's values (--network)" "$(bq agentjail run --network "")" "host none proxy "
expect_eq "bash: a shared option's values" "$(bq agentjail --log-level "")" "debug error info warn "
expect_eq "bash: the shared options before the verb" "$(bq agentjail --st)" "--state-dir "
expect_eq "bash: sandbox names" "$(bq agentjail exec "")" "compl-one "
expect_eq "bash: sandbox names, after options that take values" "$(bq agentjail exec -e X=1 -w /tmp "")" "compl-one "
expect_eq "bash: after the sandbox, a command" "$(bq agentjail exec compl-one ech)" "echo "
expect_eq "bash: snapshot names" "$(bq agentjail create --from "")" "compl-snap "
if command -v busybox >/dev/null; then
	mkdir -p "$T/rootfs/bin"
	cp "$(command -v busybox)" "$T/rootfs/bin/"
	tar -C "$T/rootfs" -cf "$T/rootfs.tar" .
	aj_run image import --name compl/img:1 "$T/rootfs.tar"
	expect_eq "bash: image names, for --image" "$(bq agentjail run --image "")" "compl/img:1 "
	expect_eq "bash: ... and for image inspect" "$(bq agentjail image inspect "")" "compl/img:1 "
else
	skip "bash: image names" "busybox is not installed (scripts/install-deps installs it)"
fi
expect_eq "bash: restore NAME SNAPSHOT: a snapshot second" "$(bq agentjail restore compl-one "")" "compl-snap "
expect_eq "bash: the state directory on the line is the one asked" \
	"$(bq agentjail --state-dir "$OTHER" start "")" "elsewhere "
expect_eq "bash: ... after the verb too" "$(bq agentjail rm --state-dir="$OTHER" "")" "elsewhere "
expect_eq "bash: words of a positional" "$(bq agentjail snapshots "")" "ls rm "
expect_eq "bash: a subcommand's options" "$(bq agentjail policy import-srt --o)" "--output "
expect_eq "bash: run's command" "$(bq agentjail run -v --memory 1G ech)" "echo "
expect_eq "bash: after --, the command" "$(bq agentjail run -- --x)" ""
touch "$T/report-here.json"
expect_eq "bash: files for --report" "$(bq agentjail run --report "$T/report-h")" "$T/report-here.json "

if [ -f /usr/share/bash-completion/bash_completion ]; then
	expect_eq "bash: loads beside bash-completion" \
		"$(bash --norc --noprofile -c ". /usr/share/bash-completion/bash_completion; . '$T/agentjail.bash'; complete -p agentjail")" \
		"complete -F _agentjail agentjail"
else
	skip "bash: loads beside bash-completion" "bash-completion is not installed"
fi

# ---- zsh --------------------------------------------------------------------------------------

if command -v zsh >/dev/null; then
	"$AJ" completion zsh >"$T/_agentjail"
	check "zsh: the script parses" zsh -n "$T/_agentjail"
	expect_eq "zsh: compinit registers _agentjail for agentjail" \
		"$(HOME=$T zsh -f -c "autoload -U compinit; compinit -u -D; source '$T/_agentjail'; print -r -- \${_comps[agentjail]}")" _agentjail
	expect_contains "zsh: a choice option's values" "$(cat "$T/_agentjail")" "'*--network[none (default"
	expect_contains "zsh: sandbox names" "$(cat "$T/_agentjail")" "_agentjail_names sandboxes"
else
	skip "zsh: the script parses and registers" "zsh is not installed"
fi

# ---- fish ---------------------------------------------------------------------------------------

if command -v fish >/dev/null; then
	"$AJ" completion fish >"$T/agentjail.fish"
	check "fish: the script parses" fish -n "$T/agentjail.fish"
	fq() { PATH=$BIN:$PATH HOME=$T fish --no-config -c "source '$T/agentjail.fish'; complete -C '$1'" | cut -f1 | sort | tr '\n' ' '; }
	expect_eq "fish: verbs by prefix" "$(fq 'agentjail sn')" "snapshot snapshots "
	expect_contains "fish: options with their help" "$(fq 'agentjail run --pre')" "--preset"
	expect_eq "fish: an option's values" "$(fq 'agentjail run --network ')" "host none proxy "
	expect_eq "fish: sandbox names" "$(fq 'agentjail exec ')" "compl-one "
	expect_eq "fish: snapshot names" "$(fq 'agentjail restore compl-one ')" "compl-snap "
	expect_eq "fish: a positional's words" "$(fq 'agentjail completion ')" "bash fish zsh "
else
	skip "fish: completion queries" "fish is not installed"
fi

# __complete, what the scripts call: names only, and nothing (exit 0) on a bad state directory.
aj_run __complete sandboxes
expect_eq "__complete sandboxes" "$OUT" "compl-one"
aj_run --state-dir /nonexistent/x __complete snapshots
expect_eq "__complete with a bad state directory: exit 0, nothing" "$RC:$OUT:$ERR" "0::"
