#pragma once
// `ringlog dump-log`: prints the contents of segment files in the spirit of Kafka's
// kafka-dump-log.sh (kafka.tools.DumpLogSegments), so its output can be compared with Kafka's.

namespace ringlog::app {

/// argv[0] is "dump-log"; the rest are FILE... and options (see --help). Writes to stdout, errors
/// to stderr. Returns 0 when every file was read to its end, 1 when a file could not be read or
/// holds a torn or corrupt batch / entry (the dump stops there with a line saying where and why),
/// 2 on a usage error.
int dump_log_main(int argc, char** argv);

}  // namespace ringlog::app
