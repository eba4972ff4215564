/*
 * reporter/model/runinfo.c: git commit and branch, run UUID, labels (runinfo.h).
 */
#define _GNU_SOURCE
#include "runinfo.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Commit and branch variables of the CIs we know, first found wins. */
static const struct {
	const char *commit, *branch;
} ci_vars[] = {
	{ "GITHUB_SHA", "GITHUB_HEAD_REF" }, /* a pull request's branch */
	{ "GITHUB_SHA", "GITHUB_REF_NAME" },
	{ "CI_COMMIT_SHA", "CI_COMMIT_REF_NAME" },  /* GitLab */
	{ "BUILDKITE_COMMIT", "BUILDKITE_BRANCH" },
	{ "CIRCLE_SHA1", "CIRCLE_BRANCH" },
	{ "TRAVIS_COMMIT", "TRAVIS_BRANCH" },
	{ "BITBUCKET_COMMIT", "BITBUCKET_BRANCH" },
	{ "GIT_COMMIT", "GIT_BRANCH" },             /* Jenkins */
};

static const char *nonempty_env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* First line of `git args...` in the working directory, or false. Its
 * stderr goes to /dev/null (outside a repository git complains). */
static bool git_line(const char *const *args, char *out, size_t len)
{
	posix_spawn_file_actions_t fa;
	int pipefd[2], status;
	pid_t pid;
	ssize_t n = 0, got;

	if (pipe2(pipefd, O_CLOEXEC))
		return false;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
	posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (posix_spawnp(&pid, "git", &fa, NULL, (char *const *)args, environ))
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	close(pipefd[1]);
	while (pid > 0 && (size_t)n + 1 < len &&
	       (got = read(pipefd[0], out + n, len - 1 - (size_t)n)) != 0) {
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			break;
		n += got;
	}
	close(pipefd[0]);
	if (pid <= 0)
		return false;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out[n] = 0;
	out[strcspn(out, "\n")] = 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && out[0];
}

void hl_runinfo_host(struct hl_report *r)
{
	char cwd[4096], host[256];

	if (getcwd(cwd, sizeof(cwd)))
		r->cwd = hl_bump_strdup(&r->arena, cwd);
	if (gethostname(host, sizeof(host)) == 0) {
		host[sizeof(host) - 1] = 0;
		r->hostname = hl_bump_strdup(&r->arena, host);
	}
}

void hl_runinfo_git(struct hl_report *r)
{
	static const char *const head[] = { "git", "rev-parse", "HEAD", NULL };
	static const char *const branch[] = { "git", "rev-parse", "--abbrev-ref", "HEAD", NULL };
	const char *off = getenv("HEAPLEDGER_GIT");
	char line[512];

	for (size_t i = 0; i < HL_ARRAY_SIZE(ci_vars); i++) {
		const char *c = nonempty_env(ci_vars[i].commit);
		const char *b = nonempty_env(ci_vars[i].branch);

		if (c && b) {
			r->git_commit = hl_bump_strdup(&r->arena, c);
			r->git_branch = hl_bump_strdup(&r->arena, b);
			return;
		}
	}
	if (off && !strcmp(off, "0"))
		return;
	if (!git_line(head, line, sizeof(line)))
		return;
	r->git_commit = hl_bump_strdup(&r->arena, line);
	/* A detached HEAD has no branch: git prints "HEAD". */
	if (git_line(branch, line, sizeof(line)) && strcmp(line, "HEAD") != 0)
		r->git_branch = hl_bump_strdup(&r->arena, line);
}

void hl_runinfo_uuid(struct hl_report *r)
{
	uint8_t b[16];
	char text[40];

	if (getrandom(b, sizeof(b), 0) != sizeof(b)) {
		uint64_t t = hl_now_realtime_ns() ^ (uint64_t)getpid() << 40;

		memcpy(b, &t, 8);
		t = hl_now_monotonic_ns();
		memcpy(b + 8, &t, 8);
	}
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(text, sizeof(text),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
	r->uuid = hl_bump_strdup(&r->arena, text);
}

void hl_runinfo_test_name(struct hl_report *r)
{
	const char *name = getenv(HL_ENV_TEST_NAME);
	char *label;
	size_t len;

	if (!name || !*name)
		return;
	for (size_t i = 0; i < r->nlabels; i++)
		if (!strcmp(r->label_keys[i], "test"))
			return;
	len = strlen("test=") + strlen(name) + 1;
	label = hl_bump_alloc(&r->arena, len);
	snprintf(label, len, "test=%s", name);
	hl_runinfo_add_label(r, label);
}

int hl_runinfo_add_label(struct hl_report *r, const char *key_value)
{
	const char *eq = strchr(key_value, '=');
	const char **keys, **values;

	if (!eq || eq == key_value)
		return -EINVAL;
	keys = hl_bump_alloc(&r->arena, (r->nlabels + 1) * sizeof(*keys));
	values = hl_bump_alloc(&r->arena, (r->nlabels + 1) * sizeof(*values));
	for (size_t i = 0; i < r->nlabels; i++) {
		keys[i] = r->label_keys[i];
		values[i] = r->label_values[i];
	}
	keys[r->nlabels] = hl_bump_strndup(&r->arena, key_value, (size_t)(eq - key_value));
	values[r->nlabels] = hl_bump_strdup(&r->arena, eq + 1);
	/* A key given twice keeps its last value (run_labels' key is unique). */
	for (size_t i = 0; i < r->nlabels; i++) {
		if (!strcmp(keys[i], keys[r->nlabels])) {
			values[i] = values[r->nlabels];
			r->label_keys = keys;
			r->label_values = values;
			return 0;
		}
	}
	r->label_keys = keys;
	r->label_values = values;
	r->nlabels++;
	return 0;
}

const char *hl_runinfo_label_arg(const char *key_value, void *report)
{
	return hl_runinfo_add_label(report, key_value) ? "wants KEY=VALUE" : NULL;
}
