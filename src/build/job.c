#include "build/job.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "build/template.h"
#include "common/alloc.h"
#include "common/cleanup.h"
#include "common/tree.h"
#include "common/util.h"
#include "image/digest.h"

#define DOC_MAX (16u << 20)
#define LOG_MAX (64u << 20)
/* A build started and not heard of since: its process never came up. */
#define START_GRACE_MS 30000

bool aj_job_id_ok(const char *id)
{
	if (!id || strlen(id) != AJ_JOB_ID_LEN)
		return false;
	for (size_t i = 0; i < AJ_JOB_ID_LEN; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? id[i] != '-' : !strchr("0123456789abcdef", id[i]))
			return false;
	}
	return true;
}

void aj_job_dir(const char *state, const char *id, char *buf, size_t len)
{
	snprintf(buf, len, "%s/builds/%s", state, id);
}

/* An owner's directory of uploads: the first 32 hex digits of the owner's sha256. */
static void files_dir(const char *state, const char *owner, char *buf, size_t len)
{
	char d[AJ_DIGEST_SIZE];

	aj_digest_of(owner, strlen(owner), d);
	snprintf(buf, len, "%s/builds/files/%.32s", state, d + strlen("sha256:"));
}

static int write_json(const char *dir, const char *name, json_t *doc, bool exclusive,
		      struct aj_err *err)
{
	char tmp[4200], path[4200];
	_cleanup_free_ char *text = json_dumps(doc, JSON_COMPACT);
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	snprintf(tmp, sizeof tmp, "%s/.%s.tmp", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (!text || fd < 0 || aj_write_all(fd, text, strlen(text)) < 0 || fsync(fd) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "write \"%s\"", tmp);
	if (exclusive ? link(tmp, path) < 0 : rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return aj_err_sys(err, AJ_LAYER_STATE, "write \"%s\"", path);
	}
	if (exclusive)
		unlink(tmp);
	return 0;
}

static json_t *read_json(const char *dir, const char *name)
{
	char path[4200];
	_cleanup_free_ char *text = NULL;
	size_t len;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	text = aj_read_file(path, DOC_MAX, &len);
	return text ? json_loadb(text, len, 0, NULL) : NULL;
}

json_t *aj_job_read(const char *state, const char *id, const char *name)
{
	char dir[4200];

	aj_job_dir(state, id, dir, sizeof dir);
	return read_json(dir, name);
}

int aj_job_new(const char *state, const char *owner, json_t *request, char *id,
	       struct aj_err *err)
{
	char hex[33], dir[4200];

	aj_random_hex(hex, 16);
	hex[12] = '4'; /* a version 4 UUID, variant 1 */
	hex[16] = "89ab"[hex[16] % 4];
	snprintf(id, AJ_JOB_ID_LEN + 1, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
		 hex + 16, hex + 20);
	aj_job_dir(state, id, dir, sizeof dir);
	if (aj_mkdir_p(dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", dir);
	json_object_set_new(request, "owner", json_string(owner));
	json_object_set_new(request, "created_ms", json_integer((json_int_t)aj_now_realtime_ms()));
	return write_json(dir, "request.json", request, true, err);
}

int aj_job_request(const char *state, const char *id, const char *owner, json_t **out,
		   struct aj_err *err)
{
	char dir[4200];
	json_t *r;

	*out = NULL;
	if (!aj_job_id_ok(id))
		goto none;
	aj_job_dir(state, id, dir, sizeof dir);
	r = read_json(dir, "request.json");
	if (r && json_is_string(json_object_get(r, "owner")) &&
	    !strcmp(json_string_value(json_object_get(r, "owner")), owner)) {
		*out = r;
		return 0;
	}
	json_decref(r);
none:
	aj_err_set(err, AJ_LAYER_API, ENOENT, "no build \"%.64s\"", id);
	return aj_err_class(err, AJ_ERRC_NOT_FOUND);
}

/* The build's process, detached: its own session, a second fork so that the daemon does not
 * reap it, signals as they default, stdio on /dev/null and stderr on runner.log. */
static void exec_runner(const char *state, const char *id, int log_fd)
{
	extern char **environ;
	char *argv[] = {"agentjail", "__build-job", "--state-dir", (char *)state, (char *)id, NULL};
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigset_t none;
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	pid_t pid;

	setsid();
	pid = _Fork();
	if (pid != 0)
		_exit(pid < 0 ? 127 : 0);
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 || dup2(log_fd, 2) < 0)
		_exit(127);
	close_range(3, ~0U, 0);
	execve("/proc/self/exe", argv, environ);
	_exit(127);
}

static int start_locked(const char *state, const char *id, json_t *tpl, struct aj_err *err)
{
	char dir[4200], log[4300];
	_cleanup_close_ int log_fd = -1;
	pid_t pid;

	aj_job_dir(state, id, dir, sizeof dir);
	if (write_json(dir, "template.json", tpl, true, err) < 0) {
		if (err->errnum == EEXIST)
			aj_err_class(err, AJ_ERRC_EXISTS);
		return -1;
	}
	snprintf(log, sizeof log, "%s/runner.log", dir);
	log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (log_fd < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "open \"%s\"", log);
	pid = fork();
	if (pid == 0)
		exec_runner(state, id, log_fd);
	if (pid < 0)
		return aj_err_sys(err, AJ_LAYER_PROCESS, "fork the build's process");
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}

int aj_job_start(const char *state, const char *id, const char *owner, json_t *tpl,
		 struct aj_err *err)
{
	char path[4200];
	_cleanup_close_ int lock = -1;

