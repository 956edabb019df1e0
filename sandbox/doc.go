// Package sandbox describes one run of untrusted Python: the request (code,
// input files, limits) and the result (output, exit status, which limit ended
// the run, files produced). Backends such as [github.com/sandpiper-bot/sandpiper/sandbox/local]
// run a request in a sandbox created for that run alone and destroyed after.
//
// A user program that fails (a traceback, a non-zero exit, a timeout, the
// memory limit) is reported in the [Result]; a Go error from a backend means
// the sandbox machinery itself failed.
//
// # State between runs
//
// A run may keep a conversation's Python state ([Request.KeepState]): the
// sandbox stays fresh and is destroyed after the run, and the state
// travels as data. Inside the sandbox, the runner ([StateRunner], state.py)
// restores the names an earlier run saved into the fresh __main__ before
// the code and saves the names the code leaves after it, whether it ended
// well or with an exception: pickle protocol 5, one name at a time;
// functions, lambdas and classes defined in __main__ by value (code
// objects through marshal), modules by name, a value that is another
// name's value as a reference to it. What cannot be saved (open files,
// sockets, generators, locks, a value that would take the state past
// Limits.StateSize) is dropped; a name that cannot be restored (its
// module is gone) is reported, and the others are restored all the same.
// The run's [StateResult] lists what was restored, kept and dropped, with
// why. A run stopped by its time or memory limit saves nothing (the
// state before it stands); a state the runner cannot read is reported
// (Unreadable) and the run starts without names.
//
// A state is data the conversation's own code wrote (and could craft):
// restoring it builds data and runs nothing it names. Pickle may use only
// data constructors: builtins' data types and exceptions, copyreg, the
// classes of modules that do not run programs, open files or load code
// (not os, sys, subprocess, ctypes, io, socket, importlib, pickle ...),
// and the reconstructor functions of numpy, pandas and a few more; a name
// bound at the top level to any module's function or class (from math
// import sqrt) is restored as the reference it is. The conversation's
// functions and classes are made with their code, but a function's code
// is a stub that refuses to run until the restore is over, so nothing a
// value holds runs the conversation's code meanwhile (a class's
// __setstate__, __hash__ or __init__: such a value is not restored); the
// modules and classes pickle is handed are watched, and a value whose
// restore changed one (builtins.sum) is put back and not restored. Each
// refusal names the value and why (NotRestored). The restore runs in a
// child of the program's process, with half the run's time of CPU (and
// nine tenths of it by the clock) and the memory the run has left: one that would fill memory loses that value
// alone (MemoryError); one that hangs or dies is reported (RestoreFailed)
// and the code runs without names in the time left, the front end setting
// that state aside, as it does an unreadable one.
//
// A run needs about twice its state's size in memory while restoring or
// saving it (the file and the values), besides the interpreter: a
// state's limit is at most [StateRoom] of the run's memory (the default,
// 192 MiB of 512 MiB). Backends carry the state in and out as bytes, each
// way within its bound, and never unpickle it; the state a run starts
// from may be given as a stream (Request.StateFrom), which the local
// backend copies to the sandbox as it reads it, so that the host holds at
// most the state the run saves. What keeps the state between runs, and
// for whom, is the front end's (package agent's Workspace).
//
// # How a run ended
//
// A run's [Verdict] ([Result.Verdict], or [VerdictOf] a result and an
// error) says how it ended, once for every front end: ok, exited
// non-zero, timed out, killed at the memory or the CPU-time limit, stopped
// by its caller, its sandbox gone, or not run (the machinery failed); with
// a short phrase naming the limit's value ("timed out after 30s"), and a
// note for a limit hit that did not end it. The Slack cards, the
// terminal's cards, the plain chat, `sandpiper exec` and the model's tool
// result show those words and choose only how (an emoji, a colour).
//
// # Backends
//
// A backend runs a [Request] and returns a [Result], and reports itself
// with an Info method ([Info]): its name (one of [Backends]), the limits
// a run gets, the limits it does not enforce and why (the CPU quota
// without a cgroup cpu controller, on a VM or a pod that sets its own),
// and whether it keeps state. Front ends ask for it rather than keep a
// copy of the limits. Package sandboxtest is the backends' conformance
// suite: the same programs, output, exit codes, limits named, files and
// state, run by each backend's tests; a new backend passes it or is not
// done. cmd/sandpiper's config package holds the registry of backends
// (their settings, checks and construction).
//
// # Choosing a backend
//
// Three backends implement the same request and result; SANDPIPER_SANDBOX
// picks one.
//
//   - Where code runs: local (the default): fresh Linux namespaces on the
//     bot's host. vercel: a fresh Vercel Sandbox (Firecracker microVM) per
//     run. kubernetes: a fresh pod per run on a Kubernetes cluster, claimed
//     from an agent-sandbox warm pool.
//   - Isolation: local: namespaces, seccomp, Landlock, rlimits, cgroups
//     where available. vercel: a whole VM; network denied (deny-all);
//     rlimits inside. kubernetes: the pod's RuntimeClass (gVisor in its
//     deploy/), a NetworkPolicy that denies the network, rlimits inside.
//   - Needs: local: Linux that lets the bot create user namespaces. vercel:
//     a Vercel team and project with Sandbox, and credentials. kubernetes:
//     a cluster with agent-sandbox and a warm pool, the bot running in it
//     (it dials pod IPs).
//   - Python: local: the host's SANDPIPER_PYTHON and its packages. vercel:
//     Vercel's python3.13 image (standard library only). kubernetes: the
//     sandbox template's image (the bot's image: Python 3.13 with the
//     pinned data stack).
//   - Runs at once: SANDPIPER_SANDBOX_CONCURRENCY; default the number of
//     CPUs (local), 10 sandboxes alive (vercel), 10 claims held per
//     replica (kubernetes).
//   - Cost: local: the host's CPU. vercel: Vercel Sandbox usage (billed per
//     vCPU-time). kubernetes: the cluster's nodes, and the warm pool's
//     idle pods.
//   - Latency per run (measured here): local: ~21–25 ms
//     (print(5 + 5 - 84**3), p50); a data run importing numpy, pandas and
//     matplotlib ~45 ms warm, ~1.2 s cold (see package local's "Measured").
//     vercel: see package vercel's "Latency". kubernetes: ~210–245 ms
//     against a test API server with a fake pod, plus a real cluster's
//     controller and pod start (see package kubernetes's "Measured").
//
// Choose local when the bot runs on a Linux host or container that can
// create namespaces: it is the fastest and costs nothing. Choose vercel
// when it cannot (serverless platforms, locked-down containers that forbid
// namespaces), when you want a VM boundary around model-written code, or
// when you need more concurrent runs than one host gives. Choose
// kubernetes when the bot already runs on a cluster: runs spread over its
// nodes, and each replica of the bot claims its own sandboxes.
package sandbox
