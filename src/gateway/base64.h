#pragma once
// Base64 lives in codec (ringlog/codec/base64.h), shared with the CLI; the gateway's code names it
// unqualified.

#include "ringlog/codec/base64.h"

namespace ringlog::gateway {

using codec::base64_decode;
using codec::base64_decode_portable;
using codec::base64_encode;
using codec::base64_encode_append;
using codec::base64_encode_portable;

}  // namespace ringlog::gateway