	snprintf(path, sizeof path, "%s/builds/lock", state);
	lock = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0 || flock(lock, LOCK_EX) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "lock \"%s\"", path);
	if (aj_job_running(state, owner) >= AJ_JOB_MAX_RUNNING)
		return aj_err_set(err, AJ_LAYER_STATE, EAGAIN,
				  "%d builds of yours are running; start this one when one has "
				  "ended", AJ_JOB_MAX_RUNNING);
	return start_locked(state, id, tpl, err);
}

/* Whether the build's process holds the lock. */
static bool running(const char *dir)
{
	char path[4200];
	_cleanup_close_ int fd = -1;

	snprintf(path, sizeof path, "%s/lock", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	if (flock(fd, LOCK_SH | LOCK_NB) == 0)
		return false;
	return errno == EWOULDBLOCK;
}

unsigned aj_job_running(const char *state, const char *owner)
{
	char dir[4200];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	unsigned n = 0;

	snprintf(dir, sizeof dir, "%s/builds", state);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		_cleanup_json_ json_t *req = NULL, *st = NULL;

		if (!aj_job_id_ok(de->d_name))
			continue;
		req = aj_job_read(state, de->d_name, "request.json");
		if (!req || strcmp(json_string_value(json_object_get(req, "owner")) ?: "", owner))
			continue;
		st = aj_job_status(state, de->d_name);
		n += !strcmp(json_string_value(json_object_get(st, "status")) ?: "", "building");
	}
	return n;
}

json_t *aj_job_status(const char *state, const char *id)
{
	char dir[4200], path[4300];
	json_t *st;
	struct stat sb;
	const char *s;

	aj_job_dir(state, id, dir, sizeof dir);
	st = read_json(dir, "status.json");
	s = json_string_value(json_object_get(st, "status"));
	if (s && (!strcmp(s, "ready") || !strcmp(s, "error")))
		return st;
	snprintf(path, sizeof path, "%s/template.json", dir);
	if (!st && stat(path, &sb) < 0)
		return json_pack("{s:s}", "status", "waiting");
	if (running(dir))
		return st ? st : json_pack("{s:s}", "status", "building");
	/* Not running: not yet (just started), or no more. */
	if (!st && (int64_t)aj_now_realtime_ms() - (int64_t)sb.st_mtime * 1000 < START_GRACE_MS)
		return json_pack("{s:s}", "status", "building");
	json_decref(st);
	return json_pack("{s:s, s:s}", "status", "error", "message",
			 "the build's process ended without a result (killed, or the host "
			 "restarted); see runner.log in its directory");
}

json_t *aj_job_logs(const char *state, const char *id, size_t offset, size_t max)
{
	char dir[4200], path[4300];
	_cleanup_free_ char *text = NULL;
	json_t *out = json_array();
	size_t len, line = 0;
	char *p, *nl;

	aj_job_dir(state, id, dir, sizeof dir);
	snprintf(path, sizeof path, "%s/log.jsonl", dir);
	text = aj_read_file(path, LOG_MAX, &len);
	for (p = text; p && *p && json_array_size(out) < max; p = nl + 1) {
		nl = strchr(p, '\n');
		if (!nl)
			break; /* a line being written */
		if (line++ < offset)
			continue;
		json_t *e = json_loadb(p, (size_t)(nl - p), 0, NULL);
		json_array_append_new(out, e ? e : json_pack("{s:s, s:s, s:s}", "timestamp", "",
							     "level", "info", "message", ""));
	}
	return out;
}

bool aj_job_file_present(const char *state, const char *owner, const char *hash)
{
	char path[4300];
	struct stat st;

	if (!aj_template_hash_ok(hash))
		return false;
	aj_job_file_path(state, owner, hash, path, sizeof path);
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

void aj_job_file_path(const char *state, const char *owner, const char *hash, char *buf,
		      size_t len)
{
	char dir[4200];

	files_dir(state, owner, dir, sizeof dir);
	snprintf(buf, len, "%s/%s.tar", dir, hash);
}

int aj_job_set_status(const char *state, const char *id, json_t *status, struct aj_err *err)
{
	char dir[4200];

	aj_job_dir(state, id, dir, sizeof dir);
	return write_json(dir, "status.json", status, false, err);
}

void aj_job_log(int fd, const char *level, const char *msg, size_t len)
{
	char ts[40];
	json_t *e;
	char *line;

	aj_format_time_ms(aj_now_realtime_ms(), ts, sizeof ts);
	e = json_pack("{s:s, s:s, s:s%}", "timestamp", ts, "level", level, "message", msg, len);
	if (!e) { /* not UTF-8: the bytes that are not ASCII shown as '?' */
		char *clean = aj_xstrndup(msg, len);
		for (char *c = clean; *c; c++)
			if ((unsigned char)*c >= 0x80)
				*c = '?';
		e = json_pack("{s:s, s:s, s:s}", "timestamp", ts, "level", level, "message", clean);
		free(clean);
	}
	line = e ? json_dumps(e, JSON_COMPACT) : NULL;
	if (line) {
		size_t n = strlen(line);
		line[n] = '\n'; /* one write: a reader sees whole lines */
		(void)!aj_write_all(fd, line, n + 1);
		line[n] = '\0';
	}
	free(line);
	json_decref(e);
}

int aj_job_file_put(const char *state, const char *owner, const char *hash, const void *data,
		    size_t len, struct aj_err *err)
{
	char dir[4200], path[4300], tmp[4300], rnd[17];
	_cleanup_close_ int fd = -1;

	if (!aj_template_hash_ok(hash))
		return aj_err_set(err, AJ_LAYER_USAGE, EINVAL, "\"%.80s\" is not a files hash", hash);
	files_dir(state, owner, dir, sizeof dir);
	aj_random_hex(rnd, 8);
	snprintf(path, sizeof path, "%s/%s.tar", dir, hash);
	snprintf(tmp, sizeof tmp, "%s/.tmp-%s", dir, rnd);
	if (aj_mkdir_p(dir, 0700) < 0)
		return aj_err_sys(err, AJ_LAYER_STATE, "create \"%s\"", dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || aj_write_all(fd, data, len) < 0 || fsync(fd) < 0 || rename(tmp, path) < 0) {
		int e = errno;
		unlink(tmp);
		errno = e;
		return aj_err_sys(err, AJ_LAYER_STATE, "store the upload \"%s\"", path);
	}
	return 0;
}

/* ---- gc ---------------------------------------------------------------------------------------- */

static bool older(int dirfd, const char *name, time_t cutoff)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_mtime < cutoff;
}

static unsigned gc_uploads(const char *state, time_t cutoff)
{
	char dir[4200];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	unsigned n = 0;

	snprintf(dir, sizeof dir, "%s/builds/files", state);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		_cleanup_closedir_ DIR *od = NULL;
		struct dirent *fe;
		int fd;

		if (de->d_name[0] == '.' || strlen(de->d_name) != 32)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		od = aj_fdopendir(fd);
		while (od && (fe = readdir(od)))
			if (fe->d_name[0] != '.' || !strncmp(fe->d_name, ".tmp-", 5))
				if (fe->d_type == DT_REG && older(dirfd(od), fe->d_name, cutoff) &&
				    unlinkat(dirfd(od), fe->d_name, 0) == 0)
					n++;
	}
	return n;
}

