//go:build linux && cgo

// `sandpiper exec` starts its program before the Go runtime does: this
// constructor reads the code (from -c, or standard input to its end),
// finds the plan an earlier exec kept for this configuration and has the
// sandbox start the code from it
// (sandbox/local/prestart.c). When the result needs nothing but the
// program's output printed, that is all that happens: the runtime, and
// the packages of the bot and the terminal UI (about 50 ms of
// initialisation), never start. Otherwise (-v, -out, files written, a
// limit hit) the Go side takes the run over, or runs the program itself
// when the plan is not the one it makes (sandbox/local); it takes code
// read from standard input from sandpiper_exec_stdin. With a flag exec
// does not know, or -h, nothing happens here.
//
// The plan is kept in the user's cache directory, under a name made of
// everything the configuration is read from: the binary, the user and its
// capabilities, the environment's SANDPIPER_, VERCEL_ and PYENV_ variables
// and PATH, HOME and XDG_CACHE_HOME, the .env.local and .env files of the
// working directory, and the directory itself when the interpreter is
// named relative to it. A change to any of them looks for another plan.

#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

void sandpiper_prestart_run(const char *plan_path, const char *code, uint64_t code_len);
int sandpiper_prestart_finish(void);

// FNV-1a, 64 bits.
static void mix(uint64_t *h, const void *p, size_t n) {
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		*h ^= b[i];
		*h *= 1099511628211ULL;
	}
}

static void mix_stat(uint64_t *h, const char *path) {
	struct stat st;
	if (stat(path, &st) < 0) {
		mix(h, "-", 1);
		return;
	}
	int64_t v[] = {(int64_t)st.st_dev, (int64_t)st.st_ino, (int64_t)st.st_size, st.st_mtim.tv_sec,
		       st.st_mtim.tv_nsec};
	mix(h, v, sizeof v);
}

static int wanted(const char *kv) {
	return strncmp(kv, "SANDPIPER_", 10) == 0 || strncmp(kv, "VERCEL_", 7) == 0 || strncmp(kv, "PYENV_", 6) == 0 ||
	       strncmp(kv, "PATH=", 5) == 0 || strncmp(kv, "HOME=", 5) == 0 || strncmp(kv, "XDG_CACHE_HOME=", 15) == 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// is_bool reports whether s is a value Go's flag package takes for a
// boolean flag.
static int is_bool(const char *s) {
	static const char *ok[] = {"1", "0", "t", "f", "T", "F", "true", "false", "TRUE", "FALSE", "True", "False"};
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strcmp(s, ok[i]) == 0)
			return 1;
	return 0;
}

// exec_args reads exec's flags (argv, after "exec") as Go's flag package
// does, and reports whether they are plainly exec's (else the Go side
// says what is wrong); *code is the code given with -c (the last -c
// wins), or NULL, and *plain says whether -c is all there is (no -v, no
// -out), which asks for no more than the program's output.
static int exec_args(int argc, char **argv, const char **code, int *plain) {
	*plain = 1;
	*code = NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (a[0] != '-' || a[1] == '\0')
			return 0; // an argument: exec refuses it
		if (strcmp(a, "--") == 0)
			return i + 1 == argc;
		const char *name = a[1] == '-' ? a + 2 : a + 1;
		const char *eq = strchr(name, '=');
		size_t n = eq ? (size_t)(eq - name) : strlen(name);
		const char *value = eq ? eq + 1 : NULL;
		if (n == 1 && name[0] == 'v') {
			if (value && !is_bool(value))
				return 0;
			*plain = 0;
			continue;
		}
		int is_c = n == 1 && name[0] == 'c', is_out = n == 3 && strncmp(name, "out", 3) == 0;
		if (!is_c && !is_out)
			return 0; // -h, or a flag exec does not know
		if (!value) {
			if (i + 1 == argc)
				return 0;
			value = argv[++i];
		}
		if (is_c)
			*code = value;
		else
			*plain = 0;
	}
	return 1;
}

// The program exec reads from standard input without -c, read here when
// the constructor ran; exec's Go side takes it from sandpiper_exec_stdin.
static struct {
	int read; // 1: standard input was read to its end (or to err)
	int err;  // errno of a failed read
	char *code;
	size_t len;
} stdin_code;

