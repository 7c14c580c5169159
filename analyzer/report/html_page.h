// The HTML report's page, made at build time by cmake/vprofEmbedHtml.cmake
// from analyzer/report/html/{template.html,report.css,report.js}: the
// reporter writes kPageBeforeData, the JSON document (every '<' escaped, so
// nothing in it can end the <script> element it sits in), then kPageAfterData.
#ifndef VPROF_ANALYZER_REPORT_HTML_PAGE_H
#define VPROF_ANALYZER_REPORT_HTML_PAGE_H

namespace vprof::analyzer::html {

extern const char kPageBeforeData[];
extern const char kPageAfterData[];

}  // namespace vprof::analyzer::html

#endif  // VPROF_ANALYZER_REPORT_HTML_PAGE_H
