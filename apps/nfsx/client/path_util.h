// Lexical path helpers shared by local paths and paths inside an export. They never
// touch a filesystem: "..", symlinks and mount points are left to whoever resolves.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace nfsx::app::cli {

// The components of `path`, without empty ones and ".".
std::vector<std::string> SplitPath(std::string_view path);

// "/a//b/./c/" -> "/a/b/c"; "a/" -> "a"; "/" stays "/", "" and "." become "".
std::string NormalizePath(std::string_view path);

// "dir" + "x" -> "dir/x"; "" + "x" -> "x"; "/" + "x" -> "/x"; "dir/" + "x" -> "dir/x".
std::string JoinPath(std::string_view dir, std::string_view name);

// The last component ("" for "/" and "").
std::string BaseName(std::string_view path);

// All but the last component: "/a/b" -> "/a", "/a" -> "/", "a" -> "", "/" -> "/".
std::string DirName(std::string_view path);

// What follows `base` in `path` when `path` is `base` or below it, component-wise
// ("/a/b" is not below "/a/bc"); "" when they are equal.
std::optional<std::string> PathBelow(std::string_view base, std::string_view path);

// `path` without its last components when they are `tail`'s ("/a/b/c" less "b/c" is "/a");
// nullopt when `path` does not end with them.
std::optional<std::string> PathWithoutTail(std::string_view path, std::string_view tail);

}  // namespace nfsx::app::cli
