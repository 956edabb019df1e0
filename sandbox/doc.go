// Package sandbox describes one run of untrusted Python: the request (code,
// input files, limits) and the result (output, exit status, which limit ended
// the run, files produced). Backends such as [github.com/sandpiper-bot/sandpiper/sandbox/local]
// run a request in a sandbox created for that run alone and destroyed after.
//
// A user program that fails (a traceback, a non-zero exit, a timeout, the
// memory limit) is reported in the [Result]; a Go error from a backend means
// the sandbox machinery itself failed.
//
// # Choosing a backend
//
// Two backends implement the same request and result; SANDPIPER_SANDBOX
// picks one.
//
//   - Where code runs: local (the default): fresh Linux namespaces on the
//     bot's host. vercel: a fresh Vercel Sandbox (Firecracker microVM) per
//     run.
//   - Isolation: local: namespaces, seccomp, Landlock, rlimits, cgroups
//     where available. vercel: a whole VM; network denied (deny-all);
//     rlimits inside.
//   - Needs: local: Linux that lets the bot create user namespaces. vercel:
//     a Vercel team and project with Sandbox, and credentials.
//   - Python: local: the host's SANDPIPER_PYTHON and its packages. vercel:
//     Vercel's python3.13 image (standard library only).
//   - Runs at once: SANDPIPER_SANDBOX_CONCURRENCY; default the number of
//     CPUs (local), 10 sandboxes alive (vercel).
//   - Cost: local: the host's CPU. vercel: Vercel Sandbox usage (billed per
//     vCPU-time).
//   - Latency per run (measured here): local: ~21–25 ms
//     (print(5 + 5 - 84**3), p50); a data run importing numpy, pandas and
//     matplotlib ~45 ms warm, ~1.2 s cold (see package local's "Measured").
//     vercel: see package vercel's "Latency".
//
// Choose local when the bot runs on a Linux host or container that can
// create namespaces: it is the fastest and costs nothing. Choose vercel
// when it cannot (serverless platforms, locked-down containers that forbid
// namespaces), when you want a VM boundary around model-written code, or
// when you need more concurrent runs than one host gives.
package sandbox
