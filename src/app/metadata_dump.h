#pragma once

namespace ringlog::app {

/// `ringlog metadata dump [--log-dirs DIR]` (metadata_dump.cc).
int metadata_main(int argc, char** argv);

}  // namespace ringlog::app
