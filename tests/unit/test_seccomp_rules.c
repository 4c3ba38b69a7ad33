/* The seccomp rule file format (data/seccomp/default.rules): parsing, line-numbered errors,
 * relaxable groups, that the profile compiled at run time is the one built in, and that the
 * built-in program decides every call as the rules say (whatever shape libseccomp gave it). */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "policy/plan.h"
#include "rules/seccomp.h"
#include "unit.h"

static const char good[] =
	"# a comment\n"
	"\n"
	"relaxable ptrace\n"
	"ptrace ptrace EPERM -- debugging other processes\n"
	"  namespaces unshare EPERM a0&0x10000000==0x10000000 -- CLONE_NEWUSER\n"
	"tty ioctl EPERM a1&0xffffffff==0x5412 -- TIOCSTI pushes input into a terminal\n"
	"socket socket EAFNOSUPPORT a0==16 -- netlink\n"
	"misc kcmp ENOSYS a0!=1 a1>2 a2<=3 a3>=4 -- four conditions\n";

static void parses_good_text(void)
{
	struct aj_sc_profile p;
	struct aj_err err;
	int relaxable = -1;

	CHECK(aj_seccomp_parse(good, &p, &err) == 0, "a well-formed rules text parses");
	CHECK(p.n == 5, "five rules (comments, blank lines and directives are not rules)");
	if (p.n != 5) {
		aj_seccomp_profile_free(&p);
		return;
	}
	CHECK(p.n_relaxable == 1 && strcmp(p.relaxable[0], "ptrace") == 0,
	      "the relaxable directive is recorded");
	CHECK(strcmp(p.rules[0].group, "ptrace") == 0 && strcmp(p.rules[0].syscall, "ptrace") == 0 &&
		      p.rules[0].errnum == EPERM && p.rules[0].n_cond == 0 && p.rules[0].line == 4,
	      "rule without conditions: group, syscall, errno, line");
	CHECK_STR(p.rules[0].reason, "debugging other processes", "the reason is kept");
	CHECK(p.rules[1].line == 5 && p.rules[1].n_cond == 1 && p.rules[1].cond[0].arg == 0 &&
		      p.rules[1].cond[0].op == AJ_SC_MASKED_EQ &&
		      p.rules[1].cond[0].mask == 0x10000000 && p.rules[1].cond[0].value == 0x10000000,
	      "leading blanks are skipped; aN&MASK==V is a masked equality");
	CHECK(p.rules[2].cond[0].arg == 1 && p.rules[2].cond[0].mask == 0xffffffff &&
		      p.rules[2].cond[0].value == 0x5412,
	      "mask and value in hex on argument 1");
	CHECK(p.rules[3].errnum == EAFNOSUPPORT && p.rules[3].cond[0].op == AJ_SC_EQ &&
		      p.rules[3].cond[0].value == 16 && p.rules[3].cond[0].mask == UINT64_MAX,
	      "aN==V is a plain equality");
	CHECK(p.rules[4].n_cond == 4 && p.rules[4].cond[0].op == AJ_SC_NE &&
		      p.rules[4].cond[1].op == AJ_SC_GT && p.rules[4].cond[2].op == AJ_SC_LE &&
		      p.rules[4].cond[3].op == AJ_SC_GE && p.rules[4].errnum == ENOSYS,
	      "!=, >, <= and >= conditions");
	CHECK(aj_seccomp_group_known(&p, "ptrace", &relaxable) && relaxable == 1,
	      "ptrace is a known, relaxable group");
	CHECK(aj_seccomp_group_known(&p, "namespaces", &relaxable) && relaxable == 0,
	      "namespaces is known and not relaxable");
	CHECK(!aj_seccomp_group_known(&p, "nothing", &relaxable) && relaxable == 0,
	      "an unknown group is reported as unknown");
	aj_seccomp_profile_free(&p);
	CHECK(p.rules == NULL && p.n == 0, "free resets the profile");
}

