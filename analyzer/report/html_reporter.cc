// The HTML report: one page, no network. It embeds the JSON document the JSON
// reporter writes (to_json) and renders it in the browser with the script
// made part of the page at build time (html_page.h), so the page shows the
// same numbers as the JSON by construction.
#include <string>

#include "analyzer/report/html_page.h"
#include "analyzer/report/reporter.h"

namespace vprof::analyzer {
namespace {

using nlohmann::json;

// The document as the text of a <script type="application/json"> element.
// Such an element ends at the first "</script" and treats "<!--" specially,
// whatever the JSON means, so no '<' may appear: outside strings JSON has
// none, and inside them "\u003c" is the same character to JSON.parse. A name
// that is not valid UTF-8 gets U+FFFD where the bad bytes were (a strict dump
// would throw) and the page is written all the same.
std::string script_text(const json &doc) {
  std::string s = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(s.size() + s.size() / 64);
  for (char c : s) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

class HtmlReporter : public Reporter {
 public:
  explicit HtmlReporter(json extra) : extra_(std::move(extra)) {}
  Status write(const Analysis &a, std::ostream &out) const override {
    out << html::kPageBeforeData << script_text(to_json(a, extra_)) << html::kPageAfterData;
    if (!out) return Error{"cannot write the HTML report"};
    return Status::Ok();
  }

 private:
  json extra_;
};

}  // namespace

std::unique_ptr<Reporter> make_html_reporter(json extra) {
  return std::make_unique<HtmlReporter>(std::move(extra));
}

}  // namespace vprof::analyzer
