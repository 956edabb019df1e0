// Only in the CI job that builds the helpers with AddressSanitizer (go
// test -asan): a report from a sandbox's init would go to init's stderr,
// which is the program's (or is closed once the program has ended), and be
// lost with the run. Init sends it to the host instead, as the reason it
// failed; the test that ran it fails with the report. Other builds compile
// nothing here.

#include "internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define SANDPIPER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANDPIPER_ASAN 1
#endif
#endif

#ifdef SANDPIPER_ASAN
#include <sanitizer/asan_interface.h>

// report runs as ASan reports an error, before it ends the process. Only
// init (PID 1 of its namespace) has the result pipe as result_fd; the
// zygote's stderr is the host's, where ASan writes the report itself.
static void report(const char *text) {
	if (getpid() != 1)
		return;
	size_t n = strlen(text);
	if (n > 4000) // within the host's bound on R_ERR
		n = 4000;
	send_msg(R_ERR, text, n);
	send_msg(R_END, NULL, 0);
}

// Before the zygote's constructor, which never returns in a zygote.
__attribute__((constructor(101))) static void sandpiper_sanitizer_ctor(void) {
	__asan_set_error_report_callback(report);
}
#endif
