//go:build linux && cgo

// `sandpiper exec` is handed over, before the Go runtime starts, to
// sandpiper-exec, the binary of exec alone (cmd/sandpiper/sandpiper-exec,
// beside this one): this binary's packages (the bot, the agent's
// providers, the terminal UI and its Markdown renderer) take tens of
// milliseconds to initialise, more than the sandbox takes to make, and
// exec uses none of them. This constructor only finds the sibling and
// executes it with exec's arguments and the environment as they are, and
// SANDPIPER_EXEC_HANDOVER naming this binary; sandpiper-exec checks that
// the two are of one build, and hands the run back (with
// SANDPIPER_EXEC_HANDOVER=off) when they are not. Without a sibling (go
// run), or with SANDPIPER_EXEC_HANDOVER set, nothing happens here and
// exec runs in this process: the same, only slower to start.

#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HANDOVER_VAR "SANDPIPER_EXEC_HANDOVER"

__attribute__((constructor)) static void sandpiper_exec_handover(int argc, char **argv, char **envp) {
#ifdef __GLIBC__ // which passes a constructor the arguments and environment
	if (argc < 2 || argv == NULL || envp == NULL || strcmp(argv[1], "exec") != 0 || getenv(HANDOVER_VAR) != NULL)
		return;
	char self[PATH_MAX], lean[PATH_MAX], var[PATH_MAX + sizeof HANDOVER_VAR + 1];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	const char *slash = strrchr(self, '/');
	if (slash == NULL ||
	    (size_t)snprintf(lean, sizeof lean, "%.*s/sandpiper-exec", (int)(slash - self), self) >= sizeof lean ||
	    (size_t)snprintf(var, sizeof var, "%s=%s", HANDOVER_VAR, self) >= sizeof var)
		return;
	size_t nenv = 0;
	while (envp[nenv] != NULL)
		nenv++;
	char **env = malloc((nenv + 2) * sizeof *env);
	if (env == NULL)
		return;
	memcpy(env, envp, nenv * sizeof *env);
	env[nenv] = var;
	env[nenv + 1] = NULL;
	// sandpiper-exec's arguments are exec's: its argv[0] is its path.
	argv[1] = lean;
	execve(lean, argv + 1, env);
	argv[1] = "exec"; // no sibling, or not one to run: exec runs here
	free(env);
#else
	(void)argc, (void)argv, (void)envp;
#endif
}
