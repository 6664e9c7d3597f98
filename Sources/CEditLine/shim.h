// libedit's readline interface (Debian: libedit-dev), which wants <stdio.h> first.
#include <stdio.h>
#include <editline/readline.h>

// readline's settings are C globals, which Swift 6 will not touch from concurrent code; these
// set and read them (modelctl's shell reads lines on one thread).

/// Names the program (for ~/.editrc) and sets the function Tab completion asks for matches.
static inline void modelctl_rl_setup(rl_compentry_func_t *completer) {
    rl_readline_name = "modelctl";
    rl_completion_entry_function = completer;
}

/// The line being edited (what Tab completes within).
static inline const char *modelctl_rl_line(void) {
    return rl_line_buffer;
}
