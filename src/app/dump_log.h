#pragma once
// `ringlog dump-log`: prints segment files like Kafka's kafka-dump-log.sh (written by the storage
// work; this declaration is the dispatcher's hook).

namespace ringlog::app {

/// argv[0] is "dump-log". Returns the process exit code.
int dump_log_main(int argc, char** argv);

}  // namespace ringlog::app
