/* .git/commondir points git at another directory for its config and hooks, so a sandbox that
 * writes one (and fills the directory it names) gets code run by the host's next git command
 * in the workspace. It cannot be made read-only in advance: it does not exist, and creating a
 * placeholder would change what the host's git reads. Nor can creation be refused without
 * refusing every new file in .git, which git itself needs (index.lock, HEAD.lock, ...).
 *
 * So the supervisor, outside the sandbox, watches the git directory with inotify and removes
 * the file the moment it appears, and once more when the sandbox is gone. What remains is
 * the window between the sandbox's write and the removal (the supervisor's wake-up latency),
 * during which a concurrent host git could read it; docs/threat-model.md says so.
 */
#include "supervisor/gitwatch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"

static void remove_commondir(struct aj_gitwatch *w)
{
	struct stat st;
	int flags;

	if (fstatat(w->dirfd, "commondir", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	/* A directory named commondir makes git fail rather than redirect; removed anyway
	 * when empty, to leave the repository as it was. */
	flags = S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0;
	if (unlinkat(w->dirfd, "commondir", flags) < 0)
		return;
	if (w->removed++ == 0)
		aj_warn(w->warn,
			"removed %s/commondir created inside the sandbox (it would redirect git on "
			"the host)",
			w->git_dir);
	if (w->events)
		aj_events_emit(w->events, "protection",
			       json_pack("{s:s, s:s}", "removed", "commondir", "git_dir",
					 w->git_dir));
}

static void on_inotify(evutil_socket_t fd, short what, void *arg)
{
	struct aj_gitwatch *w = arg;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	(void)what;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)p;
			if ((e->mask & IN_Q_OVERFLOW) ||
			    (e->len && strcmp(e->name, "commondir") == 0))
				remove_commondir(w);
			p += sizeof *e + e->len;
		}
	}
}

int aj_gitwatch_open(struct aj_gitwatch *w, const char *git_dir, struct aj_events *events,
		     const struct aj_warn *warn, struct aj_err *err)
{
	w->git_dir = git_dir;
	w->events = events;
	w->warn = warn;
	w->dirfd = open(git_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (w->dirfd < 0)
		return aj_err_sys(err, AJ_LAYER_POLICY, "open \"%s\" to watch it", git_dir);
	w->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->ifd < 0)
		return aj_err_sys(err, AJ_LAYER_POLICY, "inotify_init1 to watch \"%s\"", git_dir);
	/* IN_MOVED_TO: made elsewhere and renamed in. The watch is on the directory the
	 * sandbox sees too: .git is bound onto itself, so this inode stays the one in use. */
	if (inotify_add_watch(w->ifd, git_dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR |
						       IN_DONT_FOLLOW) < 0)
		return aj_err_sys(err, AJ_LAYER_POLICY, "inotify_add_watch \"%s\"", git_dir);
	return 0;
}

int aj_gitwatch_attach(struct aj_gitwatch *w, struct event_base *base, struct aj_err *err)
{
	if (w->ifd < 0)
		return 0;
	w->ev = event_new(base, w->ifd, EV_READ | EV_PERSIST, on_inotify, w);
	if (!w->ev || event_add(w->ev, NULL) < 0)
		return aj_err_set(err, AJ_LAYER_INTERNAL, ENOMEM, "watch \"%s\"", w->git_dir);
	/* Anything made between the launch and now is already queued on ifd. */
	on_inotify(w->ifd, EV_READ, w);
	return 0;
}

void aj_gitwatch_unhook(struct aj_gitwatch *w)
{
	if (w->ev)
		event_free(w->ev);
	w->ev = NULL;
	aj_close_fd(&w->ifd);
}

void aj_gitwatch_finish(struct aj_gitwatch *w)
{
	aj_gitwatch_unhook(w);
	if (w->dirfd >= 0) {
		remove_commondir(w);
		aj_close_fd(&w->dirfd);
	}
}
