# Helpers for the tests of `agentjail serve` (tests/*/serve_*.sh); sourced after tests/lib.sh
# and tests/persist.bash. Not a test itself: tests/run only runs *.sh.
#
# sv_setup gives the test a state directory (pj_setup) and a directory for sockets and token
# files ($SV_DIR); sv_start runs a daemon on $SV_DIR/api.sock (and on TCP with sv_start_tcp).
# The EXIT trap kills every daemon the test started, by pid, then removes every sandbox.
#
# api / apit / apij make one request with curl and set CODE, BODY, CTYPE; every response is
# also checked against docs/openapi.json (tests/helpers/openapi_check.py): a mismatch prints a
# "not ok" line at once, and sv_done prints how many matched.

SV_PIDS=()
SV_OA_OK=0
# What a rootless run needs without a delegated cgroup (PJ_FLAGS of the CLI tests).
if is_root; then SV_POLICY='{}'; else SV_POLICY='{"limits":{"memory":null,"cpus":null}}'; fi

sv_setup() {
	pj_setup
	SV_DIR=$(mktmp)
	SOCK=$SV_DIR/api.sock
	SV_LOG=$SV_DIR/serve.log
	trap sv_cleanup EXIT
}

sv_cleanup() {
	local p
	for p in "${SV_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	pj_cleanup
}

# sv_wait_health SECONDS: until GET /v1/health answers 200 on $SOCK.
sv_wait_health() {
	local end=$(($(date +%s%N) / 1000000 + $1 * 1000))
	until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 --unix-socket "$SOCK" http://aj/v1/health 2>/dev/null)" = 200 ]; do
		[ $(($(date +%s%N) / 1000000)) -ge "$end" ] && return 1
		kill -0 "$SV_PID" 2>/dev/null || return 1
		sleep 0.05
	done
}

# sv_start [ARGS...]: a daemon on $SOCK with the test's state directory; SV_PID.
sv_start() {
	"$AJ" serve --socket "$SOCK" --state-dir "$STATE" "$@" >>"$SV_LOG" 2>&1 &
	SV_PID=$!
	SV_PIDS+=("$SV_PID")
	sv_wait_health 15
}

# sv_tokens LINE...: writes the token file $SV_DIR/tokens (mode 0600).
sv_tokens() {
	printf '%s\n' "$@" >"$SV_DIR/tokens"
	chmod 600 "$SV_DIR/tokens"
}

# sv_start_tcp [ARGS...]: sv_start plus --listen 127.0.0.1:$SV_PORT --token-file.
sv_start_tcp() {
	SV_PORT=$(free_port)
	sv_start --listen "127.0.0.1:$SV_PORT" --token-file "$SV_DIR/tokens" "$@"
}

# sv_e2b_keys: API keys for --e2b-keys in $SV_DIR/e2b-keys (mode 0600): KEY of owner alice and
# KEY2 of owner bob.
sv_e2b_keys() {
	KEY=e2b_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	KEY2=e2b_$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
	printf '%s alice\n%s bob\n' "$KEY" "$KEY2" >"$SV_DIR/e2b-keys"
	chmod 600 "$SV_DIR/e2b-keys"
}

# sv_stop: SIGTERM, then waits; SV_RC is the daemon's exit status.
sv_stop() {
	kill -TERM "$SV_PID" 2>/dev/null
	wait "$SV_PID"
	SV_RC=$?
}

_sv_request() {
	local method=$1 path=$2 url=$3 hdr body
	shift 3
	hdr=$(mktemp) body=$(mktemp)
	CODE=$(curl -s --max-time 60 -o "$body" -D "$hdr" -w '%{http_code}' -X "$method" "$@" "$url$path")
	BODY=$(cat "$body")
	CTYPE=$(sed -n 's/^[Cc]ontent-[Tt]ype: *\([^\r]*\).*/\1/p' "$hdr" | tail -1)
	HEADERS=$(tr -d '\r' <"$hdr")
	_sv_openapi "$method" "$path" "$body"
	rm -f "$hdr" "$body"
}

