// The `ringlog` binary: `serve` runs the broker; the other subcommands are clients of a running
// one over HTTP (design.md section 2).

#include <cstring>
#include <iostream>
#include <string>

#include "dump_log.h"
#include "metadata_dump.h"
#include "ringlog/cli/cli.h"
#include "serve.h"

namespace {

constexpr const char* usage = R"(usage: ringlog COMMAND [options]

Commands:
  serve         run the broker (HTTP/REST on 127.0.0.1:8082, Kafka clients on 9092, data in ./ringlog-data)
  topics        create, list, describe, delete or alter topics
  produce       send lines of standard input as records
  consume       print records of a topic (--group G: as a member of consumer group G)
  groups        list, describe, show lag of, reset or delete consumer groups; browse and redrive dead letters
  users         list, create or delete SCRAM users (SASL on the Kafka listener)
  acls          list, create or delete ACLs (authorization; kafka-acls.sh's options)
  quotas        list, set or remove client quotas (byte rates, request share; kafka-configs.sh's options)
  transactions  list, describe or abort transactions (transactional ids)
  dump-log      print a segment file's batches and records
  metadata      dump the metadata log (__cluster_metadata-0) of a log directory as text
  cluster       status (brokers, the active controller, the metadata quorum); elect-leaders (preferred
                leaders); reassign / reassignments (move partitions onto other brokers); rebalance
                (spread replicas, leaders and bytes evenly); decommission (remove a broker)
  bench         load generator over HTTP, WebSocket or the Kafka protocol: throughput and produce-to-consume
                latency

Run `ringlog COMMAND --help` for a command's options.
)";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << usage;
    return 2;
  }
  std::string command = argv[1];
  // Each subcommand sees argv[0] = its own name.
  int sub_argc = argc - 1;
  char** sub_argv = argv + 1;
  if (command == "serve") return ringlog::app::serve_main(sub_argc, sub_argv);
  if (command == "topics") return ringlog::cli::topics_main(sub_argc, sub_argv);
  if (command == "produce") return ringlog::cli::produce_main(sub_argc, sub_argv);
  if (command == "consume") return ringlog::cli::consume_main(sub_argc, sub_argv);
  if (command == "groups") return ringlog::cli::groups_main(sub_argc, sub_argv);
  if (command == "users") return ringlog::cli::users_main(sub_argc, sub_argv);
  if (command == "acls") return ringlog::cli::acls_main(sub_argc, sub_argv);
  if (command == "quotas") return ringlog::cli::quotas_main(sub_argc, sub_argv);
  if (command == "transactions") return ringlog::cli::transactions_main(sub_argc, sub_argv);
  if (command == "dump-log") return ringlog::app::dump_log_main(sub_argc, sub_argv);
  if (command == "bench") return ringlog::cli::bench_main(sub_argc, sub_argv);
  if (command == "metadata") return ringlog::app::metadata_main(sub_argc, sub_argv);
  if (command == "cluster") return ringlog::cli::cluster_main(sub_argc, sub_argv);
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << usage;
    return 0;
  }
  if (command == "--version") {
    std::cout << "ringlog 0.1.0\n";
    return 0;
  }
  std::cerr << "unknown command \"" << command << "\"\n" << usage;
  return 2;
}
