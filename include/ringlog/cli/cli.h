#pragma once
// The CLI over HTTP (issue 3 "CLI over HTTP"), in the spirit of kcat and Kafka's console tools:
// `ringlog topics create|list|describe|delete|alter`, `ringlog produce TOPIC`, `ringlog consume
// TOPIC`. Each talks to a running broker's REST listener (--bootstrap-server). argv[0] is the
// subcommand name. Returns the process exit code (0 ok, 1 the broker refused, 2 bad usage).

#include <iosfwd>

namespace ringlog::cli {

int topics_main(int argc, char** argv);
int produce_main(int argc, char** argv);
int consume_main(int argc, char** argv);
/// `ringlog groups list|describe|lag|reset|delete`: consumer-group admin over the v3 routes.
int groups_main(int argc, char** argv);
/// `ringlog transactions list|describe|abort`: transaction admin over the v3 routes.
int transactions_main(int argc, char** argv);
/// `ringlog bench`: HTTP load generator (producers and consumers), prints throughput and latency.
int bench_main(int argc, char** argv);
/// `ringlog cluster status`: brokers, the active controller and the metadata quorum.
int cluster_main(int argc, char** argv);
/// `ringlog users list|create|delete`: SCRAM users over the v3 users routes.
int users_main(int argc, char** argv);
/// `ringlog acls list|create|delete`: ACLs over the v3 /acls routes, kafka-acls.sh's options.
int acls_main(int argc, char** argv);
/// `ringlog quotas list|set|remove`: client quotas over the v3 /client-quotas routes,
/// kafka-configs.sh's entity options.
int quotas_main(int argc, char** argv);

}  // namespace ringlog::cli