static void read_stdin(void) {
	size_t cap = 0;
	stdin_code.read = 1;
	for (;;) {
		if (stdin_code.len == cap) {
			cap = cap ? 2 * cap : 4096;
			char *p = realloc(stdin_code.code, cap);
			if (p == NULL) {
				stdin_code.err = ENOMEM;
				return;
			}
			stdin_code.code = p;
		}
		ssize_t n = read(0, stdin_code.code + stdin_code.len, cap - stdin_code.len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			stdin_code.err = errno;
			return;
		}
		if (n == 0)
			return;
		stdin_code.len += (size_t)n;
	}
}

// sandpiper_exec_stdin returns 1 when the constructor read exec's code
// from standard input, with the code (or the read's errno).
int sandpiper_exec_stdin(const char **code, size_t *len, int *err) {
	if (!stdin_code.read)
		return 0;
	*code = stdin_code.code;
	*len = stdin_code.len;
	*err = stdin_code.err;
	return 1;
}

// plan_path names the plan kept for this configuration (see above) in
// path; it reports whether it could.
static int plan_path(char *path, size_t size, char **envp) {
	// Where the plan is kept: the user's cache directory, as Go's
	// os.UserCacheDir finds it.
	const char *cache = getenv("XDG_CACHE_HOME"), *sub = "/sandpiper";
	if (cache == NULL || cache[0] == '\0') {
		cache = getenv("HOME");
		sub = "/.cache/sandpiper";
		if (cache == NULL || cache[0] == '\0')
			return 0;
	}
	if (cache[0] != '/')
		return 0;

	uint64_t h = 14695981039346656037ULL;
	mix_stat(&h, "/proc/self/exe");
	uid_t ids[] = {geteuid(), getegid()};
	mix(&h, ids, sizeof ids);
	struct __user_cap_header_struct ch = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct cd[2];
	memset(cd, 0, sizeof cd);
	if (syscall(SYS_capget, &ch, cd) == 0) {
		uint32_t eff[] = {cd[0].effective, cd[1].effective};
		mix(&h, eff, sizeof eff);
	}
	mix_stat(&h, ".env.local");
	mix_stat(&h, ".env");
	size_t n = 0;
	for (char **e = envp; *e; e++)
		n += wanted(*e);
	char **vars = calloc(n + 1, sizeof *vars);
	if (vars == NULL)
		return 0;
	n = 0;
	for (char **e = envp; *e; e++)
		if (wanted(*e))
			vars[n++] = *e;
	qsort(vars, n, sizeof *vars, by_name);
	for (size_t i = 0; i < n; i++) {
		mix(&h, vars[i], strlen(vars[i]) + 1);
		// An interpreter named relative to the working directory.
		const char *py = "SANDPIPER_PYTHON=";
		if (strncmp(vars[i], py, strlen(py)) == 0) {
			const char *v = vars[i] + strlen(py);
			char cwd[PATH_MAX];
			if (v[0] != '/' && strchr(v, '/') != NULL && getcwd(cwd, sizeof cwd) != NULL)
				mix(&h, cwd, strlen(cwd) + 1);
		}
	}
	free(vars);

	return (size_t)snprintf(path, size, "%s%s/exec-%016llx.plan", cache, sub, (unsigned long long)h) < size;
}

__attribute__((constructor)) static void sandpiper_exec_prestart(int argc, char **argv, char **envp) {
#ifdef __GLIBC__ // which passes a constructor the arguments and environment
	if (argc < 2 || argv == NULL || envp == NULL || strcmp(argv[1], "exec") != 0)
		return;
	int plain;
	const char *code;
	if (!exec_args(argc - 2, argv + 2, &code, &plain))
		return;
	size_t code_len = code ? strlen(code) : 0;
	if (code_len == 0) {
		read_stdin();
		if (stdin_code.err || stdin_code.len == 0 || memchr(stdin_code.code, 0, stdin_code.len) != NULL)
			return; // nothing to start ahead: the Go side runs it, or says what is wrong
		code = stdin_code.code;
		code_len = stdin_code.len;
	}
	char path[PATH_MAX];
	if (!plan_path(path, sizeof path, envp))
		return;
	sandpiper_prestart_run(path, code, code_len);
	if (plain) {
		int status = sandpiper_prestart_finish();
		if (status >= 0)
			_exit(status); // the program's output written: nothing else to do
	}
#else
	(void)argc, (void)argv, (void)envp;
#endif
}