/* The text must be refused with an error naming `line` and containing `expect`. */
static void bad(const char *text, int line, const char *expect)
{
	struct aj_sc_profile p;
	struct aj_err err;
	char want[48], shown[64];

	/* one TAP line per check: show the text with its newlines as '|' */
	snprintf(shown, sizeof shown, "%s", text);
	for (char *c = shown; *c; c++)
		if (*c == '\n')
			*c = '|';
	aj_err_clear(&err);
	CHECK(aj_seccomp_parse(text, &p, &err) < 0 && err.layer == AJ_LAYER_SECCOMP,
	      "refused: %s", shown);
	snprintf(want, sizeof want, "rules line %d", line);
	CHECK_CONTAINS(err.msg, want, "the error names line %d", line);
	CHECK_CONTAINS(err.msg, expect, "the error says: %s", expect);
	CHECK(p.rules == NULL && p.n == 0, "nothing is left allocated after an error");
}

static void rejects_bad_lines(void)
{
	bad("g unshare EPERM\n", 1, "every rule needs a reason");
	bad("# c\n\ng unshare EPERM --no-space-reason\n", 3, "every rule needs a reason");
	bad("g unshare EFOO -- r\n", 1, "cannot parse \"EFOO\"");
	bad("ok a EPERM -- r\ng unshare -- r\n", 2, "expected GROUP SYSCALL ERRNO");
	bad("g unshare EPERM a6==1 -- r\n", 1, "cannot parse \"a6==1\"");
	bad("g unshare EPERM b0==1 -- r\n", 1, "cannot parse \"b0==1\"");
	bad("g unshare EPERM a0==x -- r\n", 1, "cannot parse \"a0==x\"");
	bad("g unshare EPERM a0== -- r\n", 1, "cannot parse \"a0==\"");
	bad("g unshare EPERM a0&0xff>1 -- r\n", 1, "cannot parse \"a0&0xff>1\"");
	bad("g unshare EPERM a0&==1 -- r\n", 1, "cannot parse \"a0&==1\"");
	bad("g unshare EPERM a0=1 -- r\n", 1, "cannot parse \"a0=1\"");
	bad("g unshare EPERM a0==1 a1==1 a2==1 a3==1 a4==1 -- r\n", 1, "cannot parse \"a4==1\"");
	bad("a-group-name-that-is-far-too-long-to-fit unshare EPERM -- r\n", 1, "cannot parse");
	bad("relaxable \n", 1, "bad relaxable line");
}

static void default_profile(void)
{
	struct aj_sc_profile p;
	struct aj_err err;
	struct sock_filter *insns = NULL;
	size_t n = 0, skipped = 0, no_reason = 0, unknown_relaxable = 0;
	int relaxable;

	CHECK(aj_seccomp_parse(aj_seccomp_default_rules, &p, &err) == 0,
	      "the embedded default profile parses");
	CHECK(p.n > 50, "the default profile has rules (%zu)", p.n);
	for (size_t i = 0; i < p.n; i++)
		if (strlen(p.rules[i].reason) < 8) {
			no_reason++;
			printf("#   line %d (%s) has no real reason\n", p.rules[i].line,
			       p.rules[i].syscall);
		}
	CHECK(no_reason == 0, "every default rule carries a reason");
	for (size_t i = 0; i < p.n_relaxable; i++)
		if (!aj_seccomp_group_known(&p, p.relaxable[i], &relaxable) || !relaxable)
			unknown_relaxable++;
	CHECK(p.n_relaxable > 0 && unknown_relaxable == 0,
	      "every relaxable group names a group that has rules");
	CHECK(aj_seccomp_group_known(&p, "namespaces", &relaxable) && !relaxable,
	      "namespaces is part of the boundary");
	CHECK(aj_seccomp_group_known(&p, "mount", &relaxable) && !relaxable,
	      "mount is part of the boundary");
	CHECK(aj_seccomp_group_known(&p, "ptrace", &relaxable) && relaxable,
	      "ptrace may be relaxed by a policy");

	CHECK(aj_seccomp_compile(&p, NULL, &insns, &n, &skipped, &err) == 0,
	      "the default profile compiles at run time");
	CHECK(n == aj_seccomp_default_len &&
		      memcmp(insns, aj_seccomp_default_bpf, n * sizeof *insns) == 0,
	      "run-time compilation gives the BPF built in at build time");
	CHECK(p.n - skipped == aj_seccomp_default_rules_count,
	      "the built-in rule count is the rules minus those this architecture lacks");
	free(insns);
	aj_seccomp_profile_free(&p);
}

