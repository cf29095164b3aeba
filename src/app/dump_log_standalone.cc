// Temporary standalone entry point for `dump-log` until src/app/main.cc dispatches subcommands:
// `ringlog-dump-log FILE... [--records]` behaves as `ringlog dump-log FILE... [--records]`.

#include "dump_log.h"

int main(int argc, char** argv) { return ringlog::app::dump_log_main(argc, argv); }
