// The device templates (templates/*.cuh), embedded at build time.
#pragma once

#include <string>
#include <vector>

namespace moejit::codegen {

struct EmbeddedTemplate {
  const char *name; ///< path relative to templates/, as #included
  const char *text;
};

const std::vector<EmbeddedTemplate> &embeddedTemplates();

/// sha256 over every template's name and text: part of every cache key.
const std::string &templatesHash();

} // namespace moejit::codegen