static void relaxing(void)
{
	struct aj_sc_profile p;
	struct aj_err err;
	struct aj_strv relax = {NULL, 0, 0};
	struct sock_filter *a = NULL, *b = NULL;
	size_t na = 0, nb = 0, skipped = 0;

	aj_seccomp_parse(aj_seccomp_default_rules, &p, &err);
	aj_strv_push(&relax, "ptrace");
	CHECK(aj_seccomp_compile(&p, NULL, &a, &na, &skipped, &err) == 0 &&
		      aj_seccomp_compile(&p, &relax, &b, &nb, &skipped, &err) == 0,
	      "the profile compiles with and without the ptrace group");
	CHECK(nb < na, "lifting a group removes its rules from the filter (%zu < %zu)", nb, na);
	free(a);
	free(b);
	aj_strv_free(&relax);
	aj_seccomp_profile_free(&p);
}

/* The built-in filter, loaded in a child, refuses a new user namespace with EPERM (the rule
 * file says so) while ordinary syscalls still work. */
static void filter_behaves(void)
{
	struct sock_fprog prog = {(unsigned short)aj_seccomp_default_len,
				  (struct sock_filter *)aj_seccomp_default_bpf};
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			_exit(10);
		if (unshare(CLONE_NEWUSER) == 0 || errno != EPERM)
			_exit(11);
		if (getpid() <= 0)
			_exit(12);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "under the default filter unshare(CLONE_NEWUSER) fails with EPERM (child status "
	      "%d)",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status));
}

/* ---- the built-in program against the rules it was compiled from ---------------------------- */

/* Runs a classic BPF program the way the kernel runs a seccomp filter, for the instructions
 * libseccomp emits; *bad is set for any other instruction or a jump out of the program. */
static uint32_t bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d,
			bool *bad)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};

	for (size_t pc = 0; pc < n; pc++) {
		const struct sock_filter *i = &f[pc];
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (i->k % 4 || i->k + 4 > sizeof *d)
				goto bad;
			memcpy(&a, (const char *)d + i->k, 4);
			break;
		case BPF_LD | BPF_IMM: a = i->k; break;
		case BPF_LDX | BPF_IMM: x = i->k; break;
		case BPF_LD | BPF_MEM: a = mem[i->k % BPF_MEMWORDS]; break;
		case BPF_LDX | BPF_MEM: x = mem[i->k % BPF_MEMWORDS]; break;
		case BPF_ST: mem[i->k % BPF_MEMWORDS] = a; break;
		case BPF_STX: mem[i->k % BPF_MEMWORDS] = x; break;
		case BPF_ALU | BPF_AND | BPF_K: a &= i->k; break;
		case BPF_ALU | BPF_OR | BPF_K: a |= i->k; break;
		case BPF_MISC | BPF_TAX: x = a; break;
		case BPF_MISC | BPF_TXA: a = x; break;
		case BPF_JMP | BPF_JA: pc += i->k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += a == i->k ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += a > i->k ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += a >= i->k ? i->jt : i->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (a & i->k) ? i->jt : i->jf; break;
		case BPF_RET | BPF_K: return i->k;
		default: goto bad;
		}
	}
bad:
	*bad = true;
	return 0;
}

static int rule_nr(const char *name, int x86_64_nr)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR && x86_64_nr >= 0 && seccomp_arch_native() == SCMP_ARCH_X86_64)
		nr = x86_64_nr;
	return nr;
}

static bool cond_holds(const struct aj_sc_cond *c, const __u64 *args)
{
	uint64_t v = args[c->arg];

	switch (c->op) {
	case AJ_SC_EQ: return v == c->value;
	case AJ_SC_NE: return v != c->value;
	case AJ_SC_GT: return v > c->value;
	case AJ_SC_GE: return v >= c->value;
	case AJ_SC_LT: return v < c->value;
	case AJ_SC_LE: return v <= c->value;
	case AJ_SC_MASKED_EQ: return (v & c->mask) == c->value;
	}
	return false;
}

/* What the rules decide for nr with args: ALLOW when an exception matches or no rule does;
 * else the action of any matching rule is right (libseccomp picks one of them). */
