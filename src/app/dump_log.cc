// Placeholder until the storage work lands the real dump-log.
#include "dump_log.h"

#include <cstdio>

namespace ringlog::app {

int dump_log_main(int, char**) {
  std::fputs("dump-log: not built yet\n", stderr);
  return 2;
}

}  // namespace ringlog::app
