#include "sim/report/gzip.hpp"

#include <algorithm>
#include <stdexcept>
#include <zlib.h>

namespace podsim {

namespace {

// windowBits 15 + 16: zlib writes (and reads) a gzip wrapper instead of a zlib one (zlib.h).
constexpr int kGzipWindowBits = 15 + 16;
constexpr size_t kChunkBytes = 1 << 16;

// Runs a zlib stream over `data` in chunks: `step(z, input_left)` deflates or inflates what
// the stream holds (feeding at most 1 GiB at a time: avail_in is 32-bit) and returns zlib's
// status, or throws after ending the stream; the output gathers until Z_STREAM_END.
template <class Step>
std::string run_stream(z_stream& z, const std::string& data, Step step) {
  std::string out;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  size_t left = data.size();
  int status = Z_OK;
  char buffer[kChunkBytes];
  while (status != Z_STREAM_END) {
    if (z.avail_in == 0 && left > 0) {
      const size_t take = std::min<size_t>(left, size_t(1) << 30);
      z.avail_in = static_cast<uInt>(take);
      left -= take;
    }
    z.next_out = reinterpret_cast<Bytef*>(buffer);
    z.avail_out = kChunkBytes;
    status = step(z, left);
    out.append(buffer, kChunkBytes - z.avail_out);
  }
  return out;
}

}  // namespace

std::string gzip_compress(const std::string& data) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: deflateInit2 failed");
  std::string out = run_stream(z, data, [](z_stream& s, size_t left) {
    const int status = deflate(&s, left == 0 ? Z_FINISH : Z_NO_FLUSH);
    if (status == Z_STREAM_ERROR) {
      deflateEnd(&s);
      throw std::runtime_error("gzip: deflate failed");
    }
    return status;
  });
  deflateEnd(&z);
  return out;
}

std::string gzip_decompress(const std::string& data) {
  z_stream z{};
  if (inflateInit2(&z, kGzipWindowBits) != Z_OK) throw std::runtime_error("gzip: inflateInit2 failed");
  std::string out = run_stream(z, data, [](z_stream& s, size_t left) {
    const int status = inflate(&s, Z_NO_FLUSH);
    if (status == Z_BUF_ERROR && s.avail_in == 0 && left == 0) {
      inflateEnd(&s);
      throw std::runtime_error("gzip: truncated input");
    }
    if (status != Z_OK && status != Z_STREAM_END) {
      inflateEnd(&s);
      throw std::runtime_error("gzip: corrupt input");
    }
    return status;
  });
  inflateEnd(&z);
  return out;
}

}  // namespace podsim