unsigned aj_job_gc(const char *state)
{
	time_t cutoff = (time_t)(aj_now_realtime_ms() / 1000) - AJ_JOB_KEEP_S;
	char dir[4200];
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	unsigned n = 0;

	snprintf(dir, sizeof dir, "%s/builds", state);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		char sub[4300];
		_cleanup_json_ json_t *st = NULL;
		const char *s;

		if (!aj_job_id_ok(de->d_name))
			continue;
		snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name);
		st = aj_job_status(state, de->d_name);
		s = json_string_value(json_object_get(st, "status")) ?: "";
		if (!strcmp(s, "building"))
			continue;
		/* the newest of what it wrote */
		if (!older(dirfd(d), de->d_name, cutoff))
			continue;
		{
			char f[4400];
			struct stat sb;
			bool recent = false;
			static const char *const files[] = {"request.json", "template.json",
							    "status.json", "log.jsonl"};

			for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
				snprintf(f, sizeof f, "%s/%s", sub, files[i]);
				recent = recent || (stat(f, &sb) == 0 && sb.st_mtime >= cutoff);
			}
			if (recent)
				continue;
		}
		if (aj_tree_remove_at(AT_FDCWD, sub, NULL) == 0)
			n++;
	}
	return n + gc_uploads(state, cutoff);
}
