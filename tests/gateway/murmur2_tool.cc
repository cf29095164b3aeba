// Test tool: reads one key per line on stdin, prints "murmur2 partition" per line for the
// partition count given as argv[1]. The integration suite compares it with kafka-python.
#include <iostream>
#include <string>

#include "ringlog/broker/partitioner.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: murmur2_tool PARTITION_COUNT < keys\n";
    return 2;
  }
  int partitions = std::stoi(argv[1]);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::span<const std::byte> key(reinterpret_cast<const std::byte*>(line.data()), line.size());
    std::cout << ringlog::broker::murmur2(key) << ' ' << ringlog::broker::partition_for_key(key, partitions) << '\n';
  }
  return 0;
}
