// crashsim/bounded_input.h — reading a whole input of bounded size: the one way a command reads
// a file or stream it was handed (scenarios, ledgers, scripts, reports, manifests).
//
// Bad input never hangs or grows memory without bound: a FIFO, a device (/dev/zero), a
// directory or a file past the limit is refused before a byte of it is read, with a one-line
// Error naming the input.
#pragma once

#include <cstddef>
#include <filesystem>
#include <istream>
#include <string>

namespace crashsim {

// Reads `file` whole. It is opened without blocking (O_NONBLOCK: the open of a FIFO without a
// writer returns at once) and checked on the opened descriptor before any read: not a regular
// file (a FIFO, a device, a directory), missing or unreadable → Error(code::input_unreadable);
// larger than maxBytes → Error(code::input_too_large). A file that grows while it is read is
// refused the same way once it passes maxBytes.
std::string readBoundedFile(const std::filesystem::path& file, size_t maxBytes);

// Reads `in` (standard input) to its end: Error(code::input_too_large) once it passes maxBytes,
// Error(code::input_unreadable) on a read error. `name` names it in messages.
std::string readBoundedStream(std::istream& in, size_t maxBytes, const std::string& name);

}  // namespace crashsim
