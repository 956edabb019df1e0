// Package vercel runs each sandbox request in a fresh Vercel Sandbox, a
// Firecracker microVM created for that run alone through the Sandbox REST
// API (v1, the API of @vercel/sandbox 1.x) and stopped after it, whatever
// happened.
//
// A run creates a python3.13 sandbox with a lifetime just past the run's
// timeout and network access denied, writes the input files, runs
// `python3 -c CODE` in its working directory while streaming the output,
// ends the program itself when the timeout passes, reads back the files the
// program created or changed, and stops the sandbox, retrying the stop a
// bounded number of times. API calls are retried on network errors, 429
// and 5xx with back-off, honouring Retry-After. At most
// [Config.Concurrency] sandboxes are alive at once; further runs wait.
//
// A run that keeps state (sandbox.Request.KeepState) writes its state
// directory, /vercel/sandbox/.sandpiper-state (the most bytes to save,
// and the state), with the input files in the same upload, runs the code
// through sandbox.StateRunner instead of plain -c, and reads the runner's
// report and the saved state back after the collector, each within its
// bound (the state is not read back after a timeout: it would be
// dropped). The state directory is beside the working directory, so the
// collector never lists it; it is bounded only when read back.
//
// Inside the VM the working directory is [WorkDir] (/vercel/sandbox/data);
// [sandbox.WorkDir] (/mnt/data) is made a symbolic link to it where the VM
// allows, so programs may use either path.
//
// # Latency
//
// Measured only against the test fake (go test -bench Run ./sandbox/vercel,
// 2 shared cores): ~245 ms per run with no network delay, ~355 ms with
// 30 ms added to every API call. The fake runs Python on the host, so these
// numbers are the client's own cost plus three Python starts; they do not
// include the real service's VM creation time or its network round trips,
// which could not be measured here (no internet). A run makes these API
// calls: check credentials (once, at start-up), then per run: create, run
// command + stream logs, run the file collector + its logs, one read per
// output file, stop. Expect the real figure to be dominated by sandbox
// creation; measure it with sandpiper exec -v -c 'print(6*7)' (it prints
// the run's duration).
package vercel
