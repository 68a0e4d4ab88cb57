// `nfsx bench report RUN_DIR`: turns the JSON files of a bench/compare.sh run into the
// results file: systems, targets (met or missed), every workload's figures side by side with
// each figure's ratio to the peer server, the peer client and the no-NFS limit, plus the
// data of the latency-per-record-size plot.
//
// RUN_DIR holds systems.tsv ("id<TAB>description" per line, in display order), meta.tsv
// ("key<TAB>value"), notes.txt (one note per line) and SYSTEM_ID/CASE.json from `nfsx bench
// --json`. The system ids compared are fixed: nfsx+nfsx (the subject: nfsx server, nfsx
// client), ganesha+nfsx, nfsx+libnfs, ganesha+libnfs, nfsx-mount (path: on `nfsx mount`),
// local (path: on the local filesystem).
#pragma once

#include <string>

namespace nfsx::bench {

struct ReportOptions {
  std::string run_dir;
  std::string out;          // the Markdown file
  std::string plot_prefix;  // writes PREFIX-write.dat and PREFIX-read.dat for gnuplot
  std::string missed;       // lines "CASE<TAB>SYSTEM<TAB>TARGET" of missed targets, to profile
};

int RunReport(const ReportOptions& options);

}  // namespace nfsx::bench
