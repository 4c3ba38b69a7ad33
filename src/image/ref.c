#include "image/ref.h"

#include <stdio.h>
#include <string.h>

/* A repository path component: [a-z0-9]+ joined by one '.', one or two '_', or '-'s. */
static bool component_ok(const char *s, size_t n)
{
	size_t i = 0;

	if (!n)
		return false;
	while (i < n) {
		size_t run = 0;
		while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
			i++, run++;
		if (!run)
			return false;
		if (i == n)
			return true;
		if (s[i] == '.') {
			i++;
		} else if (s[i] == '_') {
			i += (i + 1 < n && s[i + 1] == '_') ? 2 : 1;
		} else if (s[i] == '-') {
			while (i < n && s[i] == '-')
				i++;
		} else {
			return false;
		}
		if (i == n)
			return false; /* a separator must be followed by more */
	}
	return true;
}

static bool tag_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 128)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '_';
		if (!word && (i == 0 || (c != '.' && c != '-')))
			return false;
	}
	return true;
}

/* host[:port]: letters, digits, '-', '.', or a bracketed IPv6 address; the port digits. */
static bool registry_ok(const char *s, size_t n)
{
	size_t i = 0;

	if (!n)
		return false;
	if (s[0] == '[') {
		while (i < n && s[i] != ']')
			i++;
		if (i == n)
			return false;
		i++;
	} else {
		while (i < n && s[i] != ':') {
			char c = s[i];
			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '-' || c == '.'))
				return false;
			i++;
		}
		if (i == 0)
			return false;
	}
	if (i == n)
		return true;
	if (s[i] != ':' || i + 1 == n || n - i - 1 > 5)
		return false;
	for (i++; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static bool is_registry(const char *s, size_t n)
{
	return memchr(s, '.', n) || memchr(s, ':', n) || memchr(s, '[', n) ||
	       (n == 9 && !memcmp(s, "localhost", 9));
}

static int repo_parse(const char *name, struct aj_image_ref *r, char *why, size_t why_len)
{
	const char *slash = strchr(name, '/'), *p;

	if (slash && is_registry(name, (size_t)(slash - name))) {
		if (!registry_ok(name, (size_t)(slash - name)) ||
		    (size_t)(slash - name) >= sizeof r->registry) {
			snprintf(why, why_len, "\"%.*s\" is not a registry host[:port]",
				 (int)(slash - name), name);
			return -1;
		}
		snprintf(r->registry, sizeof r->registry, "%.*s", (int)(slash - name), name);
		name = slash + 1;
	} else {
		snprintf(r->registry, sizeof r->registry, AJ_REF_DOCKER_HUB);
	}
	if (strlen(name) + 9 >= sizeof r->repo) {
		snprintf(why, why_len, "the repository name is too long");
		return -1;
	}
	for (p = name;;) {
		const char *end = strchr(p, '/');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		if (!component_ok(p, n)) {
			snprintf(why, why_len,
				 "\"%.*s\" is not a repository name component (lower-case letters "
				 "and digits, joined by '.', '_', '__' or '-')",
				 (int)n, p);
			return -1;
		}
		if (!end)
			break;
		p = end + 1;
	}
	if (!strcmp(r->registry, AJ_REF_DOCKER_HUB) && !strchr(name, '/'))
		snprintf(r->repo, sizeof r->repo, "library/%s", name);
	else
		snprintf(r->repo, sizeof r->repo, "%s", name);
	return 0;
}

int aj_image_ref_parse(const char *s, struct aj_image_ref *r, char *why, size_t why_len)
{
	char name[512];
	const char *at = strchr(s, '@'), *colon, *slash;
	size_t n;

	memset(r, 0, sizeof *r);
	if (!*s) {
		snprintf(why, why_len, "an empty image reference");
		return -1;
	}
	if (at) {
		if (!aj_digest_valid(at + 1)) {
			snprintf(why, why_len, "\"%s\" is not a sha256 digest", at + 1);
			return -1;
		}
		snprintf(r->digest, sizeof r->digest, "%s", at + 1);
	}
	n = at ? (size_t)(at - s) : strlen(s);
	if (n >= sizeof name) {
		snprintf(why, why_len, "the reference is too long");
		return -1;
	}
	memcpy(name, s, n);
	name[n] = '\0';
	/* A tag is after the last ':' that follows the last '/' (a registry port has a '/'
	 * after it). */
	slash = strrchr(name, '/');
	colon = strrchr(slash ? slash : name, ':');
	if (colon) {
		if (!tag_ok(colon + 1)) {
			snprintf(
				why, why_len,
				"\"%s\" is not a tag (letters, digits, '_', '.', '-'; at most 128)",
				colon + 1);
			return -1;
		}
		snprintf(r->tag, sizeof r->tag, "%s", colon + 1);
		name[colon - name] = '\0';
	} else if (!r->digest[0]) {
		snprintf(r->tag, sizeof r->tag, "latest");
	}
	return repo_parse(name, r, why, why_len);
}

void aj_image_ref_format(const struct aj_image_ref *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s%s%s%s%s", r->registry, r->repo, r->tag[0] ? ":" : "", r->tag,
		 r->digest[0] ? "@" : "", r->digest);
}

void aj_image_ref_short(const struct aj_image_ref *r, char *buf, size_t len)
{
	const char *repo = r->repo;

	if (strcmp(r->registry, AJ_REF_DOCKER_HUB) != 0) {
		aj_image_ref_format(r, buf, len);
		return;
	}
	if (!strncmp(repo, "library/", 8))
		repo += 8;
	snprintf(buf, len, "%s%s%s%s%s", repo, r->tag[0] ? ":" : "", r->tag,
		 r->digest[0] ? "@" : "", r->digest);
}