_sv_openapi() {
	local why
	[ "${SV_NO_OPENAPI:-0}" = 1 ] && return
	why=$(py_call openapi "$1" "$2" "$CODE" "$CTYPE" "$3" 2>&1)
	case $? in
	0) SV_OA_OK=$((SV_OA_OK + 1)); return ;;
	255) why=$(python3 "$AJ_ROOT/tests/helpers/openapi_check.py" "$1" "$2" "$CODE" "$CTYPE" "$3" 2>&1) &&
		{ SV_OA_OK=$((SV_OA_OK + 1)); return; } ;;
	esac
	not_ok "openapi: $1 $2 -> $CODE does not match docs/openapi.json: $why"
}

# api METHOD PATH [CURL ARGS...]: a request on the unix socket.
api() {
	local method=$1 path=$2
	shift 2
	_sv_request "$method" "$path" http://aj --unix-socket "$SOCK" "$@"
}

# sv_wait_output SANDBOX PROCESS TEXT: polls (15 s) the kept output of a background process
# until it contains TEXT.
sv_wait_output() { wait_until 15 _sv_output_has "$@"; }
_sv_output_has() {
	local out
	out=$(curl -s --max-time 2 --unix-socket "$SOCK" \
		"http://aj/v1/sandboxes/$1/processes/$2/output" |
		python3 -c 'import json, sys; print("".join(c["data"] for c in json.load(sys.stdin)["output"]))' 2>/dev/null)
	[[ "$out" == *"$3"* ]]
}

# apij METHOD PATH JSON: the same with a JSON body.
apij() {
	api "$1" "$2" -H 'Content-Type: application/json' --data-binary "$3"
}

# apit TOKEN METHOD PATH [CURL ARGS...]: a request on the TCP listener with a bearer token
# ("" for none).
apit() {
	local tok=$1 method=$2 path=$3
	shift 3
	if [ -n "$tok" ]; then
		_sv_request "$method" "$path" "http://127.0.0.1:$SV_PORT" -H "Authorization: Bearer $tok" "$@"
	else
		_sv_request "$method" "$path" "http://127.0.0.1:$SV_PORT" "$@"
	fi
}

apitj() {
	apit "$1" "$2" "$3" -H 'Content-Type: application/json' --data-binary "$4"
}

# bj EXPR: a Python expression over the last response body as `d`; BROKEN if not JSON.
bj() {
	local f=$_aj_tmproot/bj.$BASHPID rc
	printf '%s' "$BODY" >"$f"
	py_call eval "$1" "$f" 2>/dev/null
	rc=$?
	case $rc in
	0) ;;
	255) printf '%s' "$BODY" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1" 2>/dev/null || echo BROKEN ;;
	*) echo BROKEN ;;
	esac
}

# expect_api NAME CODE [FIELD [ERROR_CODE]]: the status, and for errors the field and code.
expect_api() {
	local name=$1 want=$2 field=${3-} ecode=${4-}
	if [ "$CODE" != "$want" ]; then
		not_ok "$name (HTTP $CODE, expected $want: $(printf '%s' "$BODY" | head -c 300))"
		return
	fi
	if [ -n "$field" ] && [ "$(bj 'd["error"]["field"]')" != "$field" ]; then
		not_ok "$name (error.field $(bj 'd["error"]["field"]'), expected $field: $(printf '%s' "$BODY" | head -c 300))"
		return
	fi
	if [ -n "$ecode" ] && [ "$(bj 'd["error"]["code"]')" != "$ecode" ]; then
		not_ok "$name (error.code $(bj 'd["error"]["code"]'), expected $ecode)"
		return
	fi
	ok "$name"
}

# sv_create NAME [EXTRA JSON FIELDS]: POST /v1/sandboxes with the test's policy; bails out on
# failure (what follows depends on it).
sv_create() {
	local extra=${2:+, $2}
	apij POST /v1/sandboxes "{\"name\": \"$1\", \"policy\": $SV_POLICY$extra}"
	if [ "$CODE" != 201 ]; then
		not_ok "create $1 over the API (HTTP $CODE: $(printf '%s' "$BODY" | head -c 300)); the checks after it were not run"
		exit 0
	fi
}

# sv_done: the count of responses checked against the OpenAPI document.
sv_done() {
	if [ "$SV_OA_OK" -gt 0 ]; then
		ok "$SV_OA_OK responses matched docs/openapi.json"
	fi
}
