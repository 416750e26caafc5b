#pragma once
// gzip (RFC 1952) of a whole buffer, through zlib. Perfetto's UI and trace_processor open a
// gzipped JSON trace directly. The header carries no file name and a zero time, so the same
// input gives the same bytes.
#include <string>

namespace podsim {

std::string gzip_compress(const std::string& data);
// The inverse, for tests and tools; throws std::runtime_error on corrupt input.
std::string gzip_decompress(const std::string& data);

}  // namespace podsim
