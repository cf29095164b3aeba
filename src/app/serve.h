#pragma once

namespace ringlog::app {

/// `ringlog serve [--config FILE] [--set KEY=VALUE]... [--io-backend=uring|posix|auto]`.
/// argv[0] is "serve". Returns the process exit code (0 after a graceful stop, 2 on bad config).
int serve_main(int argc, char** argv);

}  // namespace ringlog::app