static bool verdict_ok(const struct aj_sc_profile *p, int nr, const __u64 *args, uint32_t got)
{
	bool any = false;

	for (size_t i = 0; i < p->n_allows; i++) {
		const struct aj_sc_allow *al = &p->allows[i];
		if (rule_nr(al->syscall, -1) == nr &&
		    ((uint32_t)args[al->arg] & al->mask) == al->value)
			return got == SECCOMP_RET_ALLOW;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct aj_sc_rule *r = &p->rules[i];
		bool all = rule_nr(r->syscall, r->x86_64_nr) == nr;
		for (unsigned j = 0; all && j < r->n_cond; j++)
			all = cond_holds(&r->cond[j], args);
		if (!all)
			continue;
		if (got == (SECCOMP_RET_ERRNO | (uint32_t)r->errnum))
			return true;
		any = true;
	}
	return !any && got == SECCOMP_RET_ALLOW;
}

/* Every syscall number with no arguments, and every rule's syscall with each of its
 * arguments set to the values around each constant of the rules (the boundaries of every
 * condition); the native architecture only: any other gets KILL_PROCESS. */
static void program_matches_rules(void)
{
	struct aj_sc_profile p;
	struct aj_err err;
	struct seccomp_data d;
	uint64_t vals[1024];
	size_t nv = 0, cases = 0, wrong = 0;
	bool bad = false;
	int max_nr = 0;

	CHECK(aj_seccomp_parse(aj_seccomp_default_rules, &p, &err) == 0, "the rules parse");
	vals[nv++] = 0;
	vals[nv++] = ~(uint64_t)0;
	for (size_t i = 0; i < p.n; i++) {
		int nr = rule_nr(p.rules[i].syscall, p.rules[i].x86_64_nr);
		max_nr = nr > max_nr ? nr : max_nr;
		for (unsigned j = 0; j < p.rules[i].n_cond && nv + 6 <= AJ_ARRAY_SIZE(vals); j++) {
			const struct aj_sc_cond *c = &p.rules[i].cond[j];
			uint64_t around[] = {c->value, c->value + 1, c->value - 1, c->mask,
					     c->value | (1ULL << 32), ~c->value};
			for (size_t k = 0; k < AJ_ARRAY_SIZE(around); k++)
				vals[nv++] = around[k];
		}
	}
	memset(&d, 0, sizeof d);
	d.arch = SCMP_ARCH_X86_64 == seccomp_arch_native() ? AUDIT_ARCH_X86_64 : 0;
	for (int nr = 0; nr <= max_nr + 64 && d.arch; nr++) {
		uint32_t got;
		d.nr = nr;
		memset(d.args, 0, sizeof d.args);
		got = bpf_run(aj_seccomp_default_bpf, aj_seccomp_default_len, &d, &bad);
		cases++;
		wrong += !verdict_ok(&p, nr, d.args, got);
	}
	for (size_t i = 0; i < p.n && d.arch; i++) {
		d.nr = rule_nr(p.rules[i].syscall, p.rules[i].x86_64_nr);
		for (unsigned arg = 0; arg < 6; arg++)
			for (size_t v = 0; v < nv; v++) {
				uint32_t got;
				memset(d.args, 0, sizeof d.args);
				d.args[arg] = vals[v];
				got = bpf_run(aj_seccomp_default_bpf, aj_seccomp_default_len, &d, &bad);
				cases++;
				if (!verdict_ok(&p, d.nr, d.args, got) && wrong++ < 5)
					printf("#   syscall %d a%u=0x%llx: 0x%08x\n", d.nr, arg,
					       (unsigned long long)vals[v], got);
			}
	}
	if (d.arch) {
		CHECK(!bad && wrong == 0, "the built-in program decides %zu calls as the rules say "
					  "(%zu differ)",
		      cases, wrong);
		d.arch = AUDIT_ARCH_I386;
		d.nr = 20; /* i386 getpid */
		CHECK(bpf_run(aj_seccomp_default_bpf, aj_seccomp_default_len, &d, &bad) ==
				      SECCOMP_RET_KILL_PROCESS && !bad,
		      "a 32-bit call is killed");
	} else {
		printf("ok - the built-in program against the rules # SKIP not x86-64\n");
	}
	aj_seccomp_profile_free(&p);
}

int main(void)
{
	parses_good_text();
	rejects_bad_lines();
	default_profile();
	relaxing();
	filter_behaves();
	program_matches_rules();
	UNIT_EXIT();
}
