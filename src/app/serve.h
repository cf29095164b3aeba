#pragma once

namespace ringlog::app {

/// The exit code of a node halted because a write, fdatasync, segment roll or checkpoint failed
/// in log.dirs (storage/log_dir_failure.h): sysexits.h's EX_IOERR. Kafka halts the broker when
/// its last log directory goes offline (ReplicaManager, "Halting broker because dir ... is
/// offline"); a supervisor should not restart the node until the disk is fixed or space freed.
inline constexpr int exit_code_log_dir_failure = 74;

/// `ringlog serve [--config FILE] [--set KEY=VALUE]... [--io-backend=uring|posix|auto]`.
/// argv[0] is "serve". Returns the process exit code: 0 after a graceful stop, 1 when it cannot
/// listen or open the broker, 2 on bad config, 130 / 143 for SIGINT / SIGTERM during start-up;
/// a failed write in log.dirs ends the process at once with exit_code_log_dir_failure.
int serve_main(int argc, char** argv);

}  // namespace ringlog::app
